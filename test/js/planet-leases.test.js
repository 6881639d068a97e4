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
    test(`${algorithm}: warm keys never wait at a window's start: the next window's units are lent ahead`, async () => {
      // The object's own clock runs: windows of 3 s, so that at least 3 start after the warm-up.
      const name = `ahead-${algorithm}`;
      const store = { name, lease: { leaseMs: 2000 } };
      const r = rule({ name, algorithm, limit: 100_000, windowMs: 3000 });
      const keys = ["a", "b"];
      // 240 requests per key per region, 50 ms apart: 20 a second per isolate for 12 s.
      const TICKS = 240;
      // The warm-up: the first 1.5 s (at 250 ms +20 %, about 10 decisions wait on this loaded host).
      const WARM_UP = 30;
      const results = await planet.playEverywhere({ store, rule: r, keys, ticks: TICKS, gapMs: 50, latencies: true });
      for (const [i, { perKey, leases }] of results.entries()) {
        const where = planet.regions[i].name;
        for (const key of keys) {
          const t = perKey[key];
          assert.equal(t.admitted, TICKS, `${where}/${key}: every request admitted (the limit is far)`);
          assert.equal(t.fallbacks, 0, `${where}/${key}: no fallback`);
          // After the warm-up, at least 3 window starts: each costs a wait at the least (at 250 ms, about
          // 8) when the next window's units are not lent ahead and bridged to; with them, none (one
          // hiccup allowed for the loaded host).
          const waitedAfter = t.kinds.slice(WARM_UP).filter((kind) => kind === "W").length;
          assert.ok(waitedAfter <= 2, `${where}/${key}: ${waitedAfter} of ${TICKS - WARM_UP} decisions after the warm-up waited on a round trip`);
        }
        assert.ok(leases.leasesAhead >= keys.length * 3, `${where}: ${leases.leasesAhead} leases lent ahead for ${keys.length} keys over 4 window starts`);
      }
    });
  }

  test("per-user keys with leases from every region: no user past the limit, most users their whole limit", async () => {
    const name = "users";
    await planet.fixObjectClock(name);
    const LIMIT = 10;
    const store = { name, lease: {} };
    const r = rule({ name, limit: LIMIT });
    const users = Array.from({ length: 50 }, (_, u) => `user-${u}`);
    // Every user 4 times per region, 250 ms apart: 20 requests each for a limit of 10.
    const results = await planet.playEverywhere({ store, rule: r, keys: users, ticks: 4, gapMs: 250 });
    let total = 0;
    const over = [];
    for (const user of users) {
      const admitted = results.reduce((n, { perKey }) => n + perKey[user].admitted, 0);
      total += admitted;
      if (admitted > LIMIT) over.push(`${user}: ${admitted}`);
    }
    assert.deepEqual(over, [], "users admitted past the limit");
    // Stranded units (leased to a region whose next requests were denied elsewhere) cost a little.
    assert.ok(total >= 0.8 * users.length * LIMIT, `only ${total} of ${users.length * LIMIT} admitted`);
  });

  test("refills whose answers are lost strand their units and stop nothing: the key is refilled again, never over its limit", async () => {
    const name = "lost-refills";
    await planet.fixObjectClock(name);
    const LIMIT = 1500;
    const store = { name, lease: { leaseMs: 2000 } };
    const r = rule({ name, limit: LIMIT });
    // Every isolate's 4th to 9th calls reach the object (which lends and charges) but their answers
    // never come back: the warm-up's calls and the first refills.
    for (let i = 0; i < planet.regions.length; i++) {
      await planet.send(i, { op: "script", fates: ["ok", "ok", "ok", "lostBack", "lostBack", "lostBack", "lostBack", "lostBack", "lostBack"] });
    }
    // 5 regions x 400 requests, 10 ms apart: 2,000 asked for 1,500.
    const results = await planet.playEverywhere({ store, rule: r, keys: ["k"], ticks: 400, gapMs: 10 });
    const admitted = results.reduce((n, { perKey }) => n + perKey.k.admitted, 0);
    assert.ok(admitted <= LIMIT, `admitted ${admitted} > limit ${LIMIT}`);
    for (const [i, { perKey, leases }] of results.entries()) {
      // Lost answers did not stop the key asking: leases kept coming and deciding.
      assert.ok(leases.leasesGranted >= 2, `${planet.regions[i].name}: ${leases.leasesGranted} leases after the lost answers`);
      assert.ok(perKey.k.leased >= 100, `${planet.regions[i].name}: ${perKey.k.leased} decisions from leases`);
    }
  });

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

// The regional tier: two regions, each with two isolates 10 ms from their regional object, which is
// 250 ms (+-20 %) from the keys' home (the test object's "homeRttMs" knob puts the home across the
// planet for the regional object's calls; the isolates' seam, for theirs).
describe("planet: a regional tier", () => {
  const REGIONS = [
    { name: "syd-1", rttMs: 10, hint: "oc" },
    { name: "syd-2", rttMs: 10, hint: "oc" },
    { name: "sin-1", rttMs: 10, hint: "apac" },
    { name: "sin-2", rttMs: 10, hint: "apac" },
  ];
  let planet;
  before(async () => {
    planet = await startPlanet({ regions: REGIONS });
  });
  after(() => planet?.dispose());

  const regionalObject = (name, hint) => `${name}/region/${hint}/${name}/1/0`;
  async function setUp(name) {
    await planet.fixObjectClock(name);
    for (const hint of ["oc", "apac"]) await planet.send(0, { op: "object", name: regionalObject(name, hint), method: "setKnob", args: ["homeRttMs", 250] });
  }
  async function homeCalls(name, hint) {
    return planet.send(0, { op: "object", name: regionalObject(name, hint), method: "homeCalls" });
  }

  test("a hot key below its limit crosses the planet at most once per region per lease length, and is decided near", async () => {
    const name = "regional-below";
    await setUp(name);
    const LEASE_MS = 2000;
    const store = { name, lease: { leaseMs: LEASE_MS }, regional: true };
    const r = rule({ name, limit: 100_000 });
    // 600 requests per isolate, 10 ms apart: 6 s, 3 of the isolates' lease lengths.
    const LEASE_LENGTHS = 3;
    const results = await planet.playEverywhere({ store, rule: r, keys: ["hot"], ticks: 600, gapMs: 10 });
    for (const [i, { perKey }] of results.entries()) {
      assert.equal(perKey.hot.admitted, 600, `${REGIONS[i].name}: all admitted`);
      assert.equal(perKey.hot.fallbacks, 0);
      // From leases but for the warm-up (the first crossing: 260 ms at 100 a second) and the refills
      // of isolates whose regional object was itself waiting for the home.
      assert.ok(perKey.hot.leased >= 540, `${REGIONS[i].name}: ${perKey.hot.leased} of 600 from leases`);
    }
    for (const hint of ["oc", "apac"]) {
      // The floor: at most one crossing per region per lease length, the first (cold) one included,
      // counted by the regional object's seam to the home. Before the fix it was 4 to 6 here: the
      // first lease (a 64th of the largest) ran short before the region's rate was known, and two
      // more crossings in the first second learnt it. Without the tier each isolate crosses on its
      // own, every refill (about 20 each: bench/planet-leases.js).
      const calls = await homeCalls(name, hint);
      assert.ok(calls >= 1 && calls <= LEASE_LENGTHS, `${hint}: ${calls} calls to the home object in ${LEASE_LENGTHS} lease lengths`);
    }
  });

  test("a regional object's restart strands what it held and passed on, and never over-admits", async () => {
    const name = "regional-restart";
    await setUp(name);
    const LIMIT = 2000;
    const store = { name, lease: { leaseMs: 2000 }, regional: true };
    const r = rule({ name, limit: LIMIT });
    const playing = planet.playEverywhere({ store, rule: r, keys: ["hot"], ticks: 600, gapMs: 10 });
    // While the isolates play, both regional objects restart twice (their leases, in memory, are lost;
    // what isolates hold of them stays good until it ends).
    for (let round = 0; round < 2; round++) {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      for (const hint of ["oc", "apac"]) await planet.send(0, { op: "object", name: regionalObject(name, hint), method: "restart" }).catch(() => {});
    }
    const results = await playing;
    const admitted = results.reduce((n, { perKey }) => n + perKey.hot.admitted, 0);
    assert.ok(admitted <= LIMIT, `admitted ${admitted} > limit ${LIMIT}`);
    assert.ok(admitted > 0);
    for (const hint of ["oc", "apac"]) assert.ok((await planet.send(0, { op: "object", name: regionalObject(name, hint), method: "starts" })) >= 3, `${hint} restarted`);
  });

  test("a hot key asked for past its limit through regional objects admits its limit and not one more", async () => {
    const name = "regional-at-limit";
    await setUp(name);
    const LIMIT = 2000;
    const store = { name, lease: { leaseMs: 2000 }, regional: true };
    const r = rule({ name, limit: LIMIT });
    // 4 isolates x 600: 2,400 asked for a limit of 2,000 in one window.
    const results = await planet.playEverywhere({ store, rule: r, keys: ["hot"], ticks: 600, gapMs: 10 });
    const admitted = results.reduce((n, { perKey }) => n + perKey.hot.admitted, 0);
    assert.equal(results.reduce((n, { perKey }) => n + perKey.hot.fallbacks, 0), 0, "no fallback");
    assert.ok(admitted <= LIMIT, `admitted ${admitted} > limit ${LIMIT}`);
    assert.ok(admitted >= 0.95 * LIMIT, `only ${admitted} of ${LIMIT} admitted`);
  });
});
