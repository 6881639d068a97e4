// Per-user limits on a planet: five isolates whose round trips to the Durable Object's home are 2, 40,
// 90, 160 and 250 ms (+-20 % per call), each user's requests spread over all of them, with the
// library's DEFAULT store options. Every user gets at most the limit, for every exact algorithm.
// Counts only, never times (the round trips are the geography seam's: sluice/testing).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { EXACT_ALGORITHMS, startPlanet, sumPerKey } from "./fixtures/planet/harness.js";

const USERS = 50;
const LIMIT = 10;
const PER_REGION = 4; // 20 requests per user over 5 regions: twice the limit

describe("planet: per-user limits from 5 regions with default options", () => {
  let planet;
  before(async () => {
    planet = await startPlanet();
    await planet.fixObjectClock();
  });
  after(() => planet?.dispose());

  for (const algorithm of EXACT_ALGORITHMS) {
    test(`${algorithm}: no user is admitted more than ${LIMIT} per window, and none by a weakened fallback`, async () => {
      const limiter = { name: `users-${algorithm}`, algorithm, limit: LIMIT, windowSec: 60 };
      const users = Array.from({ length: USERS }, (_, u) => `user-${u}`);
      // Each wave: every user once per region, all regions at once.
      const keys = Array.from({ length: PER_REGION }, () => users).flat();
      const results = await Promise.all(planet.regions.map((_, i) => planet.send(i, { op: "requests", limiter, keys, waves: PER_REGION })));
      const perUser = sumPerKey(results);
      const over = Object.entries(perUser).filter(([, t]) => t.admitted > LIMIT);
      assert.deepEqual(over.map(([user, t]) => `${user}: ${t.admitted}`), [], "users admitted more than the limit");
      const weakened = Object.values(perUser).reduce((n, t) => n + t.weakened, 0);
      assert.equal(weakened, 0, "decisions taken by a fallback weaker than the object");
      // Not exact by denying: a user denied short of the limit was denied visibly (a timed-out call,
      // failMode "closed"; its late charge, if any, is what the object counted). On an idle host every
      // user gets exactly 10; on a loaded one some calls outlive their timeout, so count, not time.
      const short = Object.entries(perUser).filter(([, t]) => t.admitted + t.fallbacks < LIMIT);
      assert.deepEqual(short.map(([user, t]) => `${user}: ${t.admitted} + ${t.fallbacks}`), [], "users denied below the limit with no fallback");
      const admitted = Object.values(perUser).reduce((n, t) => n + t.admitted, 0);
      assert.ok(admitted > 0);
    });
  }
});
