// gateway.config.json described once, declaratively: every object of the configuration, its fields,
// their types, bounds and meaning. The validators (config.js, rule-config.js, lockout-rule.js,
// websocket-config.js) take their known fields, enumerations and numeric bounds from here, and
// config-schema.js turns the same table into the JSON Schema editors read (gateway.config.schema.json).
// What the library checks itself (a rule's quota, a store's settings, lists, JWT settings) is described
// here as strictly as one field at a time can say it (a store's settings per store kind); the library's
// checks stay authoritative for what spans fields (jwt needs keys to verify with; fallback's order).
// test/js/gateway-config-schema.test.js fails when the table, the validator and the schema disagree.

import { ALGORITHMS } from "../../wasm-bindings/sluice.js";
import { MODES } from "../src/engine/mode.js";
import { HEADER_MODES } from "../src/http/headers.js";
import { CF_FIELDS } from "../src/http/characteristics.js";
import { MAX_LIST_ENTRIES } from "../src/features/lists/access-list.js";
import { LOCATION_HINTS } from "../src/stores/location-hints.js";

// CONNECT and TRACE are left out on purpose: a tunnel and a request echo have no place in a gateway.
/** @type {readonly ("GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS")[]} */
export const METHODS = Object.freeze(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
export const STORES = Object.freeze(["memory", "durable", "kv", "redis"]);
export const KEY_PARTS = Object.freeze(["ip", "user", "route", "apiKey:<header>", "cf:<field>", "cookie:<name>", "query:<name>", "jwt:<claim>"]);

// Binding names as wrangler accepts them for [vars], secrets and service bindings.
export const BINDING_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
// An HTTP field name (RFC 9110 token).
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/;
// Rule names appear in response headers (RateLimit-Policy), metric labels and log lines.
export const RULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
// A lockout rule's name: shorter (it is part of the lockout's keys).
export const LOCKOUT_RULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/;

/**
 * One field: a JSON Schema fragment (type, enum, bounds, pattern, items, or `ref` to another object of
 * the table) plus `description` and `required`.
 * @typedef {{ description: string, required?: boolean, ref?: string, type?: string | string[], enum?: readonly unknown[],
 *   minimum?: number, maximum?: number, exclusiveMinimum?: number, pattern?: RegExp, items?: Field, minItems?: number, maxItems?: number,
 *   anyOf?: Field[], const?: unknown }} Field
 */

// The table's shorthands. `extra` adds keywords to (or replaces those of) the field they make.
/** @typedef {Partial<Field>} FieldExtra */
/** @param {string} description @param {FieldExtra} [extra] @returns {Field} */
const text = (description, extra = {}) => ({ type: "string", description, ...extra });
/** @param {string} description @param {number} minimum @param {number} maximum @param {FieldExtra} [extra] @returns {Field} */
const whole = (description, minimum, maximum, extra = {}) => ({ type: "integer", description, minimum, maximum, ...extra });
/** @param {string} description @param {number} minimum @param {number} maximum @returns {Field} */
const number = (description, minimum, maximum) => ({ type: "number", description, minimum, maximum });
/** @param {string} description @returns {Field} */
const flag = (description) => ({ type: "boolean", description });
/** @param {readonly unknown[]} values @param {string} description @returns {Field} */
const oneOf = (values, description) => ({ enum: values, description });
/** @param {string} ref another object of the table @param {string} description @param {FieldExtra} [extra] @returns {Field} */
const object = (ref, description, extra = {}) => ({ ref, description, ...extra });
/** @param {string | string[]} type @param {string} description @returns {Field} */
const loose = (type, description) => ({ type, description });
/** @param {string} description @param {FieldExtra} [extra] @returns {Field} */
const binding = (description, extra = {}) => text(description, { pattern: BINDING_NAME, ...extra });
/** @param {string} description @param {FieldExtra} [extra] @returns {Field} */
const key = (description, extra = {}) => ({
  anyOf: [
    { type: "string", description: "one key part" },
    { type: "array", items: { type: "string", description: "a key part" }, minItems: 1, maxItems: 4, description: "key parts combined into one key" },
  ],
  description: `${description}: ${KEY_PARTS.join(", ")} (cf:<field> takes ${Object.keys(CF_FIELDS).join(", ")}), or a list of up to 4 of them`,
  ...extra,
});
/** @param {Field} field @returns {Field} */
const required = (field) => ({ ...field, required: true });
/** The fallback chain's settings, every remote store's; `fallbacks`: the stores it may fall back to, in order. @param {string[]} fallbacks @returns {Record<string, Field>} */
const chainFields = (fallbacks) => ({
  fallback: { type: "array", items: oneOf(fallbacks, "a store"), maxItems: fallbacks.length, description: `Who decides, in this order (${fallbacks.join(" before ")}), when the store fails; [] for none` },
  failMode: oneOf(["open", "closed"], "When no store can answer"),
  timeoutMs: { type: "number", exclusiveMinimum: 0, description: "How long each store of the chain may take, in ms (default: adaptive)" },
  breaker: { anyOf: [flag("on or off"), object("breaker", "the breaker's settings")], description: "The circuit breaker" },
  preFilter: flag("Deny from the isolate, with no round trip, a key the store denied until its retry time (default true)"),
  logIntervalMs: { type: "number", minimum: 0, description: "Fallbacks are logged at most once per interval, in ms (default 60000)" },
});
/** A lease's settings (leases.js's checkLeaseOptions). @returns {Record<string, Field>} */
const leaseFields = () => ({
  leaseMs: whole("How long a lease lasts, in ms", 1, 3_600_000),
  maxLeaseUnits: whole("The most units one lease carries", 1, 2 ** 20),
  maxKeys: { type: "integer", minimum: 1, description: "How many keys an isolate holds leases for" },
  refill: flag("Take the next lease before this one runs out (default true)"),
});

/** @type {Readonly<Record<string, Readonly<Record<string, Field>>>>} */
export const CONFIG_FIELDS = Object.freeze({
  config: {
    $schema: text("The JSON Schema of this file, for editors (./gateway.config.schema.json); ignored by the gateway"),
    routes: required({ type: "array", items: object("route", "a route"), minItems: 1, description: "The routes, at least one; a request goes to the route with the longest matching prefix" }),
    stores: object("stores", "Settings of the durable, kv and redis stores, for every rule that uses them"),
    responses: object("responses", "How 429s and the rate-limit headers look"),
    admin: object("admin", "The metrics endpoint (and the dashboard, and the blocks of auto-blocking rules); without it there is none"),
    analytics: object("analytics", "The Analytics Engine dataset binding to write to"),
    ip: object("ip", "How the ip key part finds the client (the library's ip() options)"),
    accuracy: object("accuracy", "Measure the memory and KV rules against exact counting (docs/accuracy.md)"),
    jwt: object("jwt", "How jwt:<claim> key parts verify tokens (http/jwt.js's options, without secret: use secretBinding); required when a rule keys by a claim"),
    lists: object("lists", "Allow and deny lists of addresses, countries and ASNs (docs/lists.md)"),
    log: object("log", "Which requests get a log line"),
  },
  route: {
    prefix: required(text("/ or a path like /v1/geo: plain segments, no trailing /, at most 96 characters; matches whole segments, ignoring ASCII case")),
    methods: required({ type: "array", items: oneOf(METHODS, "a method"), minItems: 1, description: `The methods forwarded, from ${METHODS.join(", ")} (others answer 405)` }),
    rules: required({
      type: "array",
      items: { anyOf: [object("rule", "a rate-limit rule"), object("lockoutRule", 'an account lockout rule ("kind": "lockout")')], description: "a rule" },
      minItems: 1,
      maxItems: 16,
      description: "1 to 16 rules, checked for every request (a route without rules would be an open proxy)",
    }),
    upstream: required(object("upstream", "Where the requests go")),
    websocket: object("websocket", "WebSocket upgrades of this route: connection and message limits"),
  },
  upstream: {
    url: required(text("The upstream's base URL in canonical form, https (http only through a service binding or to localhost); no credentials, query or fragment")),
    service: binding("A service binding: requests go to that Worker instead of the network"),
    auth: object("auth", "The upstream credential, from a Worker secret"),
    timeoutMs: whole("How long to wait for the upstream's response head, in ms (default 10000); then 504", 1, 300_000),
    bodyTimeoutMs: whole("How long the upstream may fall silent in the middle of its body, in ms (default 60000), or null for no bound", 1, 3_600_000, { type: ["integer", "null"] }),
    bodyDeadlineMs: whole("With bodyTimeoutMs null: the longest a body may take from its head to its end, in ms (default none); a body not masked is then piped by the runtime", 1, 86_400_000, { type: ["integer", "null"] }),
    maxBodyBytes: whole("The largest request body forwarded, in bytes (default 1048576); larger: 413", 0, 104_857_600),
    forwardHeaders: { type: "array", items: text("a header name", { pattern: HEADER_NAME }), description: "Headers stripped by default to forward anyway on this route" },
    stripHeaders: { type: "array", items: text("a header name", { pattern: HEADER_NAME }), description: "More client headers never forwarded on this route" },
    clientIpHeader: text("A header the gateway sets to the client's address (cf-connecting-ip); default none", { type: ["string", "null"], pattern: HEADER_NAME }),
    cacheControl: text('Cache-Control of successful responses: "upstream" (default) keeps the upstream\'s, anything else replaces it'),
    maskBody: oneOf(["auto", "always", "never"], 'Which response bodies are read for secrets: "auto" (default: all but images, audio, video, fonts), "always", "never"'),
  },
  auth: {
    secret: required(binding("The Worker secret holding the credential")),
    header: text("The header carrying it (default authorization)", { pattern: HEADER_NAME }),
    scheme: text('The scheme before it (default "Bearer" for authorization, none otherwise; "" for none)'),
  },
  rule: {
    name: required(text("1 to 64 letters, digits, _, . or -: in headers, metrics and logs; rules of one name share their counters", { pattern: RULE_NAME })),
    algorithm: required(oneOf(ALGORITHMS, "The algorithm (docs/core.md#algorithms)")),
    limit: required(whole("Requests per window, or the sustained rate per window for the buckets and GCRA", 1, 2 ** 31)),
    windowSec: loose("number", "The window in seconds (whole milliseconds); give windowSec or windowMs"),
    windowMs: loose("integer", "The window in milliseconds; give windowSec or windowMs"),
    burst: whole("token-bucket, leaky-bucket and gcra: what can pass at once (default: limit)", 1, 2 ** 31),
    keyCapacity: whole("Keys the rule's table holds in an isolate before it evicts the least used (default 50000)", 1, 2 ** 32 - 1),
    blockSec: loose("number", "A block duration: a key that exceeds the rule is denied everything this long (docs/blocks.md)"),
    blockMs: loose("integer", "The block duration in milliseconds"),
    overrides: { type: "array", items: object("override", "an override"), description: "Per-key limits for exact keys and prefixes (docs/overrides.md)" },
    key: required(key("Whose requests count together")),
    store: oneOf(STORES, 'Where the counts live (default "memory")'),
    mode: oneOf(MODES, '"enforce" (default): a denial answers 429; "shadow": counted, let through; "bypass": not checked'),
    rollout: number("enforce rules only: the share of keys enforced, from 0 to 1 (default 1)", 0, 1),
    lease: { anyOf: [flag("on or off"), object("durableLease", "the lease settings")], description: 'store "durable" only: this rule\'s leases (docs/leases.md)' },
    countWhen: object("countWhen", "Count only the requests whose upstream response matches: checked before the upstream call, charged after it (docs/response-count.md)"),
    costFrom: object("costFrom", "Charge what the upstream's response header says the request cost, after the response (docs/response-count.md#cost-from-the-origin)"),
    liveOverrides: object("liveOverrides", "Per-key limits from a live table (a Durable Object) changed without a redeploy, at <admin.path>/overrides/<name> (docs/overrides.md); not with overrides"),
    autoBlock: object("autoBlock", "Auto-blocking: a client this rule answers 429 `after` times within the span is refused everything for the block (docs/blocks.md#auto-blocking)"),
  },
  override: {
    key: text("An exact key, as the rule's key gives it (key:<api key>, ip:<address>)"),
    prefix: text("A prefix of keys"),
    limit: required(whole("The limit of the keys it names", 1, 2 ** 31)),
  },
  countWhen: {
    status: required({
      type: "array",
      items: { anyOf: [whole("a status", 100, 599), text("an inclusive range", { pattern: /^[1-5][0-9][0-9]-[1-5][0-9][0-9]$/ })], description: "a status, or a range written \"500-599\"" },
      minItems: 1,
      maxItems: 32,
      description: "The upstream statuses that count: 1 to 32 statuses and inclusive ranges, each within 100-599",
    }),
  },
  costFrom: {
    header: required(text("The response header holding the cost (a token of 1 to 64 characters); removed before the client sees the response", { pattern: /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/ })),
    max: whole("The most one response may cost (default 1000): a larger value charges max", 1, 2 ** 31),
    default: whole("What a response without a valid cost charges (default 1)", 1, 2 ** 31),
  },
  liveOverrides: {
    binding: binding("The Durable Object binding of SluiceOverridesObject (default SLUICE_OVERRIDES)"),
    name: text("The table (default overrides): 1 to 64 letters, digits, _, . or -", { pattern: /^[A-Za-z0-9_.-]{1,64}$/ }),
    refreshMs: whole("How old an isolate's copy of the table may be before a request fetches it, in ms (default 10000)", 100, 86_400_000),
  },
  autoBlock: {
    after: required(whole("How many 429s of the rule, within the span, spend a client's strikes", 1, 1000)),
    withinSec: loose("number", "The span the 429s are counted in, in seconds; give withinSec or withinMs"),
    withinMs: loose("integer", "The span in milliseconds"),
    blockSec: loose("number", "How long the client is then refused everything, in seconds; give blockSec or blockMs"),
    blockMs: loose("integer", "The block in milliseconds"),
    maxListed: whole("How many blocks each isolate's list of blocks keeps (default 1000)", 1, 100_000),
  },
  lockoutRule: {
    name: required(text("1 to 40 letters, digits, _, . or -", { pattern: LOCKOUT_RULE_NAME })),
    kind: required({ const: "lockout", description: "An account lockout rule (docs/lockout.md#in-the-gateway)" }),
    key: required(text('"body:<field>": the request body field naming the account')),
    store: oneOf(["durable", "memory"], 'Where the failures are counted (default "durable")'),
    mode: oneOf(["enforce", "shadow", "bypass"], 'Default "enforce"'),
    client: oneOf(["ip", false], 'Count per account and client IP ("ip", default), or per account only (false)'),
    normalize: flag("Normalize the account name before counting (default true)"),
    maxBodyBytes: whole("The largest body read for the account, in bytes", 64, 1_048_576),
    maxFailures: loose("integer", "Failures that lock the account"),
    windowSec: loose("number", "The span failures are counted in"),
    lockSec: loose("number", "How long a lock lasts"),
    account: loose("object", "Failures from any client that lock the account: { maxFailures, windowSec, lockSec }"),
    backoff: loose("object", "Lock durations that grow with repeated locks"),
    failureStatuses: loose("array", "Upstream statuses that count as failures (default 401)"),
    resetOnSuccess: flag("A success forgets the failures"),
    keyCapacity: loose("integer", "Keys the lockout's table holds"),
    failMode: oneOf(["closed", "open"], "When the store cannot answer"),
    fallback: loose("array", "Stores that decide when the primary fails"),
  },
  websocket: {
    connections: object("connections", "Open connections per key"),
    messages: object("messages", "The client's messages per connection and per key"),
    maxMessageBytes: whole("The largest message a client may send, in bytes (default 1048576); larger: closed with 1009", 1, 33_554_432),
  },
  connections: {
    max: required(whole("Open connections per key", 1, 2 ** 16)),
    key: required(key("Whose connections are counted")),
    leaseSec: number("How long a connection whose isolate vanished keeps its slot (default 60)", 0.001, 2 ** 31 / 1000),
    store: oneOf(["memory", "durable"], 'Where connections are counted (default "memory")'),
    timeoutMs: whole("How long the store may take", 1, 60_000),
    status: whole("The status of a refused upgrade (default 429)", 400, 599),
  },
  messages: {
    perConnection: loose("object", "{ limit, windowSec, algorithm }: messages per connection"),
    perKey: loose("object", "{ limit, windowSec, algorithm }: messages per key"),
    onLimited: oneOf(["error", "close"], 'What a limited message gets: an "error" frame, or "close"'),
    closeAfter: loose("integer", "Close after this many limited messages"),
    closeCode: loose("integer", "1008, or 4000 to 4999"),
    closeReason: loose("string", "The close frame's reason"),
  },
  stores: {
    durable: object("durableSettings", "The durable store's settings (docs/gateway.md#stores)"),
    kv: object("kvSettings", "The kv store's settings"),
    redis: object("redisSettings", "The redis store's settings"),
  },
  durableSettings: {
    bindings: object("durableBindings", "The bindings in wrangler.toml"),
    shards: { anyOf: [whole("how many objects", 1, 4096), { const: "key", description: "one object per key" }], description: "How many objects share the keys (default 1), or \"key\" for one per key" },
    lease: { anyOf: [flag("on or off"), object("durableLease", "the lease settings")], description: "Leased quotas (docs/leases.md)" },
    ...chainFields(["kv", "memory"]),
  },
  kvSettings: {
    bindings: object("kvBindings", "The binding in wrangler.toml"),
    ...chainFields(["memory"]),
  },
  redisSettings: {
    bindings: object("redisBindings", "The env variables (secrets) and binding it reads"),
    lease: { anyOf: [flag("on or off"), object("redisLease", "the lease settings")], description: "Leased quotas (docs/leases.md)" },
    ...chainFields(["kv", "memory"]),
  },
  durableBindings: {
    durable: binding("The Durable Object binding of SluiceDurableObject (default SLUICE_DO)"),
    kv: binding("The KV namespace binding of the kv fallback (default SLUICE_KV)"),
  },
  kvBindings: {
    kv: binding("The KV namespace binding (default SLUICE_KV)"),
  },
  redisBindings: {
    kv: binding("The KV namespace binding of the kv fallback (default SLUICE_KV)"),
    redisUrl: binding("The env variable holding the Upstash REST URL (default UPSTASH_REDIS_REST_URL)"),
    redisToken: binding("The secret holding the Upstash REST token (default UPSTASH_REDIS_REST_TOKEN)"),
  },
  durableLease: {
    ...leaseFields(),
    locationHint: oneOf(LOCATION_HINTS, "Lend through a regional object near this location (docs/leases.md)"),
  },
  redisLease: leaseFields(),
  breaker: {
    failures: { type: "integer", minimum: 1, description: "Failures in a row that open the breaker" },
    cooldownMs: { type: "number", exclusiveMinimum: 0, description: "How long it stays open, in ms" },
  },
  jwt: {
    secretBinding: binding("The Worker secret holding the HS256 secret (at least 32 characters)"),
    keys: { type: "array", items: loose("object", "a public key as a JWK (RSA for RS256, EC P-256 for ES256)"), description: "Public keys; kid picks one" },
    jwksUrl: text("Where the public keys are published (a JWKS document), https only", { pattern: /^https:\/\/[^/\s]+\// }),
    algorithms: { type: "array", items: oneOf(["HS256", "RS256", "ES256"], "an algorithm"), minItems: 1, description: "The algorithms accepted (default: those the keys given allow)" },
    audience: { anyOf: [text("an audience", { pattern: /./ }), { type: "array", items: text("an audience", { pattern: /./ }), minItems: 1, description: "audiences" }], description: "The token's aud must name one of these" },
    issuer: text("The token's iss must be this", { pattern: /./ }),
    clockToleranceSec: number("Leeway for exp and nbf, in seconds (default 0)", 0, 300),
    requireExp: flag("Refuse tokens without exp (default true)"),
    cookie: text("Read the token from this cookie instead of Authorization: Bearer", { pattern: /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/ }),
    jwksCacheMs: { type: "number", minimum: 1000, description: "How long fetched keys are kept, in ms (default 600000)" },
  },
  lists: {
    allow: object("listEntries", "Requests that skip the route's rules"),
    deny: object("listEntries", "Requests refused with 403"),
  },
  listEntries: {
    ips: { type: "array", items: text("an IPv4 or IPv6 address or CIDR block"), maxItems: MAX_LIST_ENTRIES, description: `Addresses and CIDR blocks, at most ${MAX_LIST_ENTRIES}` },
    countries: { type: "array", items: text("a two-letter code (request.cf.country; T1 is Tor, XX unknown), any case", { pattern: /^[A-Za-z][A-Za-z0-9]$/ }), maxItems: MAX_LIST_ENTRIES, description: `Countries, at most ${MAX_LIST_ENTRIES}` },
    asns: { type: "array", items: whole("an AS number", 0, 4_294_967_295), maxItems: MAX_LIST_ENTRIES, description: `Autonomous systems (request.cf.asn), at most ${MAX_LIST_ENTRIES}` },
  },
  responses: {
    code: { anyOf: [loose("string", "a code"), loose("number", "a number")], description: 'The code of a 429\'s body (default "sluice_rate_limited")' },
    problemJson: flag("Answer 429s as application/problem+json (default false)"),
    headers: oneOf(HEADER_MODES, 'Which rate-limit header fields responses carry (default "both")'),
  },
  admin: {
    path: required(text("The metrics path, e.g. /_sluice/metrics (not /, not a route prefix)")),
    tokenSecret: required(binding("The Worker secret holding the bearer token")),
    dashboard: { anyOf: [flag("on (the defaults) or off"), object("dashboard", "the dashboard's settings")], description: "The live dashboard (docs/dashboard.md)" },
  },
  dashboard: {
    path: text("Where the dashboard is served (default /_sluice/dashboard)"),
    binding: binding("The Durable Object binding its counters add up in (default SLUICE_DASHBOARD)"),
    reportIntervalMs: whole("How often each isolate reports, in ms (default 5000)", 0, 3_600_000),
    showKeys: flag("Show client keys as they are (default false)"),
  },
  analytics: {
    binding: required(binding("The Analytics Engine dataset binding (default SLUICE_ANALYTICS)")),
  },
  log: {
    admitted: flag("Log the requests of a route that its rules admitted and its upstream answered below 500 (default true); refusals, failures, shadow denials and admin requests are logged whatever this says"),
  },
  ip: {
    trustForwardedFor: { anyOf: [flag("trust it or not"), loose("integer", "how many proxies"), loose("array", "the proxies' CIDRs")], description: "How far x-forwarded-for is believed (default false)" },
    ipv6Prefix: loose("integer", "IPv6 clients are keyed by this prefix (default 64)"),
  },
  accuracy: {
    sample: required(number("The share of keys checked against exact counting", 0, 1)),
    binding: binding("The Durable Object binding of the exact reference"),
  },
});

/** fieldsOf lists the fields the configuration's object `name` accepts, in the table's order. @param {string} name */
export function fieldsOf(name) {
  return Object.keys(CONFIG_FIELDS[name]);
}

/** boundsOf is the [minimum, maximum] the table gives `field` of object `name`. @param {string} name @param {string} field */
export function boundsOf(name, field) {
  const spec = CONFIG_FIELDS[name][field];
  return /** @type {[number, number]} */ ([spec.minimum, spec.maximum]);
}

/** choicesOf is the enumeration the table gives `field` of object `name`. @param {string} name @param {string} field */
export function choicesOf(name, field) {
  return /** @type {readonly any[]} */ (CONFIG_FIELDS[name][field].enum);
}
