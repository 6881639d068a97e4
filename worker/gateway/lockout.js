// The gateway's lockout rules at run time (lockout-rule.js validates them): each is sluice's own
// lockout engine (lockout.js) keyed by a field of the JSON request body and the client's IP, charged
// on the upstream's status.
//
// Order within a request: the route's rate-limit rules first (decide.js: every attempt counts against
// them), then the lockout rules, which read the account from a bounded copy of the body — read to its
// end before anything is forwarded, so the upstream still gets the body intact and nothing reads it
// after the response — and refuse a locked attempt (429) or one naming no account (400) without
// calling the upstream. Once the upstream has answered, each attempt is settled before the response
// leaves, so the next attempt, on whatever isolate, sees it.

import { jsonField } from "../src/http/account.js";
import { SluiceConfigError } from "../src/engine/errors.js";
import { ip } from "../src/http/keys.js";
import { createLockoutEngine } from "../src/features/lockout/lockout.js";
import { LOCKED_CODE } from "./lockout-rule.js";
import { ConfigError, fieldPath } from "./validate.js";

const MISSING_ACCOUNT = Object.freeze({ status: 400, code: "sluice_missing_account", error: "the request names no account" });
const STORE_SETTINGS = ["bindings", "shards", "timeoutMs", "breaker", "preFilter", "logIntervalMs"];

function missingAccountResponse() {
  return Response.json({ error: MISSING_ACCOUNT.error, code: MISSING_ACCOUNT.code }, { status: MISSING_ACCOUNT.status, headers: { "cache-control": "no-store" } });
}

// The host's options for a validated lockout rule: its own fields, the durable store's settings of
// the configuration (`stores.durable`; failMode and fallback are the rule's: lockout's defaults differ).
function hostOptions(rule, stores, clock) {
  const options = { ...rule.host, name: rule.name, key: jsonField(rule.field, { maxBytes: rule.maxBodyBytes }), code: LOCKED_CODE, clock, store: rule.store };
  if (rule.client === false) options.client = false;
  else options.client = ip();
  if (!rule.normalize) options.normalize = false;
  if (rule.store === "durable") {
    for (const field of STORE_SETTINGS) if (stores.durable?.[field] !== undefined) options[field] = stores.durable[field];
  }
  return options;
}

/**
 * createRouteLockouts builds the lockout engines of every route's lockout rules ({ stores, clock }:
 * the configuration's store settings and the gateway's clock) and returns lockoutsFor(route): null
 * for a route without any, else { check, settle } below. Throws ConfigError naming the rule's field
 * for what the host refuses.
 */
export function createRouteLockouts(routes, { stores = {}, clock }) {
  /** @type {Array<RouteLockoutGuard | null>} */
  const byRoute = routes.map((route) => {
    /** @type {Array<{ index: number, rule: any, engine: ReturnType<typeof createLockoutEngine> }>} */
    const entries = [];
    route.rules.forEach((rule, index) => {
      if (rule.kind !== "lockout" || rule.mode === "bypass") return;
      try {
        entries.push({ index, rule, engine: createLockoutEngine(hostOptions(rule, stores, clock)) });
      } catch (error) {
        if (error instanceof SluiceConfigError) throw new ConfigError(fieldPath(fieldPath(fieldPath(fieldPath("routes", route.index), "rules"), index), error.field), error.problem);
        throw error;
      }
    });
    return entries.length === 0 ? null : createGuard(entries);
  });
  return (route) => byRoute[route.index];
}

/**
 * The lockout rules of one route at run time.
 * @typedef {{
 *   check(request: Request, env: any, ctx: any, verdicts: any[] | undefined): Promise<{ response: Response | null, attempts: any[] }>,
 *   settle(attempts: any[], upstreamStatus: number | null): Promise<void>,
 *   unchecked(verdicts: any[] | undefined): void,
 * }} RouteLockoutGuard
 */

/**
 * @param {Array<{ index: number, rule: any, engine: ReturnType<typeof createLockoutEngine> }>} entries
 * @returns {RouteLockoutGuard}
 */
function createGuard(entries) {
  /**
   * check judges `request` under every lockout rule of the route and records each rule's verdict in
   * `verdicts` (decide.js's, one per rule of the route). Resolves to { response } when an enforced
   * rule refuses the attempt, else { attempts } for settle().
   */
  async function check(request, env, ctx, verdicts) {
    const attempts = [];
    for (const { index, rule, engine } of entries) {
      const attempt = await engine.check([request, env, ctx], env, ctx);
      const verdict = verdicts?.[index];
      if (verdict !== undefined) {
        verdict.mode = rule.mode;
        verdict.event = attempt.allowed ? "admitted" : rule.mode === "enforce" ? "denied" : "would_have_denied";
        verdict.store = attempt.store;
        verdict.fallback = attempt.store !== null && attempt.store !== rule.store;
        // The account, as the dashboard lists locked ones (redacted there unless showKeys).
        if (typeof attempt.account === "string") verdict.key = `account:${attempt.account}`;
      }
      if (!attempt.allowed && rule.mode === "enforce") {
        return { response: attempt.reason === "missing_account" ? missingAccountResponse() : engine.refusedResponse(attempt), attempts };
      }
      attempts.push({ engine, attempt });
    }
    return { response: null, attempts };
  }

  /** settle counts each attempt from the upstream's status; null (no answer) counts as neither. */
  async function settle(attempts, upstreamStatus) {
    if (upstreamStatus === null) return;
    await Promise.all(attempts.map(({ engine, attempt }) => (attempt.allowed ? engine.settle(attempt, upstreamStatus) : null)));
  }

  /** unchecked records that a rate limit refused the request before any lockout rule was asked. */
  function unchecked(verdicts) {
    for (const { index, rule } of entries) {
      const verdict = verdicts?.[index];
      if (verdict === undefined) continue;
      verdict.mode = rule.mode;
      verdict.event = "unchecked";
    }
  }

  return { check, settle, unchecked };
}
