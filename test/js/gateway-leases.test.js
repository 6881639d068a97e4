// The gateway's durable rules with `stores.durable.lease` (docs/leases.md): isolates decide a hot key
// from quota the object lent them. The attack is over-admission: three isolates each holding leases
// must together admit no more than the rule's limit. And a lease that decides requests with no round
// trip must still be visible: the admin endpoint counts every lease, lent unit and leased decision.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { parseExposition, sample } from "./helpers/prometheus.js";
import { startGatewayIsolates } from "./fixtures/gateway/isolates.js";

const ISOLATES = 3;
const LIMIT = 60;
const ADMIN_TOKEN = "admin-token-for-gateway-leases-0123456789";
// A day's window: the object's wall clock will not cross its end during the test.
const DAY_SEC = 86_400;
const rule = (name, algorithm) => ({ name, algorithm, limit: LIMIT, windowSec: DAY_SEC, key: "route", store: "durable" });
const ALGORITHMS = ["fixed-window", "sliding-log", "token-bucket"];

const CONFIG = {
  routes: ALGORITHMS.map((algorithm) => ({ prefix: `/${algorithm}`, methods: ["GET"], upstream: { url: `http://svc.internal/${algorithm}`, service: "SVC" }, rules: [rule(`hot-${algorithm}`, algorithm)] })),
  stores: { durable: { lease: { leaseMs: 60_000 }, fallback: [] } },
  admin: { path: "/_sluice/metrics", tokenSecret: "ADMIN_TOKEN" },
};

let mf;
let isolates;
const upstream = new Map(); // route prefix -> requests that reached the upstream (each route's upstream path starts with it)

before(async () => {
  ({ mf, isolates } = await startGatewayIsolates({
    count: ISOLATES,
    config: CONFIG,
    adminToken: ADMIN_TOKEN,
    upstream: async (request) => {
      const prefix = `/${new URL(request.url).pathname.split("/")[1]}`;
      upstream.set(prefix, (upstream.get(prefix) ?? 0) + 1);
      return new Response("upstream ok");
    },
    // One object for all: gw0 defines it, the others bind gw0's.
    durableObjects: (i) => ({ SLUICE_DO: { className: "TestSluiceDurableObject", useSQLite: true, ...(i === 0 ? {} : { scriptName: "gw0" }) } }),
  }));
});
after(() => mf?.dispose());

const get = (on, path, ip) => on.fetch(`http://gateway.test${path}`, { headers: { "cf-connecting-ip": ip } });

async function metrics(on) {
  const response = await on.fetch("http://gateway.test/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(response.status, 200);
  return parseExposition(await response.text());
}

describe("gateway: durable rules with leases", () => {
  for (const algorithm of ALGORITHMS) {
    test(`three isolates with leases admit at most the limit, and most of it (${algorithm})`, async () => {
      // Three times the limit, 30 at a time from every isolate at once.
      const statuses = [];
      for (let wave = 0; wave < 2; wave++) {
        const waves = isolates.flatMap((on, i) => Array.from({ length: 30 }, (_, j) => get(on, `/${algorithm}/x`, `198.51.100.${i * 30 + j + 1}`)));
        for (const response of await Promise.all(waves)) {
          statuses.push(response.status);
          await response.arrayBuffer();
        }
      }
      const admitted = statuses.filter((s) => s === 200).length;
      assert.equal(upstream.get(`/${algorithm}`) ?? 0, admitted, "every admitted request reached the upstream, no other");
      assert.ok(admitted <= LIMIT, `${algorithm}: ${admitted} admitted for a limit of ${LIMIT}`);
      // What isolates hold in leases and never use is stranded (under-admission, bounded): most of the limit still goes through.
      assert.ok(admitted >= LIMIT / 2, `${algorithm}: only ${admitted} of ${LIMIT} admitted`);
      assert.deepEqual([...new Set(statuses)].sort(), [200, 429]);
    });
  }

  test("the admin endpoint counts leases: granted, units lent, decisions taken from them with no round trip", async () => {
    const chain = { chain: "durable:SLUICE_DO" };
    const perIsolate = await Promise.all(isolates.map(metrics));
    const total = (name) => perIsolate.reduce((sum, families) => sum + sample(families, name, chain), 0);
    assert.ok(total("sluice_lease_granted_total") >= 1, "some isolate took a lease");
    assert.ok(total("sluice_lease_units_lent_total") >= total("sluice_lease_granted_total"), "a lease carries at least one unit");
    assert.ok(total("sluice_lease_decisions_total") >= 1, "some decision came from a lease, with no round trip");
    // Every decision is either taken from a lease or from a call to the object.
    const decided = perIsolate.reduce((sum, families) => sum + sample(families, "sluice_store_decisions_total", { ...chain, decided_by: "durable" }), 0);
    assert.ok(total("sluice_lease_round_trips_total") <= decided, "round trips are at most the durable decisions");
    assert.ok(total("sluice_lease_round_trips_total") < 3 * ALGORITHMS.length * 2 * 30, "leases saved round trips");
    for (const name of ["sluice_lease_expired_total", "sluice_lease_units_returned_total", "sluice_lease_units_stranded_total"]) {
      assert.equal(total(name), 0, `${name}: no lease ended during the test`);
    }
  });
});
