// The geography seam (sluice/testing): round trips, scripted and random fates, cut-offs, and stubs
// called as RPC proxies must be (through Reflect.apply). Counts only, never times.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { GeographyError, createRegion, seededRandom } from "../../worker/src/testing/index.js";

// A namespace whose objects count their calls, as a Durable Object would.
function fakeNamespace() {
  const calls = new Map();
  return {
    calls,
    idFromName: (name) => ({ name }),
    get: (id) => ({
      decide(value) {
        calls.set(id.name, (calls.get(id.name) ?? 0) + 1);
        return { echoed: value };
      },
      fail() {
        throw new Error("object failed");
      },
    }),
  };
}

const settle = (promise, ms) => Promise.race([promise.then((v) => ({ v }), (e) => ({ e })), new Promise((r) => setTimeout(() => r("pending"), ms))]);

describe("geography seam", () => {
  test("a stub call reaches the object and its answer comes back; errors come back too", async () => {
    const region = createRegion({ name: "near", rttMs: 2 });
    const namespace = fakeNamespace();
    const wrapped = region.namespace(namespace);
    const stub = wrapped.get(wrapped.idFromName("o"));
    assert.deepEqual(await stub.decide(7), { echoed: 7 });
    await assert.rejects(stub.fail(), /object failed/);
    assert.equal(namespace.calls.get("o"), 1);
    assert.deepEqual(region.stats, { calls: 2, delivered: 2, answered: 2, lostOut: 0, lostBack: 0, late: 0, errors: 0, cutOff: 0 });
  });

  test("scripted fates: lost out never reaches the object; lost back and late ones do", async () => {
    const region = createRegion({ name: "far", rttMs: 4, lateMs: 20 });
    const namespace = fakeNamespace();
    const wrapped = region.namespace(namespace);
    const stub = wrapped.get(wrapped.idFromName("o"));
    region.script("lostOut", "lostBack", "late", "error");
    const lostOut = stub.decide(1);
    const lostBack = stub.decide(2);
    const late = stub.decide(3);
    const failed = settle(stub.decide(4), 1000);
    assert.equal(await settle(lostOut, 60), "pending");
    assert.equal(await settle(lostBack, 1), "pending");
    assert.deepEqual(await late, { echoed: 3 });
    const error = (await failed).e;
    assert.ok(error instanceof GeographyError);
    // lostBack and late reached the object; lostOut and error did not.
    assert.equal(namespace.calls.get("o"), 2);
    const stats = region.stats;
    assert.deepEqual([stats.lostOut, stats.lostBack, stats.late, stats.errors, stats.delivered], [1, 1, 1, 1, 2]);
  });

  test("a cut-off region reaches nothing until it heals; failFast makes its calls fail", async () => {
    let now = 0;
    const region = createRegion({ name: "cut", rttMs: 2, clock: () => now });
    const namespace = fakeNamespace();
    const stub = region.namespace(namespace).get({ name: "o" });
    region.cutOff(1000);
    assert.equal(region.isCutOff, true);
    assert.equal(await settle(stub.decide(1), 30), "pending");
    region.cutOff(1000, { failFast: true });
    await assert.rejects(stub.decide(2), GeographyError);
    now = 1000;
    assert.equal(region.isCutOff, false);
    assert.deepEqual(await stub.decide(3), { echoed: 3 });
    assert.equal(namespace.calls.get("o"), 1);
    assert.equal(region.stats.cutOff, 2);
  });

  test("random fates follow their probabilities and the seed: same seed, same fates", async () => {
    const fates = async (seed) => {
      const region = createRegion({ name: "r", rttMs: 0, seed, faults: { lostOut: 0.1, error: 0.1 } });
      const stub = region.namespace(fakeNamespace()).get({ name: "o" });
      const outcomes = await Promise.all(Array.from({ length: 400 }, () => settle(stub.decide(0), 20)));
      return outcomes.map((o) => (o === "pending" ? "lost" : o.e ? "error" : "ok")).join();
    };
    const a = await fates(3);
    assert.equal(a, await fates(3));
    const lost = a.split(",").filter((f) => f === "lost").length;
    const errors = a.split(",").filter((f) => f === "error").length;
    assert.ok(lost > 20 && lost < 60, `lost ${lost} of 400 at p = 0.1`);
    assert.ok(errors > 20 && errors < 60, `errors ${errors} of 400 at p = 0.1`);
  });

  test("fetch travels too (the Upstash REST client's seam)", async () => {
    const region = createRegion({ name: "r", rttMs: 2 });
    let fetched = 0;
    const wrapped = region.fetch(async () => {
      fetched++;
      return new Response("ok");
    });
    region.script("lostOut");
    assert.equal(await settle(wrapped("http://x/"), 20), "pending");
    assert.equal(await (await wrapped("http://x/")).text(), "ok");
    assert.equal(fetched, 1);
  });

  test("the seeded stream is deterministic and in [0, 1)", () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    for (let i = 0; i < 1000; i++) {
      const x = a();
      assert.equal(x, b());
      assert.ok(x >= 0 && x < 1);
    }
  });

  test("bad region options throw, naming the option", () => {
    assert.throws(() => createRegion({ name: "", rttMs: 1 }), /name/);
    assert.throws(() => createRegion({ name: "x", rttMs: -1 }), /rttMs/);
    assert.throws(() => createRegion({ name: "x", rttMs: 1, jitter: 1 }), /jitter/);
    assert.throws(() => createRegion({ name: "x", rttMs: 1, faults: { dropped: 0.1 } }), /faults\.dropped/);
    assert.throws(() => createRegion({ name: "x", rttMs: 1, faults: { late: 2 } }), /faults\.late/);
  });
});
