// The gateway: a Worker fetch handler that forwards only configured routes and methods to their
// upstreams, after the route's rate-limit rules (in their modes) admit the request.
//
// Order of a request: admin path -> canonical path (else 400) -> route (else 404) -> method (else 405)
// -> declared body size (else 413) -> upstream secret and binding, and the rules' store bindings,
// present (else 500; store-bindings.js) -> rules (429 when an enforced rule denies) -> body read
// whole (413 when over the route's maxBodyBytes) -> upstream (502/504 on failure, else passthrough). Nothing before the rules charges a limit, and
// nothing refused reaches the upstream. The route is chosen on the path's canonical form
// (../src/http/paths.js), and that form is what the upstream is sent.
//
// THE LIMITER SEAM. `limiterFactory(rules, { route })` is called with some rules of one route, all of
// one store (the validated rule objects of rule-config.js, in route order), and returns a limiter whose
// `limit(request, env, ctx)` resolves to sluice's decision (limiter.d.ts):
//   { allowed, limit, remaining, resetMs, retryAfterMs, decidingCheck, checks, keys, store, fallback? }
// checking every given rule for the request in one all-or-nothing call, where `checks[i]` is rule i's
// Decision ({ allowed, limit, remaining, resetMs, retryAfterMs }, or null when no store consulted it),
// `keys[i]` the key text rule i was checked under (a partial rollout needs it; without it the rule is
// enforced), `store` which store decided and `fallback` ({ from, reason }) is present when a fallback
// store decided. A decision `{ allowed: true, bypassed: true }` is the Worker's dev bypass; the
// limiter's `headers(decision)` then gives its response headers. Limiters made for different subsets
// of a route's rules must share each rule's state — as sluice's do, since they register rules by a
// stable id. Each store group of each route is asked for at construction, so what the factory refuses
// fails at start-up; subsets are asked for lazily (see decide.js) and kept. The default factory is
// sluice's own (limiter.js here); tests wrap it.

import { nowMs } from "../src/engine/clock.js";
import { SluiceConfigError } from "../src/engine/errors.js";
import { compose } from "../src/http/keys.js";
import { decisionHeaders, policyHeader, withHeaders } from "../src/http/headers.js";
import { limitedResponse } from "../src/http/responses.js";
import { storeStats } from "../src/stores/registry.js";
import { serveAdmin } from "./admin.js";
import { BLOCKS_SUBPATH, createAutoBlocks } from "./auto-blocks.js";
import { OVERRIDES_SUBPATH, createLiveOverridesAdmin } from "./live-overrides-admin.js";
import { createResponseRules, responseRuleFamilies } from "./response-rules.js";
import { accuracyFamilies } from "./accuracy-metrics.js";
import { DashboardReporter } from "./dashboard/report.js";
import { serveDashboard } from "./dashboard/serve.js";
import { analyticsDataset, analyticsPoints, writeLater } from "./analytics.js";
import { ConfigError, isValidatedConfig, validateConfig } from "./config.js";
import { decide, settledResponseRules, withResponseRules } from "./decide.js";
import { GatewayError, errorResponse } from "./errors.js";
import { createLimiterFactory } from "./limiter.js";
import { createAccessList } from "../src/features/lists/access-list.js";
import { createRouteLockouts } from "./lockout.js";
import { defaultLog, logRules, newLogRecord, requestDecision } from "./log.js";
import { GatewayMetrics } from "./metrics.js";
import { canonicalPath } from "../src/http/paths.js";
import { proxyRequest } from "./proxy.js";
import { secretMasker } from "./redact.js";
import { ClientAborted, declaresTooLarge, readRequestBody } from "./request-body.js";
import { wellFormedCredentials } from "./credentials.js";
import { createRouter } from "./routes.js";
import { deploymentProblem, missingBindings, routeBindingNeeds } from "./store-bindings.js";
import { storeFamilies } from "./store-metrics.js";
import { upstreamTarget } from "./target.js";
import { createWebSocketProxy, isWebSocketUpgrade } from "./websocket.js";
import { keyParts } from "./limiter.js";

/** @import { RateLimitDecision } from "../src/engine/limiter.js" */

// The configuration's types, for users of this module.
/** @typedef {import("./config.js").GatewayConfig} GatewayConfig */
/** @typedef {import("./config.js").GatewayConfigInput} GatewayConfigInput */
/** @typedef {import("./config.js").GatewayRoute} GatewayRoute */
/** @typedef {import("./config.js").GatewayRule} GatewayRule */
/** @typedef {import("./config.js").RuleInput} RuleInput */
/** @typedef {import("./config.js").StoresInput} StoresInput */
/** @import { RouteVerdict } from "./decide.js" */
/** One request's log line, filled in as the request goes (log.js). @typedef {Record<string, any>} LogRecord */
/** What a request came to: its response, and the route and verdict when it reached a route's rules. @typedef {{ response: Response, route?: GatewayRoute, verdict?: RouteVerdict | null }} Handled */

/**
 * What a limiter answers for one request: sluice's decision (every given rule checked, all-or-nothing), or its dev bypass.
 * @typedef {RateLimitDecision} LimiterOutcome
 */
/**
 * A limiter of the seam. `headers(decision)`, optional: the response headers of a bypassed decision (X-RateLimit-Bypassed).
 * @typedef {{
 *   limit(request: Request, env: unknown, ctx: unknown): Promise<LimiterOutcome> | LimiterOutcome;
 *   headers?(decision: LimiterOutcome): Array<[string, string]>;
 * }} GatewayLimiter
 */
/**
 * Makes the limiter of some rules of one route, all of one store. Limiters made for different subsets
 * of a route's rules must share each rule's state (sluice's do: rules are registered by a stable id).
 * @typedef {(rules: GatewayRule[], context: { route: GatewayRoute }) => GatewayLimiter} LimiterFactory
 */
/**
 * @typedef {object} GatewayOptions
 * @property {() => number} [now] The clock in milliseconds; default the host's (clock.js).
 * @property {LimiterFactory} [limiterFactory] Default: createLimiterFactory({ stores: config.stores, clock: now, ip: config.ip }).
 * @property {(line: string) => void} [log] Receives one JSON line per request; default console.log.
 * @property {GatewayMetrics} [metrics]
 * @property {object} [env] The start-up env (`import { env } from "cloudflare:workers"`): when given, a
 *   route's missing upstream secret, service binding or store binding (or Redis secret) fails
 *   createGateway with a ConfigError naming the field; without it, the route answers 500 at first use.
 */
/**
 * @typedef {object} Gateway
 * @property {(request: Request, env: object, ctx: { waitUntil(promise: Promise<unknown>): void }) => Promise<Response>} fetch
 * @property {GatewayMetrics} metrics
 * @property {GatewayConfig} config
 */

/**
 * Builds the gateway. `config` is a validated configuration (resolveConfig) or a raw one (validated
 * here). Options:
 *  - now() -> milliseconds: the clock; default the wall clock (clock.js);
 *  - limiterFactory(rules, { route }) -> { limit(request, env, ctx), headers?(decision) }: see THE
 *    LIMITER SEAM above; default sluice's own, on the configuration's stores and `now`;
 *  - log(line): receives one JSON line per request (under the configuration's log.admitted false,
 *    none for a request its route admitted and its upstream answered below 500); default: console.log;
 *  - metrics: a GatewayMetrics to count into; default: a new one.
 * Throws ConfigError naming the field for an invalid configuration, including what the limiters
 * refuse when they are built. Returns { fetch(request, env, ctx), metrics, config }.
 * @param {GatewayConfig | GatewayConfigInput} config
 * @param {GatewayOptions} [options]
 * @returns {Gateway}
 */
export function createGateway(config, options = {}) {
  const gatewayConfig = isValidatedConfig(config) ? config : validateConfig(config);
  const { now = nowMs, log = defaultLog } = options;
  if (typeof now !== "function") throw new TypeError("createGateway: options.now must be a function returning the time in milliseconds");
  /** @type {import("./limiter.js").AccuracyProbeEntry[]} */
  const probes = [];
  const limiterFactory =
    options.limiterFactory ??
    createLimiterFactory({ stores: gatewayConfig.stores, clock: now, ip: gatewayConfig.ip, accuracy: gatewayConfig.accuracy ?? null, probes, jwt: gatewayConfig.jwt ?? null });
  if (typeof limiterFactory !== "function") {
    throw new TypeError("createGateway: options.limiterFactory must be a function (rules, { route }) -> { limit(request, env, ctx) }");
  }
  if (typeof log !== "function") throw new TypeError("createGateway: options.log must be a function");
  const metrics = options.metrics ?? new GatewayMetrics(gatewayConfig);
  const { routes, responses, admin, analytics } = gatewayConfig;
  // log.admitted false: the routine line is neither built nor written (routine() below).
  const logAdmitted = gatewayConfig.log?.admitted ?? true;
  const match = createRouter(routes);
  const lists = gatewayConfig.lists ? createAccessList(gatewayConfig.lists) : null;
  const dashboard = admin?.dashboard ?? null;
  const reporter = dashboard === null || admin === null ? null : new DashboardReporter(dashboard, admin.tokenSecret);
  // Every counter /metrics shows: the rules', the stores', and the dashboard reporter's own.
  // The rules whose denials are lockouts, so the dashboard can list the accounts locked now.
  const lockoutRules = [...new Set(routes.flatMap((route) => route.rules.filter((rule) => /** @type {any} */ (rule).kind === "lockout").map((rule) => rule.name)))];
  const moreFamilies = () => [...storeFamilies(storeStats()), ...accuracyFamilies(probes), ...autoBlocks.families(), ...responseRuleFamilies(responseRulesFor), ...(reporter === null ? [] : reporter.families())];
  const allFamilies = () => [...metrics.families(), ...moreFamilies()];
  const maskerFor = allSecretsMasker(gatewayConfig);
  const bindingNeeds = routeBindingNeeds(gatewayConfig);
  // With the start-up env, a missing secret, service or store binding stops the Worker here, naming
  // the field, rather than answering 500 on the route at first use (store-bindings.js).
  if (options.env !== undefined) {
    const missing = deploymentProblem(gatewayConfig, bindingNeeds, options.env);
    if (missing !== null) throw new ConfigError(missing.field, missing.problem, gatewayConfig.source);
  }

  const limiterForRoute = routes.map((route) => {
    const made = new Map();
    return (/** @type {readonly number[]} */ ruleIndexes) => {
      const id = ruleIndexes.join(",");
      let limiter = made.get(id);
      if (limiter === undefined) {
        limiter = limiterFactory(ruleIndexes.map((/** @type {number} */ i) => route.rules[i]), { route });
        if (typeof limiter?.limit !== "function") {
          throw new TypeError(`createGateway: limiterFactory returned no limit() for ${route.prefix}`);
        }
        made.set(id, limiter);
      }
      return limiter;
    };
  });
  // Auto-blocking rules: their counters in /metrics, their blocks at <admin.path>/blocks (auto-blocks.js).
  const autoBlocks = createAutoBlocks(gatewayConfig, (route) => limiterForRoute[route.index], log);
  // Rules that count on the response (countWhen, costFrom): checked around the upstream call (response-rules.js).
  const responseRulesFor = routes.map((route) => createResponseRules(route, /** @type {any} */ (limiterFactory).responseLimiter));
  // Live tables of overrides: their admin endpoints at <admin.path>/overrides/<name> (live-overrides-admin.js).
  const liveTables = createLiveOverridesAdmin(gatewayConfig);
  /** @type {ReturnType<typeof createRouteLockouts>} */
  let lockoutsFor;
  const keyPart = keyParts({ ip: gatewayConfig.ip, jwt: gatewayConfig.jwt ?? null });
  // Routes with a `websocket` block proxy upgrades with their connection and message limits.
  const webSocketProxies = routes.map((route) =>
    route.websocket === null
      ? null
      : createWebSocketProxy(
          /** @type {any} */ (route),
          (parts) => (parts.length === 1 ? keyPart(parts[0], route) : compose(...parts.map((part) => keyPart(part, route)))),
          { onMessage: (outcome) => metrics.countWebSocketMessage(route.index, outcome) },
        ),
  );
  try {
    for (const route of routes) for (const group of route.storeGroups) limiterForRoute[route.index](group);
    lockoutsFor = createRouteLockouts(routes, { stores: gatewayConfig.stores, clock: now, clientIp: keyPart("ip", routes[0]) });
  } catch (error) {
    if (error instanceof ConfigError && error.source === undefined) throw new ConfigError(error.path, error.problem, gatewayConfig.source);
    throw error;
  }

  // The host's rate-limit header fields for a request's merged outcome (decide.js), and its 429.
  // RateLimit-Policy depends on the rules only: each rule's item is built once (policyOf).
  const rateLimitHeaders = (/** @type {import("./decide.js").MergedOutcome} */ outcome) => decisionHeaders(outcome, responses.headers, policyOf(outcome.rules));
  // The 429's settings, one object per RateLimit-Policy value (as many as the rule sets a 429 can name).
  /** @type {Map<string, import("../src/http/responses.js").LimitedResponseSettings>} */
  const limitedSettings = new Map();
  const rateLimitedResponse = (/** @type {import("./decide.js").MergedOutcome} */ outcome) => {
    const policy = policyOf(outcome.rules);
    let settings = limitedSettings.get(policy);
    if (settings === undefined) limitedSettings.set(policy, (settings = { ...responses, policy }));
    return limitedResponse(outcome, settings);
  };

  /** @param {(typeof GatewayError)[keyof typeof GatewayError]} kind @param {LogRecord} record @param {string} [detail] @param {HeadersInit} [headers] @returns {Handled} */
  function refuse(kind, record, detail, headers) {
    metrics.countRefusal(/** @type {Parameters<typeof metrics.countRefusal>[0]} */ (kind.code)); // every GatewayError code is a refusal
    if (detail !== undefined) record.error = detail;
    return { response: errorResponse(kind, { headers }) };
  }

  // The rules' verdicts, counted and logged (once per request that reached the rules).
  /** @param {GatewayRoute} route @param {RouteVerdict} verdict @param {LogRecord} record */
  function noteVerdict(route, verdict, record) {
    verdict.verdicts.forEach((ruleVerdict, /** @type {number} */ i) => metrics.countVerdict(route.index, i, ruleVerdict));
    reporter?.note(verdict.verdicts);
    record.decision = requestDecision(verdict);
    record.rules = logRules(verdict.verdicts);
  }

  // A client that hung up mid-body: counted and logged as such, answered 499 (nobody reads it).
  /** @param {GatewayRoute} route @param {LogRecord} record @returns {Handled} */
  function clientAborted(route, record) {
    metrics.countClientAbort(route.index);
    record.error = "client aborted";
    return { response: errorResponse(GatewayError.CLIENT_ABORTED), route };
  }

  /** @param {Request} request @param {URL} url @param {string} path @param {any} env @param {any} ctx @param {LogRecord} record @returns {Promise<Handled>} */
  async function handleRoute(request, url, path, env, ctx, record) {
    const matched = match(path);
    if (matched === null) return refuse(GatewayError.NO_ROUTE, record);
    const { route, remainder } = matched;
    record.route = route.prefix;
    if (!/** @type {readonly string[]} */ (route.methods).includes(request.method)) {
      return refuse(GatewayError.METHOD_NOT_ALLOWED, record, undefined, { allow: route.methods.join(", ") });
    }
    // The deny list refuses before anything is counted; the allow list skips the route's rules.
    const listed = lists === null ? null : lists.match(request);
    if (listed?.list === "deny") return refuse(GatewayError.DENIED_BY_LIST, record, `on the deny list (${listed.by})`);
    const target = upstreamTarget(route.upstream, remainder, url.search);
    if (target.problem !== undefined) return refuse(GatewayError.BAD_PATH, record, `path refused: ${target.problem}`);
    if (declaresTooLarge(request, route.upstream.maxBodyBytes)) {
      return refuse(GatewayError.BODY_TOO_LARGE, record, `request body over ${route.upstream.maxBodyBytes} bytes`);
    }
    const { auth, service } = route.upstream;
    const secret = auth === null ? null : env?.[auth.secret];
    if (auth !== null && (typeof secret !== "string" || secret === "")) {
      return refuse(GatewayError.MISCONFIGURED, record, `the secret ${auth.secret} (upstream credential) is not set`);
    }
    if (service !== null && typeof env?.[service]?.fetch !== "function") {
      return refuse(GatewayError.MISCONFIGURED, record, `the service binding ${service} (upstream) is missing`);
    }
    // Before any rule is charged: a store binding env lacks is a deployment mistake, never a reason
    // to count in this isolate's memory (store-bindings.js).
    const missing = missingBindings(bindingNeeds[route.index], env);
    if (missing !== "") return refuse(GatewayError.MISCONFIGURED, record, missing);

    // A route keyed by user reads the bearer token; a credential it cannot read as one token would be
    // keyed by IP here while an upstream splitting on spaces sees a user (issue 23): refused.
    if (route.keysByUser && !wellFormedCredentials(request.headers.get("authorization"))) {
      return refuse(GatewayError.MALFORMED_CREDENTIALS, record, "authorization refused: not one well-formed Bearer token");
    }

    let verdict;
    /** @type {{ guard: import("./lockout.js").RouteLockoutGuard, response: Response | null, attempts: any[] } | null} */
    let lockout = null;
    // The body, read whole once: by the lockout rules (before the upstream call) or just before it.
    /** @type {{ body?: ArrayBuffer, tooLarge?: true } | null} */
    let read = null;
    /** @type {{ rules: NonNullable<ReturnType<typeof createResponseRules>>, refused: any, decisions: any[] } | null} */
    let counting = null;
    const allowListed = listed?.list === "allow";
    if (allowListed) {
      metrics.countListAllowed(route.index);
      record.decision = "allow_list";
    }
    try {
      verdict = allowListed ? null : await decide(route, limiterForRoute[route.index], request, env, ctx);
      // Lockout rules (lockout.js), once the rate limits admitted the attempt (the dev bypass skips them too).
      const guard = verdict === null ? null : lockoutsFor(route);
      if (guard !== null && verdict !== null && verdict.blocked) guard.unchecked(verdict.verdicts);
      else if (guard !== null && verdict !== null && verdict.bypassHeaders === null) {
        read = await readRequestBody(request, route.upstream.maxBodyBytes);
        if (read.tooLarge) {
          noteVerdict(route, verdict, record);
          return { ...refuse(GatewayError.BODY_TOO_LARGE, record, `request body over ${route.upstream.maxBodyBytes} bytes`), route, verdict };
        }
        const body = read.body === undefined ? undefined : new Uint8Array(read.body);
        lockout = { guard, ...(await guard.check(request, body, env, ctx, verdict.verdicts)) };
      }
      // Rules that count on the response: checked now, charged once the upstream has answered.
      const responseRules = verdict === null || verdict.blocked || verdict.bypassHeaders !== null || lockout?.response ? null : responseRulesFor[route.index];
      if (responseRules !== null) {
        counting = { rules: responseRules, ...(await responseRules.check(request, env, ctx)) };
        // Their verdicts join the route's: counted, logged, in the headers; a refusal blocks.
        verdict = withResponseRules(route, /** @type {RouteVerdict} */ (verdict), counting.decisions, counting.refused);
      }
    } catch (error) {
      if (error instanceof ClientAborted) {
        if (verdict !== undefined && verdict !== null) noteVerdict(route, verdict, record);
        return { ...clientAborted(route, record), verdict };
      }
      // The host's stores refuse an unbound binding too (a limiterFactory of one's own may reach one
      // the check above does not know): a misconfiguration, answered as one. Only the field is
      // logged: the problem may quote a value.
      if (error instanceof SluiceConfigError) return refuse(GatewayError.MISCONFIGURED, record, `limiter misconfigured: ${error.field}`);
      metrics.countLimiterError(route.index);
      record.decision = "limiter_error";
      record.error = `limiter failed: ${/** @type {any} */ (error)?.name ?? "error"}`;
      // Fail closed where a rule could block; a route of shadow rules only never blocks anyway.
      if (route.canBlock) return { response: errorResponse(GatewayError.LIMITER_UNAVAILABLE), route };
      verdict = null;
    }
    /** @type {[string, string][]} */
    let rateHeaders = [];
    if (verdict !== null) {
      noteVerdict(route, verdict, record);
      // A 429 carries its own rate-limit fields (limitedResponse): they are built once, there.
      if (verdict.blocked) return { response: rateLimitedResponse(/** @type {import("./decide.js").MergedOutcome} */ (verdict.outcome)), route, verdict }; // a blocked request was checked
      if (verdict.bypassHeaders !== null) rateHeaders = verdict.bypassHeaders;
      else if (verdict.outcome !== null) rateHeaders = rateLimitHeaders(verdict.outcome);
      if (lockout?.response) {
        record.decision = "denied";
        return { response: lockout.response, route, verdict };
      }
    }

    const webSocketProxy = webSocketProxies[route.index];
    if (webSocketProxy !== null && isWebSocketUpgrade(request)) {
      const upgraded = await webSocketProxy({ request, targetUrl: target.url, env, secret, ctx, headers: rateHeaders });
      record.upstreamStatus = upgraded.upstreamStatus;
      if (upgraded.refused) record.decision = "connection_limited";
      metrics.countWebSocketConnection(route.index, upgraded.refused ? "refused" : upgraded.upstreamStatus === 101 ? "opened" : "failed");
      if (upgraded.failure !== null) {
        metrics.countUpstreamFailure(route.index, upgraded.failure);
        record.error = `upstream ${upgraded.failure}`;
      }
      return { response: upgraded.response, route, verdict };
    }

    // A body that stalls does so after this request's log line: it is counted, and logged on its own.
    const onBodyStall = () => {
      metrics.countUpstreamFailure(route.index, "body_timeout");
      log(JSON.stringify({ ...record, error: "upstream body timeout" }));
    };
    // So does a client that hangs up in the middle of the response: a client abort, as in its body.
    const onClientGone = () => {
      metrics.countClientAbort(route.index);
      log(JSON.stringify({ ...record, error: "client aborted" }));
    };
    // Read whole before the upstream call (request-body.js says why), after the rules: a refused
    // request's body is never read.
    if (read === null) {
      try {
        read = await readRequestBody(request, route.upstream.maxBodyBytes);
      } catch (error) {
        if (error instanceof ClientAborted) return { ...clientAborted(route, record), verdict };
        throw error;
      }
    }
    if (read.tooLarge) {
      return { ...refuse(GatewayError.BODY_TOO_LARGE, record, `request body over ${route.upstream.maxBodyBytes} bytes`), route, verdict };
    }
    const result = await proxyRequest({
      method: request.method,
      headers: request.headers,
      body: read.body,
      targetUrl: target.url,
      upstream: route.upstream,
      env,
      secret,
      mask: maskerFor(env),
      now,
      onBodyStall,
      onClientGone,
      waitUntil: typeof ctx?.waitUntil === "function" ? (/** @type {Promise<void>} */ relaying) => ctx.waitUntil(relaying) : null,
      responseHeaders: rateHeaders,
    });
    if (lockout !== null) await lockout.guard.settle(lockout.attempts, result.upstreamStatus);
    record.upstreamStatus = result.upstreamStatus;
    record.upstreamLatencyMs = result.upstreamLatencyMs;
    if (result.failure !== null) {
      metrics.countUpstreamFailure(route.index, result.failure);
      record.error = `upstream ${result.failure}`;
    }
    // A relayed response carries rateHeaders already; sluice's own 502/504 get them here.
    const relayed = result.failure === null ? result.response : withHeaders(result.response, rateHeaders);
    if (counting === null || verdict === null) return { response: relayed, route, verdict };
    // Charged after the response: the log line and the headers say what each rule left then.
    const settled = await counting.rules.settle(counting.decisions, relayed, request, env, ctx);
    const outcome = settledResponseRules(route, verdict, settled.settled);
    verdict.outcome = outcome;
    record.rules = logRules(verdict.verdicts);
    return { response: withHeaders(settled.response, rateLimitHeaders(outcome)), route, verdict };
  }

  /** @param {Request} request @param {any} env @param {any} ctx @returns {Promise<Response>} */
  async function fetch(request, env, ctx) {
    const url = new URL(request.url);
    /** @type {Record<string, any>} */
    const record = newLogRecord(request);
    // One spelling of the path for everything after this line (../src/http/paths.js).
    const canonical = canonicalPath(url.pathname);
    /** @type {Handled} */
    let handled;
    if (canonical.problem !== undefined) {
      handled = refuse(GatewayError.BAD_PATH, record, `path refused: ${canonical.problem}`);
    } else if (admin !== null && canonical.path.toLowerCase() === admin.path.toLowerCase()) {
      record.route = "admin";
      handled = { response: await serveAdmin(request, env, admin, metrics, moreFamilies) };
    } else if (admin !== null && autoBlocks.enabled && canonical.path.toLowerCase() === `${admin.path}${BLOCKS_SUBPATH}`.toLowerCase()) {
      record.route = "admin";
      handled = { response: await autoBlocks.serve(request, env, ctx) };
    } else if (admin !== null && liveTables.enabled && underPath(canonical.path, `${admin.path}${OVERRIDES_SUBPATH}`)) {
      record.route = "admin";
      const subpath = canonical.path.slice(admin.path.length + OVERRIDES_SUBPATH.length);
      handled = { response: (await liveTables.serve(request, subpath, env)) ?? errorResponse(GatewayError.NO_ROUTE) };
    } else if (dashboard !== null && admin !== null && underPath(canonical.path, dashboard.path)) {
      record.route = "dashboard";
      const subpath = canonical.path.slice(dashboard.path.length);
      handled = { response: await serveDashboard(request, subpath, env, /** @type {any} */ (admin), { nowMs: () => Date.now(), lockoutRules, blocksNow: (env) => autoBlocks.list(env), reportNow: (env) => /** @type {DashboardReporter} */ (reporter).report(env, Date.now(), allFamilies()) }) };
    } else {
      try {
        handled = await handleRoute(request, url, canonical.path, env, ctx, record);
      } catch (error) {
        // A bug or a broken dependency (a clock or a binding that throws): still one log line and a
        // JSON error that no cache keeps. The message is not logged: it may quote request data.
        record.error = `internal error: ${/** @type {any} */ (error)?.name ?? "error"}`;
        handled = { response: errorResponse(GatewayError.INTERNAL) };
      }
    }
    record.status = handled.response.status;
    if (logAdmitted || !routine(record, handled)) log(JSON.stringify(record));
    // The dashboard's counters leave in the background, at most once per reportIntervalMs of the wall
    // clock (not the injectable `now`: a report is not part of any decision).
    if (reporter !== null && record.route !== "dashboard" && reporter.due(Date.now())) ctx?.waitUntil?.(reporter.report(env, Date.now(), allFamilies()));
    const dataset = handled.route === undefined ? null : analyticsDataset(env, analytics.binding);
    if (dataset !== null) {
      const verdicts = handled.verdict?.verdicts ?? [];
      writeLater(dataset, analyticsPoints(/** @type {GatewayRoute} */ (handled.route), verdicts, record), ctx, () => metrics.countAnalyticsError());
    }
    return handled.response;
  }

  return { fetch, metrics, config: gatewayConfig };
}

// The decisions of a request its route's rules let through (the allow list's included), and nothing else.
const ADMITTED = new Set(["admitted", "bypassed", "allow_list"]);

/**
 * Whether `record` is a request that `log.admitted: false` leaves unlogged: on a route, admitted by its
 * rules, answered below 500 with no error. A refusal, a failure (the gateway's or the upstream's), a
 * shadow denial (would_have_denied) and every admin or dashboard request keep their line.
 * @param {Record<string, any>} record @param {Handled} handled
 */
function routine(record, handled) {
  return handled.route !== undefined && record.error === null && record.status < 500 && ADMITTED.has(record.decision);
}

// RateLimit-Policy for `rules` (a request's checked rules, in route order): policyHeader's items,
// each rule's built once, since a rule's quota never changes.
/** @type {WeakMap<object, string>} */
const policyItems = new WeakMap();
/** @param {ReadonlyArray<Parameters<typeof policyHeader>[0][number]>} rules @returns {string} */
function policyOf(rules) {
  /** @param {Parameters<typeof policyHeader>[0][number]} rule */
  const itemOf = (rule) => {
    let item = policyItems.get(rule);
    if (item === undefined) {
      item = policyHeader([rule]);
      policyItems.set(rule, item);
    }
    return item;
  };
  return rules.length === 1 ? itemOf(rules[0]) : rules.map(itemOf).join(", ");
}

// Whether `path` is `base` or below it (case-insensitive, as the admin path is matched).
/** @param {string} path @param {string} base @returns {boolean} */
function underPath(path, base) {
  const lower = path.toLowerCase();
  const prefix = base.toLowerCase();
  return lower === prefix || lower.startsWith(`${prefix}/`);
}

// The masker of every secret the configuration names (each route's upstream credential and the admin
// token), whichever route a response comes from: a route may echo another route's credential. Built
// again only when the secrets' values change.
/** @param {GatewayConfig} config @returns {(env: any) => ReturnType<typeof secretMasker>} */
function allSecretsMasker({ routes, admin }) {
  const names = [...new Set([...routes.flatMap((/** @type {GatewayRoute} */ route) => (route.upstream.auth === null ? [] : [route.upstream.auth.secret])), ...(admin === null ? [] : [admin.tokenSecret])])];
  let made = /** @type {ReturnType<typeof secretMasker> | null} */ (null);
  let madeFor = /** @type {string | null} */ (null);
  return (/** @type {any} */ env) => {
    const values = names.map((name) => env?.[name]).filter((value) => typeof value === "string" && value !== "");
    const id = values.join("\u0000");
    if (made === null || id !== madeFor) {
      made = secretMasker(values);
      madeFor = id;
    }
    return made;
  };
}

export { CONFIG_VAR, ConfigError, resolveConfig, validateConfig } from "./config.js";
export { createLimiterFactory } from "./limiter.js";
export { GatewayMetrics } from "./metrics.js";
