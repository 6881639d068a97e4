// Leases on a planet: five isolates whose round trips to the Durable Object's home are 2, 40, 90, 160
// and 250 ms (+-20 % per call, the geography seam: sluice/testing). Warm keys are decided in the
// isolate and refilled in the background before they run out; a hot key asked for from everywhere is
// admitted up to its limit and never past it. Counts only, never times.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { rule, startPlanet } from "./fixtures/planet-leases/harness.js";

describe("planet: leases", () => {
  let planet;
  before(async () => {
    planet = await startPlanet();
  });
  after(() => planet?.dispose());

  for (const algorithm of ["fixed-window", "sliding-counter"]) {
    test(`${algorithm}: warm keys are decided from leases in every region, refilled before they run out`, async () => {
      const name = `warm-${algorithm}`;
      await planet.fixObjectClock(name);
      // Leases of 2 s, so that each key renews its lease twice in the 6 s run.
      const store = { name, lease: { leaseMs: 2000 } };
      const r = rule({ name, algorithm, limit: 100_000 });
      const keys = ["a", "b"];
      // 120 requests per key per region, 50 ms apart: 20 a second per isolate.
      const TICKS = 120;
      const results = await planet.playEverywhere({ store, rule: r, keys, ticks: TICKS, gapMs: 50 });
      for (const [i, { perKey, leases }] of results.entries()) {
        const where = planet.regions[i].name;
        for (const key of keys) {
          const t = perKey[key];
          assert.equal(t.admitted, TICKS, `${where}/${key}: every request admitted (the limit is far)`);
          assert.equal(t.fallbacks, 0, `${where}/${key}: no fallback`);
          // Waiting is the warm-up's: the first request (cold), and those sent before the first lease
          // came back (its ask leaves with the 2nd request; at 250 ms +20 % and 50 ms apart, 8 more).
          // Each renewal without the background refill would add as many again (2 renewals: ~26).
          assert.ok(t.waited <= 12, `${where}/${key}: ${t.waited} of ${TICKS} decisions waited on a round trip`);
        }
        // The refills, not the requests, made the round trips after the warm-up.
        assert.ok(leases.refills >= keys.length * 2, `${where}: ${leases.refills} refills for ${keys.length} keys over 3 lease lengths`);
      }
    });
  }

  for (const algorithm of ["fixed-window", "sliding-counter"]) {
    test(`${algorithm}: a hot key asked for from every region admits its limit and not one more`, async () => {
      const name = `hot-${algorithm}`;
      await planet.fixObjectClock(name);
      const LIMIT = 2000;
      const store = { name, lease: {} };
      const r = rule({ name, algorithm, limit: LIMIT });
      // 5 regions x 500 requests, 10 ms apart: 2,500 asked for a limit of 2,000 in one window.
      const results = await planet.playEverywhere({ store, rule: r, keys: ["hot"], ticks: 500, gapMs: 10 });
      const admitted = results.reduce((n, { perKey }) => n + perKey.hot.admitted, 0);
      const leased = results.reduce((n, { perKey }) => n + perKey.hot.leased, 0);
      const fallbacks = results.reduce((n, { perKey }) => n + perKey.hot.fallbacks, 0);
      assert.equal(fallbacks, 0, "no fallback");
      assert.ok(admitted <= LIMIT, `admitted ${admitted} > limit ${LIMIT}`);
      // Quota stranded in leases is small: the key reaches 95 % of its limit from all regions together.
      assert.ok(admitted >= 0.95 * LIMIT, `only ${admitted} of ${LIMIT} admitted`);
      // Most admissions were taken from leases, with no round trip.
      assert.ok(leased >= 0.9 * admitted, `${leased} of ${admitted} admissions from leases`);
    });
  }
});
