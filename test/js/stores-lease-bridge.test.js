// Leased quotas' books balance across a window's start (docs/leases.md, "The bridge"): every unit an
// isolate was lent is spent by one of its decisions, given back, counted in unitsStranded, or still
// held. A bridged decision spends a unit of each of two leases (the window that ends and the one lent
// ahead) and needs only one: the other is stranded and must be counted so. The object here is a
// stand-in that answers with the leases the test scripts (the arithmetic of lending is the core's,
// proved in test/cpp/lease_ahead_test.cpp); the isolate's side, its books, is what is tested.
import assert from "node:assert/strict";
import { test } from "node:test";

import { createLeasedStore } from "../../worker/src/stores/leases.js";

const WINDOW_END = 60_000; // the key's window ends here on the object's clock
const rule = { id: "bridge", name: "bridge", algorithm: "fixed-window", limit: 1000, windowMs: 60_000 };
const one = (cost = 1) => [{ rule, key: "k", cost }];

// The object: each decide answers allowed, takes back every unit given back, and lends the next lease
// of `leases` (null once they run out).
function standInObject(leases) {
  const given = { units: 0 };
  return {
    given,
    objectOf: () => "object",
    async decide(checks, options) {
      const returned = (options.giveBack ?? []).map((back) => back.units);
      for (const units of returned) given.units += units;
      return {
        allowed: true,
        limit: rule.limit,
        remaining: 500,
        resetMs: 1000,
        retryAfterMs: 0,
        decidingCheck: 0,
        checks: checks.map(() => ({ allowed: true, limit: rule.limit, remaining: 500, resetMs: 1000, retryAfterMs: 0 })),
        store: "durable",
        leases: [leases.shift() ?? null],
        returned,
      };
    },
  };
}

test("a bridged decision's second unit is counted in unitsStranded: lent = used + returned + stranded + held", async () => {
  const object = standInObject([
    // Lent at 1000 here, cut at the window's end: it ends here at 1500.
    { units: 10, validForMs: 500, expiresAtMs: WINDOW_END, endsWithWindow: true, remaining: 500 },
    // Lent ahead from the next window, asked at 1001: it starts here at 1701 (about a round trip after
    // the first ends here), for 5 s.
    { units: 10, validForMs: 5000, expiresAtMs: WINDOW_END + 5000, endsWithWindow: false, remaining: 500, startsAtMs: WINDOW_END, startsInMs: 700 },
  ]);
  const store = createLeasedStore({ durable: /** @type {any} */ (object), clock: () => 0, leaseMs: 5000, refill: false });
  let used = 0;
  const local = (nowMs, cost = 1) => {
    const outcome = store.decideLocally(one(cost), { nowMs });
    assert.ok(outcome !== null && outcome.lease === true, `a leased decision at ${nowMs}`);
    used += cost;
  };

  await store.decide(one(), { nowMs: 1000 }); // at the object; takes the first lease
  assert.equal(store.counters.unitsLent, 10);
  await store.decide(one(11), { nowMs: 1001 }); // more than held: at the object; takes the one lent ahead
  assert.equal(store.counters.unitsLent, 20);
  local(1100);
  local(1200);
  // Between 1500 (the first lease's end here) and 1701 (the next one's start here): bridged.
  local(1600);
  local(1650);
  assert.equal(store.counters.bridgedDecisions, 2);
  // The next window's lease alone from its start; the first one's units go back with the next call.
  local(1800);
  local(1900);
  // Past every lease's end: a call to the object takes back what is left of both.
  await store.decide(one(), { nowMs: 20_000 });

  const { unitsLent, unitsReturned, unitsStranded } = store.counters;
  assert.equal(unitsReturned, object.given.units);
  assert.equal(store.holds(one(), 20_000), false, "nothing held any more");
  // 20 lent; 6 decisions spent 6, the two bridged ones spent 2 more that admitted no one.
  assert.deepEqual({ unitsLent, accounted: used + unitsReturned + unitsStranded, unitsStranded }, { unitsLent: 20, accounted: 20, unitsStranded: 2 });
});
