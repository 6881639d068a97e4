// Figure 7: the Durable Object store (worker/src/stores/durable.js over SluiceDurableObject), driven
// from one isolate through createDurableStore, as a Worker's requests reach it.
//
// Locally the object runs in the same workerd process as the isolate: a round trip costs the RPC's
// serialization and scheduling but no network, so these rates are a ceiling for one object, not what
// an object in another location answers.
import { DurableObject } from "cloudflare:workers";
import { createDurableStore } from "../../worker/src/stores/durable.js";
import { createMemoryStore } from "../../worker/src/stores/memory.js";
import { keyOf } from "./workload.js";

import { SluiceDurableObject } from "../../worker/src/stores/durable-object.js";
import { countingNamespace } from "./counting-namespace.js";

export { SluiceDurableObject };

/**
 * BenchMemoryObject is SluiceDurableObject keeping nothing in storage: the same RPC and the same core
 * decisions from memory, with no write to wait for. Beside it, the real object shows what durability
 * costs (the brief's floor: within 1.5 x of this).
 */
export class BenchMemoryObject extends SluiceDurableObject {
  static persistence = false;
}

/**
 * BenchEchoObject answers decide() with a fixed Outcome of the same shape and no core: the round trip
 * alone, the floor under any store kept in a Durable Object. With `write`, it first upserts one SQLite
 * row per check (a counter), the least an object that counts durably must do: the object's output
 * gate then holds the answer until the write is committed, as it holds sluice's.
 */
export class BenchEchoObject extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS echo (key TEXT PRIMARY KEY, n INTEGER NOT NULL)");
  }

  decide(checks, options = {}) {
    if (options.write === true) {
      for (const { key } of checks) {
        this.ctx.storage.sql.exec("INSERT INTO echo (key, n) VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET n = n + 1", key);
      }
    }
    const decision = { allowed: true, limit: 1, remaining: 0, resetMs: 1, retryAfterMs: 0 };
    return { ...decision, decidingCheck: 0, checks: checks.map(() => decision) };
  }
}

export const DURABLE_BINDING = "SLUICE_DO";
export const ECHO_BINDING = "BENCH_ECHO";
export const MEMORY_OBJECT_BINDING = "BENCH_MEMORY_OBJECT";
const CLIENTS = 1000;
const LIMIT = 1_000_000_000;
const WINDOW_MS = 3_600_000;

// Normalized rules as options.js makes them (`id` = name|algorithm|limit|windowMs|burst).
const RULES = Array.from({ length: 4 }, (_, i) => {
  const name = `bench-${i}`;
  return Object.freeze({ id: `${name}|fixed-window|${LIMIT}|${WINDOW_MS}|0`, name, algorithm: "fixed-window", limit: LIMIT, windowMs: WINDOW_MS, burst: 0, keyCapacity: CLIENTS });
});

// The checks of request `i`: `rules` rules on one client's key, or each rule on a key of its own.
function checksOf(i, rules, spread) {
  const checks = new Array(rules);
  for (let r = 0; r < rules; r++) checks[r] = { rule: RULES[r], key: keyOf(spread ? (i * rules + r) % CLIENTS : i % CLIENTS), cost: 1 };
  return checks;
}

/**
 * timeDurable sends requests of `rules` checks each to `target` ("durable": SluiceDurableObject through
 * createDurableStore with `shards`; "durable-memory": the same object keeping nothing in storage;
 * "echo": the empty round trip; "echo-write": the round trip with a SQLite row written per check;
 * "memory": the isolate's own store),
 * `inFlight` at a time, for at least minMs. Returns requests, decisions, ms and round trips, and for
 * "durable" what the objects' storageStats() counted over the timed part: calls, calls answered from
 * reserved units, rows written.
 */
export async function timeDurable({ target, rules, shards, spread, inFlight, minMs }, env) {
  const counter = { rpcs: 0 };
  let store;
  const storeName = `bench-${target}-${shards}`;
  if (target === "memory") store = createMemoryStore();
  else {
    const echo = target === "echo" || target === "echo-write";
    const namespace = env[echo ? ECHO_BINDING : target === "durable-memory" ? MEMORY_OBJECT_BINDING : DURABLE_BINDING];
    const binding = countingNamespace(namespace, counter, target === "echo-write" ? { write: true } : {});
    store = createDurableStore({ binding, shards, name: storeName });
  }
  let requests = 0;
  let admitted = 0;
  const decide = async (i) => {
    const outcome = await store.decide(checksOf(i, rules, spread), { nowMs: Date.now(), env });
    if (outcome.allowed) admitted++;
  };
  for (let i = 0; i < 200; i++) await decide(i); // warm-up: the objects exist, their keys are stored
  counter.rpcs = 0;
  admitted = 0;
  const statsBefore = target === "durable" ? await objectStats(env, storeName, shards) : null;
  const start = performance.now();
  let now = start;
  let next = 0;
  const lane = async () => {
    while (now - start < minMs) {
      await decide(next++);
      requests++;
      now = performance.now();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const ms = now - start;
  /** @type {{ calls: number, callsFromReserved: number, rowsWritten: number } | null} */
  let storage = null;
  if (statsBefore !== null) {
    const after = await objectStats(env, storeName, shards);
    storage = { calls: after.calls - statsBefore.calls, callsFromReserved: after.callsFromReserved - statsBefore.callsFromReserved, rowsWritten: after.rowsWritten - statsBefore.rowsWritten };
  }
  return { requests, decisions: requests * rules, admitted, ms, roundTrips: counter.rpcs, storage };
}

// The sum of storageStats() over a durable store's shard objects (read on the plain binding, so the
// reads are not counted as the store's round trips).
async function objectStats(env, storeName, shards) {
  const sum = { calls: 0, callsFromReserved: 0, rowsWritten: 0 };
  for (let i = 0; i < shards; i++) {
    const stub = env[DURABLE_BINDING].get(env[DURABLE_BINDING].idFromName(`${storeName}/${shards}/${i}`));
    const s = await stub.storageStats();
    for (const field of Object.keys(sum)) sum[field] += s[field];
  }
  return sum;
}
