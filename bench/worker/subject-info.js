// Who is who in the bench, as plain data shared by the Worker (bench/worker/subjects.js) and the
// report (bench/run.js). `family`: sluice, peer (a library, pinned in package.json), plain-js (the
// floor of hand-written JS, in bench/worker/plain-js.js) or harness (the loop alone, deciding nothing:
// the ceiling of every rate). Every ratio is against BASELINE.
export const BASELINE = "plain-fixed-window";

export const SUBJECT_INFO = Object.freeze({
  "plain-fixed-window": { family: "plain-js", algorithm: "fixed window", label: "plain JS Map, fixed window" },
  "plain-sliding-counter": { family: "plain-js", algorithm: "sliding counter", label: "plain JS Map, sliding counter" },
  "plain-token-bucket": { family: "plain-js", algorithm: "token bucket", label: "plain JS Map, token bucket" },
  "sluice-fixed-window": { family: "sluice", algorithm: "fixed window", label: "sluice, fixed window" },
  "sluice-sliding-counter": { family: "sluice", algorithm: "sliding counter", label: "sluice, sliding counter" },
  "sluice-token-bucket": { family: "sluice", algorithm: "token bucket", label: "sluice, token bucket" },
  "sluice-leaky-bucket": { family: "sluice", algorithm: "leaky bucket", label: "sluice, leaky bucket" },
  "sluice-gcra": { family: "sluice", algorithm: "GCRA", label: "sluice, GCRA" },
  "sluice-sliding-log": { family: "sluice", algorithm: "sliding log", label: "sluice, sliding log (limit 10)" },
  "harness-only": { family: "harness", algorithm: "none", label: "no-op limiter (Date.now, the key's length and last character; admits)" },
  "rate-limiter-flexible": { family: "peer", algorithm: "fixed window", label: "rate-limiter-flexible RateLimiterMemory" },
  "hono-rate-limiter-store": { family: "peer", algorithm: "fixed window", label: "hono-rate-limiter MemoryStore" },
  "express-rate-limit-store": { family: "peer", algorithm: "fixed window", label: "express-rate-limit MemoryStore" },
});
