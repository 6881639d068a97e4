// The floors issues 5 and 13 set, checked against one run: rates as per-repetition ratios, memory and the
// middleware's added time as medians. "Peer" means a library (family "peer"); the plain-JS limiters are
// the baseline, reported beside the verdict but not part of it.

import { median, ratios } from "./stats.js";

const PEER_FAMILY = "peer";
const SLUICE = "sluice-fixed-window";
const LARGEST_FLOOR_BYTES = 32;
const FLOOR_ALGORITHMS = ["sluice-fixed-window", "sluice-sliding-counter", "sluice-token-bucket", "sluice-leaky-bucket", "sluice-gcra"];

const fmt = (n) => (n >= 100 ? Math.round(n).toLocaleString("en") : n.toFixed(2));

function fastest(rows, subjects, family) {
  let best = null;
  for (const [name, row] of Object.entries(rows)) {
    if (subjects[name]?.family !== family) continue;
    if (best === null || row.decisionsPerSecond.median > best.rate) best = { name, rate: row.decisionsPerSecond.median };
  }
  return best;
}

// sluice against the fastest peer (by median rate), as every ratio in the bench is taken: per
// repetition, the two measured moments apart, then the median of those ratios. (The ratio of the two
// medians, shown beside it, mixes repetitions taken under different load.)
function againstFastestPeer(results, rows) {
  const peer = fastest(rows, results.subjects, PEER_FAMILY);
  return { peer, ratio: median(ratios(rows[SLUICE].samples, rows[peer.name].samples)) };
}

// The floors are judged with key strings built per decision, as a Worker's are; `reused` (the same
// workload over string objects built once) is reported beside the verdict, not part of it.
function rateFloor(results, rows, label, factor, reused) {
  const ours = rows[SLUICE].decisionsPerSecond.median;
  const { peer, ratio } = againstFastestPeer(results, rows);
  const plain = rows[results.baseline].decisionsPerSecond.median;
  const beside = reused === undefined ? null : againstFastestPeer(results, reused);
  return {
    floor: label,
    met: ratio >= factor,
    ratio,
    detail:
      `sluice ${fmt(ours)}/s; fastest peer ${peer.name} ${fmt(peer.rate)}/s: x${ratio.toFixed(2)} per repetition ` +
      `(ratio of medians x${(ours / peer.rate).toFixed(2)}), needs x${factor}; plain-JS fixed window ${fmt(plain)}/s ` +
      `(x${rows[SLUICE].ratio.toFixed(2)} per repetition)` +
      (beside === null ? "" : `; with string objects reused: x${beside.ratio.toFixed(2)} of ${beside.peer.name}`),
  };
}

const NOOP = "harness-only";
const OWN_COST_ALGORITHMS = ["sluice-fixed-window", "sluice-sliding-counter", "sluice-token-bucket"];

// A subject's own cost per decision in each repetition: its time minus the no-op limiter's, measured
// moments apart in the same repetition (the loop, the clock and the key string cost everyone the same).
function ownCosts(rows, name) {
  const noop = rows[NOOP].samples;
  return rows[name].samples.map((rate, i) => 1e9 / rate - 1e9 / noop[i]);
}

// Issue 13: on one hot key, every sluice algorithm's own cost at most `factor` x the fastest peer's, per
// repetition (median of the ratios), for the given workload.
function ownCostFloor(results, rows, label, factor) {
  const peer = fastest(rows, results.subjects, PEER_FAMILY);
  const theirs = ownCosts(rows, peer.name);
  const judged = OWN_COST_ALGORITHMS.filter((s) => rows[s] !== undefined).map((s) => {
    const ours = ownCosts(rows, s);
    return { s, ours: median(ours), ratio: median(ratios(ours, theirs)) };
  });
  return {
    floor: label,
    met: judged.every((j) => j.ratio <= factor),
    detail:
      `fastest peer ${peer.name} ${median(theirs).toFixed(0)} ns; ` +
      judged.map((j) => `${results.subjects[j.s].algorithm} ${j.ours.toFixed(0)} ns (x${j.ratio.toFixed(2)})`).join(", ") +
      `; needs x${factor} or less, per repetition`,
  };
}

export function evaluateFloors(results) {
  const f = results.figures;
  const floors = [];
  const reusedHot = f.hotKey["mostly admitted, one string object reused"];
  for (const mode of ["mostly admitted", "mostly denied"]) {
    if (f.hotKey[mode] === undefined) continue;
    floors.push(rateFloor(results, f.hotKey[mode], `hot key, ${mode}: sluice >= fastest peer`, 1, mode === "mostly admitted" ? reusedHot : undefined));
  }
  const largest = Math.max(...Object.keys(f.bytesPerKey).map(Number));
  const uniform = f.manyKeys[`${largest} uniform`];
  if (uniform) {
    const label = `${largest.toLocaleString("en")} keys, uniform: sluice >= 3x fastest peer`;
    floors.push(rateFloor(results, uniform, label, 3, f.manyKeys[`${largest} uniform, strings reused`]));
  }

  for (const mode of ["mostly admitted", "mostly admitted, one string object reused"]) {
    const rows = f.hotKey[mode];
    if (rows?.[NOOP] === undefined) continue;
    floors.push(ownCostFloor(results, rows, `hot key, ${mode}: sluice's own cost <= 0.5x the fastest peer's, every algorithm`, 0.5));
  }
  if (uniform) {
    const label = `${largest.toLocaleString("en")} keys, uniform: sluice >= 5x fastest peer (issue 13)`;
    floors.push(rateFloor(results, uniform, label, 5, f.manyKeys[`${largest} uniform, strings reused`]));
  }

  const memory = f.bytesPerKey[largest];
  const over = FLOOR_ALGORITHMS.filter((s) => !(memory[s]?.bytesPerKey <= LARGEST_FLOOR_BYTES));
  const log = memory["sluice-sliding-log"];
  floors.push({
    floor: `<= ${LARGEST_FLOOR_BYTES} bytes/key at ${largest.toLocaleString("en")} keys (fixed window, sliding counter, token bucket, leaky bucket, GCRA)`,
    met: over.length === 0,
    detail:
      FLOOR_ALGORITHMS.map((s) => `${results.subjects[s].algorithm} ${memory[s] ? memory[s].bytesPerKey.toFixed(1) : "n/a"}`).join(", ") +
      (log ? `; sliding log (limit 10) costs ${log.bytesPerKey.toFixed(1)} B/key (24 B + 4 B per unit of limit per slot, slots = keys / 0.9)` : ""),
  });

  const burst = f.newKeysInOneRequest[SLUICE];
  floors.push({
    floor: "> 100,000 new keys in one request without an error",
    met: burst.failure === null && burst.inserted > 100_000,
    detail: `sluice inserted ${burst.inserted.toLocaleString("en")} of ${burst.attempted.toLocaleString("en")}${burst.failure ? ` (${burst.failure})` : ""}`,
  });

  const routes = f.hono.routes;
  if (routes.sluice === undefined) {
    floors.push({ floor: "Hono middleware added time <= the lightest peer's", met: null, detail: f.hono.sluice });
  } else {
    const others = Object.entries(routes).filter(([r]) => r !== "bare" && r !== "sluice");
    const lightest = others.reduce((a, b) => (b[1].addedMicroseconds.median < a[1].addedMicroseconds.median ? b : a));
    const ours = routes.sluice.addedMicroseconds.median;
    floors.push({
      floor: "Hono middleware added time <= the lightest peer's",
      met: ours <= lightest[1].addedMicroseconds.median,
      detail: `sluice +${ours.toFixed(2)} us; lightest other ${lightest[0]} +${lightest[1].addedMicroseconds.median.toFixed(2)} us`,
    });
  }
  const d = f.durableObject?.rows;
  const object = d?.["durable, 1 check per request, 8 in flight"];
  const unstored = d?.["durable without storage, 1 check per request, 8 in flight"];
  if (object !== undefined && unstored !== undefined) {
    const rate = object.decisionsPerSecond.median;
    const ratio = unstored.decisionsPerSecond.median / rate;
    floors.push({
      floor: "Durable Object, 1 check, 8 in flight: >= 20,000 decisions/s, or within 1.5x of the same object without storage",
      met: rate >= 20_000 || ratio <= 1.5,
      detail: `${fmt(rate)}/s stored; ${fmt(unstored.decisionsPerSecond.median)}/s without storage (x${ratio.toFixed(2)})`,
    });
  }
  if (f.leases !== undefined) {
    // The sliding log's Zipf row exists in runs since it lends (bench/run.js, LEASE_LOG_TARGETS).
    const cases = ["", " (sliding log)"].flatMap((label) => ["one hot key", "Zipf mix of 1,000 keys"].map((keys) => [label, keys]));
    for (const [label, keys] of cases.filter(([label, keys]) => f.leases.rows[`leased${label}, ${keys}`] !== undefined)) {
      const leased = f.leases.rows[`leased${label}, ${keys}`];
      floors.push({
        floor: `leases${label}, ${keys}: no over-admission and >= 10x the decisions/s of durable`,
        met: leased.overAdmitted === 0 && leased.decisionsRatioToDurable >= 10,
        detail:
          `${fmt(leased.decisionsPerSecond.median)}/s, x${leased.decisionsRatioToDurable.toFixed(1)} of durable` +
          (leased.admittedPerSecond === undefined
            ? "; "
            : ` (admitted ${fmt(leased.admittedPerSecond.median)}/s against durable's ${fmt(f.leases.rows[`durable${label}, ${keys}`].admittedPerSecond.median)}/s` +
              (leased.admittedRatioToDurable === undefined ? "); " : `, x${leased.admittedRatioToDurable.toFixed(1)}); `)) +
          `${leased.mostAdmittedPerKeyAndMinute.toLocaleString("en")} admitted of ${leased.limit.toLocaleString("en")} at most per key and minute`,
      });
    }
  }
  return floors;
}
