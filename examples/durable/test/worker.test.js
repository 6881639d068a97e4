// Runs what `npm run build` (wrangler deploy --dry-run --outdir dist) would upload as three isolates
// (three Workers in one Miniflare, each with its own globalThis), sharing one Durable Object namespace
// as Cloudflare's locations do: the limit holds exactly, however the requests are spread.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Miniflare } from "miniflare";

const ISOLATES = ["w0", "w1", "w2"];
let mf;
before(async () => {
  mf = new Miniflare({
    workers: ISOLATES.map((name) => ({
      name,
      modules: true,
      scriptPath: "dist/index.js",
      modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
      compatibilityDate: "2026-04-20",
      // The class lives in w0; the others reach the same objects by scriptName.
      durableObjects: { SLUICE_DO: name === "w0" ? { className: "SluiceDurableObject", useSQLite: true } : { className: "SluiceDurableObject", scriptName: "w0", useSQLite: true } },
    })),
  });
  await mf.ready;
});
after(() => mf.dispose());

test("30 concurrent checkouts of one user over 3 isolates: exactly 5 admitted, all by the Durable Object", async () => {
  const workers = await Promise.all(ISOLATES.map((name) => mf.getWorker(name)));
  const responses = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      workers[i % workers.length].fetch("http://example.test/checkout", { method: "POST", headers: { "x-user-id": "ada" } }),
    ),
  );
  const admitted = responses.filter((response) => response.status === 200);
  assert.equal(admitted.length, 5);
  assert.equal(responses.filter((response) => response.status === 429).length, 25);
  for (const response of admitted) assert.deepEqual(await response.json(), { ordered: true, decidedBy: "durable" });
  for (const response of responses) assert.equal(response.headers.get("x-ratelimit-limit"), "5");
});

test("another user has a count of its own", async () => {
  const response = await (await mf.getWorker("w1")).fetch("http://example.test/checkout", { method: "POST", headers: { "x-user-id": "grace" } });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("x-ratelimit-remaining"), "4");
});
