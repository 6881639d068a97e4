// The gateway's lockout rules at run time (lockout-rule.js validates them): each is sluice's own
// lockout engine (lockout.js) keyed by a field of the request body and the client's IP, charged on
// the upstream's status.
//
// Order within a request: the route's rate-limit rules first (decide.js: every attempt counts against
// them), then the lockout rules, which read the account from the body — read whole (request-body.js)
// before anything is forwarded, the same bytes the upstream then gets — and refuse without calling
// the upstream an attempt that is locked (429), names no account (400), names it ambiguously (400:
// twice in any case, or in a way another parser reads differently; ../src/http/body-field.js), with
// a control character (400), or in a body type the rule does not read (415). Once the upstream has
// answered, each attempt is settled before the response leaves, so the next attempt, on whatever
// isolate, sees it.

import { accountSpelling } from "../src/http/account.js";
import { bodyField } from "../src/http/body-field.js";
import { SluiceConfigError } from "../src/engine/errors.js";
import { ip } from "../src/http/keys.js";
import { createLockoutEngine } from "../src/features/lockout/lockout.js";
import { GatewayError, errorResponse } from "./errors.js";
import { LOCKED_CODE } from "./lockout-rule.js";
import { ConfigError, fieldPath } from "./validate.js";

/** @import { KeyFunction } from "../src/http/keys.js" */
/** @import { LockoutAttempt } from "../src/features/lockout/lockout.js" */
/** @import { GatewayConfig, GatewayRoute } from "./config.js" */
/** @import { RuleVerdict } from "./decide.js" */
/** @import { GatewayLockoutRule } from "./lockout-rule.js" */

const MISSING_ACCOUNT = Object.freeze({ status: 400, code: "sluice_missing_account", error: "the request names no account" });
const STORE_SETTINGS = ["bindings", "shards", "timeoutMs", "breaker", "preFilter", "logIntervalMs"];

/** Why an attempt names no usable account, and the response that refuses it. */
const REFUSED_ACCOUNT = Object.freeze({
  missing: MISSING_ACCOUNT,
  malformed: MISSING_ACCOUNT,
  unsupported_type: GatewayError.UNSUPPORTED_BODY_TYPE,
  ambiguous: GatewayError.AMBIGUOUS_ACCOUNT,
  invalid: GatewayError.INVALID_ACCOUNT,
});

// The engine's key function: the account the gateway read from the body (check() passes it last).
/** @param {unknown} _request @param {unknown} _env @param {unknown} _ctx @param {string} account @returns {string} */
function accountArgument(_request, _env, _ctx, account) {
  return account;
}

/**
 * The account `rule` reads from `body` (the request's bytes, undefined for none) of `contentType`:
 * { account } or { problem } (a key of REFUSED_ACCOUNT). Default-ignorable code points are removed
 * even where the rule's `normalize` is off (account.js says why).
 * @param {GatewayLockoutRule} rule
 * @param {Uint8Array | undefined} body
 * @param {string | null} contentType
 * @returns {{ account: string, problem?: undefined } | { problem: keyof typeof REFUSED_ACCOUNT, account?: undefined }}
 */
function accountOf(rule, body, contentType) {
  if (body === undefined || body.byteLength > rule.maxBodyBytes) return { problem: "missing" };
  const field = bodyField(body, contentType, rule.field);
  if (field.problem !== undefined) return { problem: field.problem };
  const account = accountSpelling(field.value);
  return account === null ? { problem: "invalid" } : { account };
}

// The host's options for a validated lockout rule: its own fields, the durable store's settings of
// the configuration (`stores.durable`; failMode and fallback are the rule's: lockout's defaults differ).
/** @param {GatewayLockoutRule} rule @param {Partial<GatewayConfig["stores"]>} stores @param {(() => number) | undefined} clock @param {KeyFunction} clientIp @returns {Record<string, unknown>} */
function hostOptions(rule, stores, clock, clientIp) {
  /** @type {Record<string, unknown>} */
  const options = { ...rule.host, name: rule.name, key: accountArgument, code: LOCKED_CODE, clock, store: rule.store };
  if (rule.client === false) options.client = false;
  else options.client = clientIp;
  if (!rule.normalize) options.normalize = false;
  if (rule.store === "durable") {
    const durable = /** @type {Record<string, unknown> | undefined} */ (stores.durable);
    for (const field of STORE_SETTINGS) if (durable?.[field] !== undefined) options[field] = durable[field];
  }
  return options;
}

/**
 * createRouteLockouts builds the lockout engines of every route's lockout rules ({ stores, clock,
 * clientIp }: the configuration's store settings, the gateway's clock and its `ip` key function) and returns lockoutsFor(route): null
 * for a route without any, else { check, settle } below. Throws ConfigError naming the rule's field
 * for what the host refuses.
 * @param {readonly GatewayRoute[]} routes
 * @param {{ stores?: Partial<GatewayConfig["stores"]>, clock?: () => number, clientIp?: KeyFunction }} settings
 * @returns {(route: GatewayRoute) => RouteLockoutGuard | null}
 */
export function createRouteLockouts(routes, { stores = {}, clock, clientIp = ip() }) {
  /** @type {Array<RouteLockoutGuard | null>} */
  const byRoute = routes.map((/** @type {GatewayRoute} */ route) => {
    /** @type {Array<{ index: number, rule: any, engine: ReturnType<typeof createLockoutEngine> }>} */
    const entries = [];
    // GatewayRoute types a route's rate-limit rules only; its lockout rules are among them (entries' `rule: any`).
    route.rules.forEach((/** @type {any} */ rule, /** @type {number} */ index) => {
      if (rule.kind !== "lockout" || rule.mode === "bypass") return;
      try {
        entries.push({ index, rule, engine: createLockoutEngine(hostOptions(rule, stores, clock, clientIp)) });
      } catch (error) {
        if (error instanceof SluiceConfigError) throw new ConfigError(fieldPath(fieldPath(fieldPath(fieldPath("routes", route.index), "rules"), index), error.field), error.problem);
        throw error;
      }
    });
    return entries.length === 0 ? null : createGuard(entries);
  });
  return (/** @type {GatewayRoute} */ route) => byRoute[route.index];
}

/**
 * The lockout rules of one route at run time.
 * @typedef {{
 *   check(request: Request, body: Uint8Array | undefined, env: any, ctx: any, verdicts: any[] | undefined): Promise<{ response: Response | null, attempts: any[] }>,
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
   * check judges `request`, whose body is `body` (read whole; undefined for none), under every
   * lockout rule of the route and records each rule's verdict in `verdicts` (decide.js's, one per rule
   * of the route). Resolves to { response } when an enforced rule refuses the attempt, else
   * { attempts } for settle().
   * @param {Request} request
   * @param {Uint8Array | undefined} body
   * @param {any} env
   * @param {any} ctx
   * @param {RuleVerdict[] | undefined} verdicts
   */
  async function check(request, body, env, ctx, verdicts) {
    const attempts = [];
    const contentType = request.headers.get("content-type");
    for (const { index, rule, engine } of entries) {
      const read = accountOf(rule, body, contentType);
      const attempt =
        read.problem === undefined
          ? await engine.check([request, env, ctx, read.account], env, ctx)
          : { allowed: false, reason: read.problem, store: null, account: null };
      const verdict = verdicts?.[index];
      if (verdict !== undefined) {
        verdict.mode = rule.mode;
        verdict.event = attempt.allowed ? "admitted" : rule.mode === "enforce" ? "denied" : "would_have_denied";
        verdict.store = /** @type {RuleVerdict["store"]} */ (attempt.store);
        verdict.fallback = attempt.store !== null && attempt.store !== rule.store;
        // The account, as the dashboard lists locked ones (redacted there unless showKeys).
        if (typeof attempt.account === "string") verdict.key = `account:${attempt.account}`;
      }
      if (!attempt.allowed && rule.mode === "enforce") {
        const refused = attempt.reason === "missing_account" ? MISSING_ACCOUNT : REFUSED_ACCOUNT[/** @type {keyof typeof REFUSED_ACCOUNT} */ (attempt.reason)];
        return { response: refused === undefined ? engine.refusedResponse(/** @type {any} */ (attempt)) : errorResponse(refused), attempts };
      }
      attempts.push({ engine, attempt });
    }
    return { response: null, attempts };
  }

  /** settle counts each attempt from the upstream's status; null (no answer) counts as neither. @param {Array<{ engine: ReturnType<typeof createLockoutEngine>, attempt: LockoutAttempt }>} attempts @param {number | null} upstreamStatus */
  async function settle(attempts, upstreamStatus) {
    if (upstreamStatus === null) return;
    await Promise.all(attempts.map(({ engine, attempt }) => (attempt.allowed ? engine.settle(attempt, upstreamStatus) : null)));
  }

  /** unchecked records that a rate limit refused the request before any lockout rule was asked. @param {RuleVerdict[] | undefined} verdicts */
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
