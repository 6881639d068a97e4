rateLimit({ key, limit: 10_000, windowSec: 60, store: "durable", lease: true });
rateLimit({ key, limit: 10_000, windowSec: 60, store: "durable", lease: { leaseMs: 500, maxLeaseUnits: 200 } });
