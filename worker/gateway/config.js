// The gateway's one configuration: routes (path prefix, methods, rules, upstream), the admin endpoint
// and the Analytics Engine binding. It is a JSON file bundled with the Worker, replaced as a whole by
// the SLUICE_CONFIG variable when that is set. Validation happens once, at start-up; any problem
// throws a ConfigError naming the field (`routes[2].rules[0].limit`), so a bad configuration never
// serves a request. README.md, "The gateway" documents every field.

import { MAX_CHECKS_PER_CALL } from "../../wasm-bindings/sluice.js";
import { normalizeResponseOptions } from "../src/engine/options.js";
import { SluiceConfigError } from "../src/engine/errors.js";
import { ip } from "../src/http/keys.js";
import { normalizeAccuracy } from "../src/features/accuracy/probe.js";
import { createJwtVerifier } from "../src/http/jwt.js";
import { createAccessList } from "../src/features/lists/access-list.js";
import { STORE_FIELDS, registerStoreKind, resolveStore } from "../src/stores/registry.js";
import { durableStore } from "../src/stores/kinds/durable.js";
import { kvStore } from "../src/stores/kinds/kv.js";
import { redisStore } from "../src/stores/kinds/redis.js";
import { HOP_BY_HOP, STRIPPED_BY_DEFAULT, isNeverForwarded, isStrippedByDefault } from "./forwarding.js";
import { isLockoutRule, validateLockoutRule } from "./lockout-rule.js";
import { STORES, sameRule, storeGroupOf, validateRule } from "./rule-config.js";
import { pathProblem } from "./target.js";
import { METHODS, boundsOf, choicesOf, fieldsOf } from "./config-fields.js";
import { validateWebSocket } from "./websocket-config.js";
import {
  BINDING_DESCRIPTION,
  BINDING_NAME,
  ConfigError,
  HEADER_DESCRIPTION,
  HEADER_NAME,
  expectArray,
  expectInteger,
  expectKnownFields,
  expectObject,
  expectOneOf,
  expectString,
  fieldPath,
  hostValidated,
  isPlainObject,
  show,
} from "./validate.js";

// The gateway's configuration names its stores by string ("durable", "kv", "redis"): it serves them all.
for (const kind of [durableStore, kvStore, redisStore]) registerStoreKind(kind);

/** @import { AlgorithmName } from "../../wasm-bindings/sluice.js" */
/** @import { HeaderMode } from "../src/engine/options.js" */
/** @import { DurableStoreSettings, KvStoreSettings, RedisStoreSettings } from "../src/stores/registry.js" */
/** @import { NormalizedRule } from "../src/stores/store.js" */
/** @import { RawJson } from "./validate.js" */

// The configuration as written (GatewayConfigInput) and as validated (GatewayConfig).
/** @typedef {import("../src/engine/mode.js").Mode} Mode */
/** @typedef {"memory" | "durable" | "kv" | "redis"} Store */
/** @typedef {"GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS"} Method */
/**
 * "ip", "user", "route" or "apiKey:<header name>".
 * @typedef {"ip" | "user" | "route" | `apiKey:${string}`} KeyPart
 */
/**
 * A rule's window: exactly one of windowSec (whole milliseconds) and windowMs.
 * @typedef {{ windowSec: number; windowMs?: undefined } | { windowMs: number; windowSec?: undefined }} WindowInput
 */
/**
 * A rule as written. `burst`: token-bucket, leaky-bucket and gcra only. `keyCapacity`: keys the rule's
 * table holds in an isolate before it evicts the least used (the host's default: 50,000). `rollout`:
 * mode "enforce" only, the share of keys enforced, from 0 to 1.
 * @typedef {WindowInput & {
 *   name: string;
 *   algorithm: AlgorithmName;
 *   limit: number;
 *   burst?: number;
 *   keyCapacity?: number;
 *   key: KeyPart | KeyPart[];
 *   store?: Store;
 *   mode?: Mode;
 *   rollout?: number;
 *   lease?: boolean | import("../src/stores/leases.js").LeaseOptions;
 *   autoBlock?: { after: number; withinSec?: number; withinMs?: number; blockSec?: number; blockMs?: number };
 *   liveOverrides?: { binding?: string; name?: string; refreshMs?: number };
 *   countWhen?: { status: (number | string)[] };
 *   costFrom?: { header: string; max?: number; default?: number };
 * }} RuleInput
 */
/**
 * An upstream as written. `service`: a service binding to send the requests through instead of the
 * network. `timeoutMs`: how long to wait for the response head, in ms (1 to 300000); default 10000.
 * `bodyTimeoutMs`: how long the upstream may fall silent in the middle of its body while the client
 * waits, in ms (1 to 3600000), or null for no bound; default 60000. `bodyDeadlineMs`: where
 * bodyTimeoutMs is null, the longest a body may take from its head to its end, in ms (1 to 86400000);
 * default none. A body bound so and not masked is piped by the runtime. `maxBodyBytes`: the largest
 * request body forwarded (bodies are read whole first), 0 to 104857600; default 1048576.
 * `forwardHeaders`: headers stripped by default to forward anyway; `stripHeaders`: more headers never
 * forwarded; `clientIpHeader`: a header the gateway sets to cf-connecting-ip (default none).
 * `cacheControl`: "upstream" (default) or a Cache-Control value for successful responses.
 * `maskBody`: which response bodies are read for secrets (headers always are): "auto" (default) every
 * body but images (not SVG), audio, video and fonts; "always" every body; "never" none, for an upstream
 * that cannot echo one (docs/gateway.md, "What it costs").
 * @typedef {object} UpstreamInput
 * @property {string} url
 * @property {string} [service]
 * @property {{ secret: string; header?: string; scheme?: string }} [auth]
 * @property {number} [timeoutMs]
 * @property {number | null} [bodyTimeoutMs]
 * @property {number | null} [bodyDeadlineMs]
 * @property {number} [maxBodyBytes]
 * @property {string[]} [forwardHeaders]
 * @property {string[]} [stripHeaders]
 * @property {string | null} [clientIpHeader]
 * @property {string} [cacheControl]
 * @property {"auto" | "always" | "never"} [maskBody]
 */
/**
 * @typedef {object} RouteInput
 * @property {string} prefix
 * @property {Method[]} methods
 * @property {RuleInput[]} rules
 * @property {UpstreamInput} upstream
 * @property {import("./websocket-config.js").WebSocketInput} [websocket] WebSocket upgrades: connection and message limits
 */
/**
 * The host's settings of the durable, kv and redis stores (shards, lease, timeoutMs, failMode, fallback, bindings, ...), for every rule using them.
 * @typedef {object} StoresInput
 * @property {DurableStoreSettings} [durable]
 * @property {KvStoreSettings} [kv]
 * @property {RedisStoreSettings} [redis]
 */
/**
 * @typedef {object} ResponsesInput
 * @property {string | number} [code] The `code` of a 429's body; default "sluice_rate_limited".
 * @property {boolean} [problemJson] Answer 429s as application/problem+json; default false.
 * @property {HeaderMode} [headers] Which rate-limit header fields responses carry; default "both".
 */
/**
 * The dashboard's settings (admin.dashboard): where it is served, the Durable Object binding its
 * counters add up in, how often each isolate reports, and whether client keys are shown as they are.
 * @typedef {{ path: string; binding: string; reportIntervalMs: number; showKeys: boolean }} DashboardSettings
 */
/**
 * @typedef {object} GatewayConfigInput
 * @property {RouteInput[]} routes
 * @property {StoresInput} [stores]
 * @property {ResponsesInput} [responses]
 * @property {{ path: string; tokenSecret: string; dashboard?: boolean | Partial<DashboardSettings> }} [admin]
 * @property {{ binding: string }} [analytics]
 * @property {import("../src/http/keys.js").IpOptions} [ip] How the `ip` key part finds the client: trustForwardedFor, ipv6Prefix (keys.js's ip()).
 * @property {import("../src/features/lists/access-list.js").AccessListOptions} [lists] Allow and deny lists of addresses, countries and ASNs.
 * @property {import("../src/http/jwt.js").JwtOptions} [jwt] How jwt:<claim> key parts verify tokens (no `secret`: use secretBinding).
 * @property {{ sample: number; binding?: string }} [accuracy] Check this share of the keys of every memory and KV rule against exact counting (docs/accuracy.md).
 * @property {{ admitted?: boolean }} [log] `admitted: false` drops the log line of a request its route's rules admitted and its upstream answered below 500 (each costs the Worker a console.log); every other line stays.
 */
/**
 * A validated rule: the host's normalized rule (id, name, algorithm, limit, windowMs, burst,
 * keyCapacity) plus the gateway's fields; `key` holds canonical parts (header names lower-cased).
 * @typedef {NormalizedRule & {
 *   readonly key: readonly KeyPart[];
 *   readonly store: Store;
 *   readonly mode: Mode;
 *   readonly rollout: number;
 *   readonly overrides?: readonly import("../src/features/overrides/overrides.js").Override[];
 *   readonly lease?: false | Readonly<import("../src/stores/leases.js").LeaseOptions>;
 *   readonly autoBlock?: { readonly after: number; readonly withinMs: number; readonly blockMs: number };
 *   readonly liveOverrides?: { readonly binding: string; readonly name: string; readonly refreshMs: number };
 *   readonly countWhen?: { readonly status: readonly (number | string)[] };
 *   readonly costFrom?: { readonly header: string; readonly max?: number; readonly default?: number };
 * }} GatewayRule
 */
/**
 * A validated upstream. `url` is canonical: origin + basePath; `basePath` is "" or "/a/b", never with
 * a trailing slash.
 * @typedef {{
 *   readonly url: string;
 *   readonly origin: string;
 *   readonly basePath: string;
 *   readonly service: string | null;
 *   readonly auth: { readonly secret: string; readonly header: string; readonly scheme: string } | null;
 *   readonly timeoutMs: number;
 *   readonly bodyTimeoutMs: number | null;
 *   readonly bodyDeadlineMs: number | null;
 *   readonly maxBodyBytes: number;
 *   readonly forwardHeaders: readonly string[];
 *   readonly stripHeaders: readonly string[];
 *   readonly clientIpHeader: string | null;
 *   readonly cacheControl: string;
 *   readonly maskBody: "auto" | "always" | "never";
 * }} GatewayUpstream
 */
/**
 * A validated route. `activeRuleIndexes`: the rules not in bypass mode; `storeGroups`: the active rules
 * by store (memory, then kv, then redis, then durable; durable rules with a lease of their own apart), each group one limiter call; `canBlock`: whether any rule
 * can ever block a request on this route.
 * @typedef {{
 *   readonly index: number;
 *   readonly prefix: string;
 *   readonly methods: readonly Method[];
 *   readonly rules: readonly GatewayRule[];
 *   readonly activeRuleIndexes: readonly number[];
 *   readonly responseRuleIndexes: readonly number[];
 *   readonly storeGroups: readonly (readonly number[])[];
 *   readonly canBlock: boolean;
 *   readonly upstream: GatewayUpstream;
 *   readonly websocket: import("./websocket-config.js").WebSocketLimitsConfig | null;
 *   readonly keysByUser: boolean;
 * }} GatewayRoute
 */
/**
 * The validated configuration. `source`: where it came from ("gateway.config.json", "SLUICE_CONFIG"),
 * for errors found later.
 * @typedef {{
 *   readonly source: string;
 *   readonly routes: readonly GatewayRoute[];
 *   readonly stores: { readonly durable: Readonly<DurableStoreSettings>; readonly kv: Readonly<KvStoreSettings>; readonly redis: Readonly<RedisStoreSettings> };
 *   readonly responses: { readonly code: string | number; readonly problemJson: boolean; readonly headers: HeaderMode };
 *   readonly admin: { readonly path: string; readonly tokenSecret: string; readonly dashboard: DashboardSettings | null } | null;
 *   readonly analytics: { readonly binding: string };
 *   readonly ip: Readonly<import("../src/http/keys.js").IpOptions>;
 *   readonly accuracy?: { readonly sample: number; readonly binding: string } | null;
 *   readonly jwt?: import("../src/http/jwt.js").JwtOptions | null;
 *   readonly lists?: import("../src/features/lists/access-list.js").AccessListOptions | null;
 *   readonly log?: { readonly admitted: boolean };
 * }} GatewayConfig
 */

/** The [vars] entry that, when set, replaces the bundled configuration (a JSON string or a table). */
export const CONFIG_VAR = /** @type {const} */ ("SLUICE_CONFIG");
export const DEFAULT_TIMEOUT_MS = /** @type {const} */ (10_000);
export const MAX_TIMEOUT_MS = boundsOf("upstream", "timeoutMs")[1];
// How long an upstream may fall silent in the middle of its body: a reverse proxy's usual read timeout.
// Streams that idle longer between events (server-sent events, long polls) raise it, or set null.
export const DEFAULT_BODY_TIMEOUT_MS = 60_000;
export const MAX_BODY_TIMEOUT_MS = boundsOf("upstream", "bodyTimeoutMs")[1];
// Request bodies are read whole before they are forwarded (request-body.js): nginx's default
// client_max_body_size is the default bound, Cloudflare's smallest plan limit the largest.
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;
export const MAX_MAX_BODY_BYTES = boundsOf("upstream", "maxBodyBytes")[1];
export const DEFAULT_ANALYTICS_BINDING = /** @type {const} */ ("SLUICE_ANALYTICS");
// The methods a route may forward (config-fields.js: CONNECT and TRACE are left out on purpose).
export { METHODS };
// The core checks at most 16 rules in one all-or-nothing call.
export const MAX_RULES_PER_ROUTE = MAX_CHECKS_PER_CALL;
/** The `code` of the gateway's 429 body unless `responses.code` says otherwise: sluice's own, like its other errors. */
export const DEFAULT_LIMITED_CODE = /** @type {const} */ ("sluice_rate_limited");
// A route's rules are checked store by store in this order: the isolate's memory first, so a request
// it denies costs no round trip; the Durable Object last, so its exact counts are charged only for
// requests every other rule admitted.
const STORE_ORDER = ["memory", "kv", "redis", "durable"];

// The fields of each object, from the one table the JSON Schema is generated from (config-fields.js).
const TOP_FIELDS = fieldsOf("config");
const IP_FIELDS = fieldsOf("ip");
// The host's store options, set once per store for every rule that uses it.
const REMOTE_STORES = fieldsOf("stores");
const STORE_SETTING_FIELDS = STORE_FIELDS.filter((field) => field !== "store");
const RESPONSE_FIELDS = fieldsOf("responses");
const ROUTE_FIELDS = fieldsOf("route");
const UPSTREAM_FIELDS = fieldsOf("upstream");
const AUTH_FIELDS = fieldsOf("auth");
const ADMIN_FIELDS = fieldsOf("admin");
// What the configuration may set of http/jwt.js's options (`fetch` and `clock` are code, not configuration).
const JWT_FIELDS = fieldsOf("jwt");
const DASHBOARD_FIELDS = fieldsOf("dashboard");
/** The dashboard's defaults (dashboard/): its path, its Durable Object binding, how often isolates report. */
export const DASHBOARD_DEFAULTS = Object.freeze({ path: "/_sluice/dashboard", binding: "SLUICE_DASHBOARD", reportIntervalMs: 5000, showKeys: false });
const ANALYTICS_FIELDS = fieldsOf("analytics");
const LOG_FIELDS = fieldsOf("log");

// Plain segments only (no escapes) keep prefix matching unambiguous; 96 characters is Analytics
// Engine's index size, where the prefix goes.
const PLAIN_PATH = /^(\/[A-Za-z0-9\-._~!$&'()*+,;=:@]+)+$/;
const PLAIN_PATH_DESCRIPTION = "a path like /v1/geo: '/'-separated segments of URL path characters, no trailing '/'";
const MAX_PATH_LENGTH = 96;
const AUTH_SCHEME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]*$/;
const CACHE_DIRECTIVE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+(=([!#$%&'*+\-.^_`|~0-9A-Za-z]+|"[^"\\\x00-\x1f\x7f]*"))?$/;
// Plain http is accepted only where the credential does not cross a network: a service binding, or
// a Worker talking to its own machine under wrangler dev.
const LOCAL_HOSTS = ["localhost", "127.0.0.1", "[::1]"];

export { ConfigError };

const validated = new WeakSet();

/** @param {RawJson} raw @param {string} path @param {{ allowRoot: boolean }} options */
function validatePath(raw, path, { allowRoot }) {
  expectString(raw, path);
  if (allowRoot && raw === "/") return raw;
  if (raw.length > MAX_PATH_LENGTH || !PLAIN_PATH.test(raw)) {
    throw new ConfigError(path, `must be ${allowRoot ? "/ or " : ""}${PLAIN_PATH_DESCRIPTION}, at most ${MAX_PATH_LENGTH} characters; got ${show(raw)}`);
  }
  const problem = pathProblem(raw);
  if (problem !== null) throw new ConfigError(path, `contains ${problem}`);
  return raw;
}

function validateMethods(/** @type {RawJson} */ raw, /** @type {string} */ path) {
  expectArray(raw, path, { min: 1 });
  const methods = raw.map((/** @type {unknown} */ method, /** @type {number} */ i) => expectOneOf(method, fieldPath(path, i), METHODS));
  const duplicate = methods.find((/** @type {unknown} */ method, /** @type {number} */ i) => methods.indexOf(method) !== i);
  if (duplicate !== undefined) throw new ConfigError(path, `lists ${duplicate} twice`);
  return Object.freeze(methods);
}

function validateUpstreamUrl(/** @type {RawJson} */ raw, /** @type {string} */ path, /** @type {RawJson} */ service) {
  expectString(raw, path);
  let url;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(path, `must be an absolute URL like https://api.example.com/v2; got ${show(raw)}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new ConfigError(path, `must be an https URL; got ${show(raw)}`);
  }
  if (url.protocol === "http:" && service === null && !LOCAL_HOSTS.includes(url.hostname)) {
    throw new ConfigError(path, "must use https: the upstream credential would cross the network in clear");
  }
  if (url.username !== "" || url.password !== "") {
    throw new ConfigError(path, "must not carry credentials (user:password@); keep the credential in a Worker secret named by upstream.auth.secret");
  }
  if (raw.includes("?") || raw.includes("#")) {
    throw new ConfigError(path, "must not have a query or a fragment: the request's own query is forwarded");
  }
  const basePath = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  const canonical = url.origin + basePath;
  // Dot segments, backslashes, an upper-case host or a default port would each be rewritten by the
  // URL parser; asking for the canonical spelling keeps the configured text and the target the same.
  if (raw.replace(/\/$/, "") !== canonical) {
    throw new ConfigError(path, `must be written in canonical form: ${JSON.stringify(canonical)}; got ${show(raw)}`);
  }
  const problem = pathProblem(basePath);
  if (problem !== null) throw new ConfigError(path, `has a path with ${problem}`);
  return { url: canonical, origin: url.origin, basePath };
}

function validateHeaderName(/** @type {RawJson} */ raw, /** @type {string} */ path) {
  return expectString(raw, path, { pattern: HEADER_NAME, description: HEADER_DESCRIPTION }).toLowerCase();
}

function validateAuth(/** @type {RawJson} */ raw, /** @type {string} */ path) {
  if (raw === undefined) return null;
  expectObject(raw, path);
  expectKnownFields(raw, path, AUTH_FIELDS);
  const secret = expectString(raw.secret, fieldPath(path, "secret"), { pattern: BINDING_NAME, description: BINDING_DESCRIPTION });
  const header = raw.header === undefined ? "authorization" : validateHeaderName(raw.header, fieldPath(path, "header"));
  if (isNeverForwarded(header)) {
    throw new ConfigError(fieldPath(path, "header"), `${header} is set by the runtime for each connection and cannot carry a credential`);
  }
  let scheme = header === "authorization" ? "Bearer" : "";
  if (raw.scheme !== undefined) {
    if (typeof raw.scheme !== "string" || !AUTH_SCHEME.test(raw.scheme)) {
      throw new ConfigError(fieldPath(path, "scheme"), `must be an authentication scheme like "Bearer", or "" for none; got ${show(raw.scheme)}`);
    }
    scheme = raw.scheme;
  }
  return Object.freeze({ secret, header, scheme });
}

function validateForwardHeaders(/** @type {RawJson} */ raw, /** @type {string} */ path, /** @type {GatewayUpstream["auth"]} */ auth) {
  if (raw === undefined) return Object.freeze([]);
  expectArray(raw, path);
  return Object.freeze(
    raw.map((/** @type {unknown} */ name, /** @type {number} */ i) => {
      const headerPath = fieldPath(path, i);
      const header = validateHeaderName(name, headerPath);
      if (isNeverForwarded(header)) {
        throw new ConfigError(headerPath, `${header} is hop-by-hop (it describes one connection; ${HOP_BY_HOP.join(", ")} and host never cross the gateway)`);
      }
      if (auth !== null && header === auth.header) {
        throw new ConfigError(headerPath, `${header} carries the upstream credential (upstream.auth.header); the client's own is never forwarded`);
      }
      if (!isStrippedByDefault(header)) {
        throw new ConfigError(headerPath, `${header} is forwarded already; list only headers stripped by default (${STRIPPED_BY_DEFAULT.join(", ")}, cf-*, names with _)`);
      }
      return header;
    }),
  );
}

// `stripHeaders`: more request headers the upstream never sees, besides those stripped by default.
function validateStripHeaders(/** @type {RawJson} */ raw, /** @type {string} */ path, /** @type {GatewayUpstream["auth"]} */ auth, /** @type {readonly string[]} */ forwardHeaders) {
  if (raw === undefined) return Object.freeze([]);
  expectArray(raw, path);
  const names = raw.map((/** @type {unknown} */ name, /** @type {number} */ i) => {
    const headerPath = fieldPath(path, i);
    const header = validateHeaderName(name, headerPath);
    if (forwardHeaders.includes(header)) throw new ConfigError(headerPath, `${header} is also listed in forwardHeaders`);
    if (auth !== null && header === auth.header) {
      throw new ConfigError(headerPath, `${header} carries the upstream credential (upstream.auth.header), which the gateway sets`);
    }
    return header;
  });
  const duplicate = names.find((/** @type {unknown} */ name, /** @type {number} */ i) => names.indexOf(name) !== i);
  if (duplicate !== undefined) throw new ConfigError(path, `lists ${duplicate} twice`);
  return Object.freeze(names);
}

// `clientIpHeader`: the header the gateway sets to the client's address (cf-connecting-ip), or null.
function validateClientIpHeader(/** @type {RawJson} */ raw, /** @type {string} */ path, /** @type {GatewayUpstream["auth"]} */ auth, /** @type {readonly string[]} */ forwardHeaders, /** @type {readonly string[]} */ stripHeaders) {
  if (raw === undefined || raw === null) return null;
  const header = validateHeaderName(raw, path);
  if (isNeverForwarded(header)) throw new ConfigError(path, `${header} is hop-by-hop and cannot carry the client's address`);
  if (auth !== null && header === auth.header) throw new ConfigError(path, `${header} carries the upstream credential (upstream.auth.header)`);
  if (forwardHeaders.includes(header)) {
    throw new ConfigError(path, `${header} is also in forwardHeaders: the client's own value would compete with the gateway's`);
  }
  if (stripHeaders.includes(header)) throw new ConfigError(path, `${header} is also in stripHeaders`);
  return header;
}

function validateCacheControl(/** @type {RawJson} */ raw, /** @type {string} */ path) {
  if (raw === undefined || raw === "upstream") return "upstream";
  expectString(raw, path);
  const directives = raw.split(",").map((/** @type {string} */ directive) => directive.trim());
  if (!directives.every((/** @type {string} */ directive) => CACHE_DIRECTIVE.test(directive))) {
    throw new ConfigError(path, `must be "upstream" or a Cache-Control value like "public, max-age=60"; got ${show(raw)}`);
  }
  return directives.join(", ");
}

function validateUpstream(/** @type {RawJson} */ raw, /** @type {string} */ path) {
  expectObject(raw, path);
  expectKnownFields(raw, path, UPSTREAM_FIELDS);
  const service = raw.service === undefined
    ? null
    : expectString(raw.service, fieldPath(path, "service"), { pattern: BINDING_NAME, description: BINDING_DESCRIPTION });
  const target = validateUpstreamUrl(raw.url, fieldPath(path, "url"), service);
  const auth = validateAuth(raw.auth, fieldPath(path, "auth"));
  const timeoutMs = raw.timeoutMs === undefined
    ? DEFAULT_TIMEOUT_MS
    : expectInteger(raw.timeoutMs, fieldPath(path, "timeoutMs"), ...boundsOf("upstream", "timeoutMs"));
  // null: no bound on the body's silences.
  const bodyTimeoutMs = raw.bodyTimeoutMs === undefined
    ? DEFAULT_BODY_TIMEOUT_MS
    : raw.bodyTimeoutMs === null
      ? null
      : expectInteger(raw.bodyTimeoutMs, fieldPath(path, "bodyTimeoutMs"), ...boundsOf("upstream", "bodyTimeoutMs"));
  const bodyDeadlineMs = raw.bodyDeadlineMs === undefined || raw.bodyDeadlineMs === null
    ? null
    : expectInteger(raw.bodyDeadlineMs, fieldPath(path, "bodyDeadlineMs"), ...boundsOf("upstream", "bodyDeadlineMs"));
  // One bound per body: its silences or its whole time. Both would read as a body bounded twice when
  // the whole time is not enforced by the watched relay.
  if (bodyDeadlineMs !== null && bodyTimeoutMs !== null) {
    throw new ConfigError(fieldPath(path, "bodyDeadlineMs"), "bounds a body's whole time where its silences are not bounded: set bodyTimeoutMs to null with it (bodyTimeoutMs defaults to 60000)");
  }
  const maxBodyBytes = raw.maxBodyBytes === undefined
    ? DEFAULT_MAX_BODY_BYTES
    : expectInteger(raw.maxBodyBytes, fieldPath(path, "maxBodyBytes"), ...boundsOf("upstream", "maxBodyBytes"));
  const forwardHeaders = validateForwardHeaders(raw.forwardHeaders, fieldPath(path, "forwardHeaders"), auth);
  const stripHeaders = validateStripHeaders(raw.stripHeaders, fieldPath(path, "stripHeaders"), auth, forwardHeaders);
  return Object.freeze({
    ...target,
    service,
    auth,
    timeoutMs,
    bodyTimeoutMs,
    bodyDeadlineMs,
    maxBodyBytes,
    forwardHeaders,
    stripHeaders,
    clientIpHeader: validateClientIpHeader(raw.clientIpHeader, fieldPath(path, "clientIpHeader"), auth, forwardHeaders, stripHeaders),
    cacheControl: validateCacheControl(raw.cacheControl, fieldPath(path, "cacheControl")),
    maskBody: raw.maskBody === undefined ? "auto" : expectOneOf(raw.maskBody, fieldPath(path, "maskBody"), choicesOf("upstream", "maskBody")),
  });
}

function validateRoute(/** @type {RawJson} */ raw, /** @type {number} */ index, /** @type {Map<string, RawJson>} */ rulesByName) {
  const path = fieldPath("routes", index);
  expectObject(raw, path);
  expectKnownFields(raw, path, ROUTE_FIELDS);
  const prefix = validatePath(raw.prefix, fieldPath(path, "prefix"), { allowRoot: true });
  const methods = validateMethods(raw.methods, fieldPath(path, "methods"));
  const rulesPath = fieldPath(path, "rules");
  if (raw.rules === undefined) {
    throw new ConfigError(rulesPath, "is required: a route without rules would be an open proxy to its upstream");
  }
  expectArray(raw.rules, rulesPath, { min: 1, max: MAX_RULES_PER_ROUTE });
  const rules = raw.rules.map((/** @type {RawJson} */ rawRule, /** @type {number} */ i) => {
    const rulePath = fieldPath(rulesPath, i);
    const rule = isLockoutRule(rawRule) ? validateLockoutRule(rawRule, rulePath) : validateRule(rawRule, rulePath);
    const earlier = rulesByName.get(rule.name);
    if (earlier !== undefined) {
      if (earlier.route === index) {
        throw new ConfigError(fieldPath(rulePath, "name"), `${show(rule.name)} is already the name of ${earlier.path}`);
      }
      if (!sameRule(earlier.rule, rule)) {
        throw new ConfigError(
          fieldPath(rulePath, "name"),
          `${show(rule.name)} is defined differently in ${earlier.path}; rules of one name share their counters, so they must be the same rule`,
        );
      }
    } else {
      rulesByName.set(rule.name, { rule, route: index, path: rulePath });
    }
    return rule;
  });
  if (raw.upstream === undefined) throw new ConfigError(fieldPath(path, "upstream"), "is required");
  const upstream = validateUpstream(raw.upstream, fieldPath(path, "upstream"));
  // The rules the limiters check; lockout rules are checked by their own engines (lockout.js).
  // Rules that count on the response are checked around the upstream call (response-rules.js).
  const countsResponse = (/** @type {any} */ rule) => rule.countWhen !== undefined || rule.costFrom !== undefined;
  const activeRuleIndexes = Object.freeze(rules.flatMap((/** @type {GatewayRule & { kind?: string }} */ rule, /** @type {number} */ i) => (rule.mode === "bypass" || rule.kind === "lockout" || countsResponse(rule) ? [] : [i])));
  const responseRuleIndexes = Object.freeze(rules.flatMap((/** @type {GatewayRule} */ rule, /** @type {number} */ i) => (rule.mode !== "bypass" && countsResponse(rule) ? [i] : [])));
  const websocket = raw.websocket === undefined ? null : validateWebSocket(raw.websocket, fieldPath(path, "websocket"), { index, prefix, methods });
  // By store in STORE_ORDER, then (durable rules with a `lease` of their own) by lease, in rule order.
  const groupIds = [...new Set(activeRuleIndexes.map((/** @type {number} */ i) => storeGroupOf(rules[i])))].sort(
    (a, b) => STORE_ORDER.indexOf(a.split("|")[0]) - STORE_ORDER.indexOf(b.split("|")[0]),
  );
  const storeGroups = groupIds.map((id) => Object.freeze(activeRuleIndexes.filter((/** @type {number} */ i) => storeGroupOf(rules[i]) === id)));
  return Object.freeze({
    index,
    prefix,
    methods,
    rules: Object.freeze(rules),
    activeRuleIndexes,
    responseRuleIndexes,
    // The active rules by store, in STORE_ORDER: each group is one all-or-nothing limiter call.
    storeGroups: Object.freeze(storeGroups.filter((group) => group.length > 0)),
    // Whether any rule can ever block here; when none can, a failing limiter need not stop traffic.
    canBlock: rules.some((/** @type {GatewayRule} */ rule) => rule.mode === "enforce" && rule.rollout > 0),
    upstream,
    // WebSocket upgrades: connection and message limits (websocket-config.js), or null.
    websocket,
    // Whether an active rule or the WebSocket limits key by "user" (the bearer token): then a
    // malformed Authorization header is refused (gateway.js).
    keysByUser:
      rules.some((/** @type {GatewayRule} */ rule) => rule.mode !== "bypass" && rule.key.includes("user")) ||
      (websocket?.connections?.key.includes("user") ?? false),
  });
}

// `stores.durable` and `stores.kv`: the host's options for that store (shards, timeoutMs, failMode,
// fallback, ...), validated by the host's registry, which builds the store once for every rule.
function validateStores(/** @type {RawJson} */ raw) {
  if (raw === undefined) return Object.freeze({ durable: Object.freeze({}), kv: Object.freeze({}), redis: Object.freeze({}) });
  expectObject(raw, "stores");
  expectKnownFields(raw, "stores", REMOTE_STORES);
  /** @type {Record<string, object>} */
  const stores = {};
  for (const store of REMOTE_STORES) {
    const path = fieldPath("stores", store);
    if (raw[store] === undefined) {
      stores[store] = Object.freeze({});
      continue;
    }
    const settings = expectObject(raw[store], path);
    // A setting of another store kind (shards on kv) is refused by the host, saying whose it is; each
    // kind's own list is config-fields.js's (the schema's), the host's message the same field.
    expectKnownFields(settings, path, STORE_SETTING_FIELDS);
    hostValidated(path, () => resolveStore({ ...settings, store }));
    // Binding names as wrangler accepts them, as every other binding of the configuration.
    if (settings.bindings !== null && typeof settings.bindings === "object") {
      for (const [name, value] of Object.entries(settings.bindings)) expectString(value, fieldPath(fieldPath(path, "bindings"), name), { pattern: BINDING_NAME, description: BINDING_DESCRIPTION });
    }
    stores[store] = Object.freeze(structuredClone(settings));
  }
  return Object.freeze(stores);
}

// `responses`: how a 429 and the rate-limit headers look, validated as the host validates its own.
function validateResponses(/** @type {RawJson} */ raw) {
  const given = raw === undefined ? {} : expectObject(raw, "responses");
  expectKnownFields(given, "responses", RESPONSE_FIELDS);
  return Object.freeze(hostValidated("responses", () => normalizeResponseOptions({ code: DEFAULT_LIMITED_CODE, ...given })));
}

function validateAdmin(/** @type {RawJson} */ raw, /** @type {readonly GatewayRoute[]} */ routes) {
  if (raw === undefined) return null;
  expectObject(raw, "admin");
  expectKnownFields(raw, "admin", ADMIN_FIELDS);
  const path = validatePath(raw.path, "admin.path", { allowRoot: false });
  const tokenSecret = expectString(raw.tokenSecret, "admin.tokenSecret", { pattern: BINDING_NAME, description: BINDING_DESCRIPTION });
  const shadowed = routes.find((/** @type {GatewayRoute} */ route) => route.prefix.toLowerCase() === path.toLowerCase());
  if (shadowed !== undefined) {
    throw new ConfigError("admin.path", `is also the prefix of routes[${shadowed.index}]; the admin path would hide it`);
  }
  // <admin.path>/blocks and <admin.path>/overrides/<name> are admin endpoints when a rule auto-blocks or
  // reads a live table of overrides (auto-blocks.js, live-overrides-admin.js): no route may hide there.
  for (const endpoint of ["blocks", "overrides"]) {
    const below = `${path}/${endpoint}`.toLowerCase();
    const hidden = routes.find((route) => route.prefix.toLowerCase() === below || route.prefix.toLowerCase().startsWith(`${below}/`));
    if (hidden !== undefined) throw new ConfigError("admin.path", `${path}/${endpoint} is an admin endpoint, and also (or contains) the prefix of routes[${hidden.index}]`);
  }
  return Object.freeze({ path, tokenSecret, dashboard: validateDashboard(raw.dashboard, routes, path) });
}

// `admin.dashboard`: the deployment's dashboard (dashboard/serve.js), or null when absent or false.
function validateDashboard(/** @type {RawJson} */ raw, /** @type {readonly GatewayRoute[]} */ routes, /** @type {string} */ adminPath) {
  if (raw === undefined || raw === false) return null;
  const given = raw === true ? {} : expectObject(raw, "admin.dashboard");
  expectKnownFields(given, "admin.dashboard", DASHBOARD_FIELDS);
  const settings = { ...DASHBOARD_DEFAULTS, ...given };
  const path = validatePath(settings.path, "admin.dashboard.path", { allowRoot: false });
  const lower = path.toLowerCase();
  if (lower === adminPath.toLowerCase() || adminPath.toLowerCase().startsWith(`${lower}/`)) {
    throw new ConfigError("admin.dashboard.path", "must differ from admin.path and not contain it");
  }
  // Served before any route is matched (as admin.path is): a route at or below it would be hidden.
  const shadowed = routes.find((/** @type {GatewayRoute} */ route) => route.prefix.toLowerCase() === lower || route.prefix.toLowerCase().startsWith(`${lower}/`));
  if (shadowed !== undefined) {
    throw new ConfigError("admin.dashboard.path", `is also the prefix of routes[${shadowed.index}] (or contains it); the dashboard would hide it`);
  }
  const binding = expectString(settings.binding, "admin.dashboard.binding", { pattern: BINDING_NAME, description: BINDING_DESCRIPTION });
  const reportIntervalMs = expectInteger(settings.reportIntervalMs, "admin.dashboard.reportIntervalMs", ...boundsOf("dashboard", "reportIntervalMs"));
  if (typeof settings.showKeys !== "boolean") throw new ConfigError("admin.dashboard.showKeys", `must be true or false; got ${JSON.stringify(settings.showKeys)}`);
  return Object.freeze({ path, binding, reportIntervalMs, showKeys: settings.showKeys });
}

// `jwt`: how jwt:<claim> key parts verify tokens (http/jwt.js's options, minus the code-only ones),
// required when a rule keys by a claim. Checked by building a verifier, so the messages are the library's.
function validateJwt(/** @type {RawJson} */ raw, /** @type {readonly GatewayRoute[]} */ routes) {
  const user = routes.flatMap((/** @type {GatewayRoute} */ route) => route.rules.map((/** @type {GatewayRule} */ rule, /** @type {number} */ i) => ({ route, rule, i }))).find(({ rule }) => (rule.key ?? []).some((/** @type {string} */ part) => part.startsWith("jwt:")));
  if (raw === undefined) {
    if (user !== undefined) throw new ConfigError(`routes[${user.route.index}].rules[${user.i}].key`, "keys by a JWT claim: the top-level `jwt` settings (how tokens are verified) are missing");
    return null;
  }
  const settings = expectObject(raw, "jwt");
  expectKnownFields(settings, "jwt", JWT_FIELDS);
  if (settings.secretBinding !== undefined) expectString(settings.secretBinding, "jwt.secretBinding", { pattern: BINDING_NAME, description: BINDING_DESCRIPTION });
  hostValidated("", () => createJwtVerifier(settings));
  return Object.freeze(structuredClone(settings));
}

// `ip`: how the `ip` key part (and lockout's client, and connection limits keyed by ip) finds the
// client's address: the library's ip() options, validated by ip() itself.
function validateIp(/** @type {RawJson} */ raw) {
  if (raw === undefined) return Object.freeze({});
  expectObject(raw, "ip");
  expectKnownFields(raw, "ip", IP_FIELDS);
  try {
    ip(raw);
  } catch (error) {
    // ip() names its field as "ip({ trustForwardedFor })": the configuration's is ip.trustForwardedFor.
    if (error instanceof SluiceConfigError) throw new ConfigError(fieldPath("ip", error.field.replace(/^ip\(\{ (\w+) \}\)$/, "$1")), error.problem);
    throw error;
  }
  return Object.freeze(structuredClone(raw));
}

function validateAnalytics(/** @type {RawJson} */ raw) {
  if (raw === undefined) return Object.freeze({ binding: DEFAULT_ANALYTICS_BINDING });
  expectObject(raw, "analytics");
  expectKnownFields(raw, "analytics", ANALYTICS_FIELDS);
  const binding = expectString(raw.binding, "analytics.binding", { pattern: BINDING_NAME, description: BINDING_DESCRIPTION });
  return Object.freeze({ binding });
}

// `log`: which requests get a log line (gateway.js's lineWanted).
function validateLog(/** @type {RawJson} */ raw) {
  if (raw === undefined) return Object.freeze({ admitted: true });
  expectObject(raw, "log");
  expectKnownFields(raw, "log", LOG_FIELDS);
  if (raw.admitted !== undefined && typeof raw.admitted !== "boolean") throw new ConfigError("log.admitted", `must be true or false; got ${JSON.stringify(raw.admitted)}`);
  return Object.freeze({ admitted: raw.admitted ?? true });
}

/**
 * The validated, frozen configuration. `source` names where `raw` came from, for error messages.
 * Throws ConfigError naming the first field at fault.
 * @param {any} raw
 * @param {string} [source]
 * @returns {GatewayConfig}
 */
export function validateConfig(raw, source = "configuration") {
  try {
    expectObject(raw, "(top level)");
    expectKnownFields(raw, "", TOP_FIELDS);
    expectArray(raw.routes, "routes", { min: 1 });
    const rulesByName = new Map();
    const routes = raw.routes.map((/** @type {GatewayRoute} */ route, /** @type {number} */ i) => validateRoute(route, i, rulesByName));
    routes.forEach((/** @type {GatewayRoute} */ route, /** @type {number} */ i) => {
      // Prefixes match ignoring case (routes.js), so two that differ only in case are one.
      const first = routes.findIndex((/** @type {GatewayRoute} */ other) => other.prefix.toLowerCase() === route.prefix.toLowerCase());
      if (first !== i) {
        throw new ConfigError(`routes[${i}].prefix`, `${show(route.prefix)} is already the prefix of routes[${first}] (prefixes match ignoring case)`);
      }
    });
    const config = /** @type {GatewayConfig} */ (Object.freeze({
      // Where it came from, for errors found later (when the limiters are built, at start-up too).
      source,
      routes: Object.freeze(routes),
      stores: validateStores(raw.stores),
      responses: validateResponses(raw.responses),
      admin: validateAdmin(raw.admin, routes),
      analytics: validateAnalytics(raw.analytics),
      ip: validateIp(raw.ip),
      // How far memory and KV rules are from exact (features/accuracy/probe.js): null when off.
      accuracy: raw.accuracy === undefined ? null : Object.freeze(hostValidated("", () => normalizeAccuracy(raw.accuracy))),
      jwt: validateJwt(raw.jwt, routes),
      // Allow and deny lists (features/lists/access-list.js), checked as the library checks them.
      lists: raw.lists === undefined ? null : (hostValidated("lists", () => createAccessList(raw.lists)), Object.freeze(structuredClone(raw.lists))),
      log: validateLog(raw.log),
    }));
    validated.add(config);
    return config;
  } catch (error) {
    if (error instanceof ConfigError && error.source === undefined) throw new ConfigError(error.path, error.problem, source);
    throw error;
  }
}

/**
 * Whether `config` came out of validateConfig.
 * @param {any} config
 * @returns {config is GatewayConfig}
 */
export function isValidatedConfig(config) {
  return validated.has(config);
}

/**
 * The configuration to serve: `env.SLUICE_CONFIG` when set (a JSON string, or a table in wrangler's
 * [vars]), else `bundled` (the parsed gateway.config.json). Either way validated; throws ConfigError.
 * @param {unknown} bundled
 * @param {any} env
 * @param {string} [bundledName]
 * @returns {GatewayConfig}
 */
export function resolveConfig(bundled, env, bundledName = "gateway.config.json") {
  const override = env?.[CONFIG_VAR];
  if (override === undefined || override === null || override === "") return validateConfig(bundled, bundledName);
  if (isPlainObject(override)) return validateConfig(override, CONFIG_VAR);
  if (typeof override !== "string") {
    throw new ConfigError(CONFIG_VAR, `must be the configuration as a JSON string or a table; got ${show(override)}`, CONFIG_VAR);
  }
  let parsed;
  try {
    parsed = JSON.parse(override);
  } catch (error) {
    throw new ConfigError(CONFIG_VAR, `is not valid JSON (${/** @type {Error} */ (error).message})`, CONFIG_VAR);
  }
  return validateConfig(parsed, CONFIG_VAR);
}

