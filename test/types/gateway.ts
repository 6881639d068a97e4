// The gateway (worker/gateway/gateway.js), as README.md's "Embedding: createGateway" uses it: a
// configuration typed as written, the options, and the limiter seam.
import bundled from "../../gateway.config.json";
import {
  ConfigError,
  createGateway,
  createLimiterFactory,
  GatewayMetrics,
  resolveConfig,
  validateConfig,
  type Gateway,
  type GatewayConfig,
  type GatewayConfigInput,
  type GatewayLimiter,
  type LimiterFactory,
} from "../../types/worker/gateway/gateway.js";

interface Env {
  SLUICE_CONFIG?: string;
  UPSTREAM_TOKEN: string;
  SLUICE_DO: DurableObjectNamespace;
  SLUICE_KV: KVNamespace;
}
declare const env: Env;

const input: GatewayConfigInput = {
  routes: [
    {
      prefix: "/v1/geo",
      methods: ["GET", "HEAD"],
      rules: [
        { name: "geo", algorithm: "sliding-counter", limit: 60, windowSec: 60, key: ["ip", "route"] },
        { name: "geo-daily", algorithm: "token-bucket", limit: 10_000, windowSec: 86_400, burst: 500, key: "apiKey:x-api-key", store: "durable", mode: "enforce", rollout: 0.25 },
        { name: "geo-shadow", algorithm: "gcra", limit: 5, windowMs: 1_000, key: "user", mode: "shadow", keyCapacity: 10_000 },
      ],
      upstream: {
        url: "https://api.example.com/v2/geo",
        auth: { secret: "UPSTREAM_TOKEN", header: "x-api-key", scheme: "" },
        timeoutMs: 5_000,
        forwardHeaders: ["authorization", "cf-ipcountry"],
        cacheControl: "public, max-age=60",
      },
    },
  ],
  stores: {
    durable: { shards: 4, timeoutMs: 80, fallback: ["kv", "memory"], failMode: "closed" },
    kv: { failMode: "open", bindings: { kv: "RATE_KV" } },
  },
  responses: { code: "rate_limited", problemJson: true, headers: "draft" },
  admin: { path: "/_sluice/metrics", tokenSecret: "SLUICE_ADMIN_TOKEN" },
  analytics: { binding: "SLUICE_ANALYTICS" },
};

// At module scope, so configuration errors fail at start-up: from the bundled JSON or SLUICE_CONFIG.
const config: GatewayConfig = resolveConfig(bundled, env);
const gateway: Gateway = createGateway(config);
export default { fetch: (request, env, ctx) => gateway.fetch(request, env, ctx) } satisfies ExportedHandler<Env>;

// The options, and the limiter seam: a factory wrapping sluice's own.
const own: LimiterFactory = createLimiterFactory({ stores: config.stores, clock: () => 1_700_000_000_000 });
const watched: LimiterFactory = (rules, { route }) => {
  console.log(route.prefix, rules.map((rule) => `${rule.name}:${rule.store}:${rule.mode}:${rule.rollout}`));
  const limiter: GatewayLimiter = own(rules, { route });
  return limiter;
};
const embedded = createGateway(input, {
  now: () => 1_700_000_000_000,
  log: (line) => console.log(line),
  metrics: new GatewayMetrics(validateConfig(input, "inline")),
  limiterFactory: watched,
});
const prometheus: string = embedded.metrics.toPrometheus();

try {
  validateConfig({ routes: [] });
} catch (error) {
  if (error instanceof ConfigError) console.error(error.path, error.problem, error.source);
}

// What the types refuse.
const route = input.routes[0];
// @ts-expect-error an unknown algorithm
createGateway({ routes: [{ ...route, rules: [{ name: "x", algorithm: "sliding-window", limit: 1, windowSec: 1, key: "ip" }] }] });
// @ts-expect-error a rule needs its key
createGateway({ routes: [{ ...route, rules: [{ name: "x", algorithm: "gcra", limit: 1, windowSec: 1 }] }] });
// @ts-expect-error an unknown key part
createGateway({ routes: [{ ...route, rules: [{ name: "x", algorithm: "gcra", limit: 1, windowSec: 1, key: "cookie" }] }] });
// @ts-expect-error CONNECT and TRACE are never forwarded
createGateway({ routes: [{ ...route, methods: ["CONNECT"] }] });
// @ts-expect-error a mode is enforce, shadow or bypass
createGateway({ routes: [{ ...route, rules: [{ ...route.rules[0], mode: "dry-run" }] }] });
// @ts-expect-error the validated configuration is frozen
config.routes[0].rules[0].mode = "bypass";

export { prometheus };
