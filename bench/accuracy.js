// node bench/accuracy.js [--quick]: how far each algorithm's decisions are from exact counting, on a
// seeded realistic trace and on adversarial ones, through the core via the loader.
//
// The realistic trace: many sources with heavy-tailed rates (Pareto, alpha 1.1, capped), each sending
// in bursts (on/off periods), over ten minutes; the rule is 100 requests per 60 s. Every source runs
// through every algorithm in one core, and through two exact references, also run by the core:
//   - admitted-only: the sliding log (exact) charges admitted requests, as every sluice rule does;
//   - all requests: a sliding log with a limit far above any source's rate charges every request, and
//     the exact count-all decision is "admit while the requests in (t - W, t], this one included, are
//     at most the limit" (Cloudflare's counter counts all requests; its published error is against this).
// Reported per algorithm: the share of requests decided otherwise than by its reference (wrongly
// admitted, wrongly denied), and the distribution over sources of the most admitted in any window of
// W ms, as a multiple of the limit, beside the bound the docs state.
// Writes bench/accuracy.json and the section of docs/core.md between its markers; --quick
// (a smaller trace) writes nothing and fails if any bound is broken.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

import { SluiceCore } from "../wasm-bindings/sluice.js";
import { random } from "./worker/workload.js";
import { writeDocsSection } from "./lib/docs-section.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const quick = process.argv.includes("--quick");

const LIMIT = 100;
const WINDOW_MS = 60_000;
const DURATION_MS = 10 * 60_000;
const SOURCES = quick ? 2_000 : 100_000;
const MAX_RATE_PER_MIN = 3_000; // the count-all reference's log must hold a window of any source
const REFERENCE_LIMIT = 4_096;
const T0 = 1_700_000_040_000; // a window boundary
const SEED = 20261201;

// The bound on the most admitted in any window of W, as a multiple of the limit (docs/core.md).
const SEMANTICS = [
  { name: "sliding-log", rule: { algorithm: "sliding-log" }, reference: "admitted", bound: 1, boundText: "limit (exact)" },
  { name: "sliding-counter", rule: { algorithm: "sliding-counter" }, reference: "admitted", bound: 2 - 1 / WINDOW_MS, boundText: "limit + limit (W-1)/W < 2 limit" },
  { name: "sliding-counter, countDenied", rule: { algorithm: "sliding-counter", countDenied: true }, reference: "all", bound: 2 - 1 / WINDOW_MS, boundText: "limit + limit (W-1)/W < 2 limit" },
  { name: "fixed-window", rule: { algorithm: "fixed-window" }, reference: "admitted", bound: 2, boundText: "2 limit (limit per aligned window)" },
  { name: "token-bucket (burst = limit)", rule: { algorithm: "token-bucket" }, reference: "admitted", bound: 2 - 1 / LIMIT, boundText: "2 limit - 1" },
  { name: "gcra (burst = limit)", rule: { algorithm: "gcra" }, reference: "admitted", bound: 2 - 1 / LIMIT, boundText: "2 limit - 1" },
];

const wasm = readFileSync(resolve(root, "wasm-bindings/sluice.wasm"));
const core = await SluiceCore.fromBytes(wasm, { seed: new Uint32Array([5, 6, 7, 8]) });
const exactAdmitted = core.addRule({ algorithm: "sliding-log", limit: LIMIT, windowMs: WINDOW_MS, keyCapacity: 1 });
const exactAll = core.addRule({ algorithm: "sliding-log", limit: REFERENCE_LIMIT, windowMs: WINDOW_MS, keyCapacity: 1 });
const rules = SEMANTICS.map((s) => core.addRule({ limit: LIMIT, windowMs: WINDOW_MS, keyCapacity: 1, ...s.rule }));

// One source's request times (ms, ascending): a Pareto rate, sent in on/off bursts.
function sourceTrace(draw) {
  const perMin = Math.min(MAX_RATE_PER_MIN, 0.5 / Math.pow(1 - draw(), 1 / 1.1));
  const duty = 0.2 + 0.8 * draw(); // share of the time the source is sending
  const burstRatePerMs = perMin / 60_000 / duty;
  const times = [];
  let t = Math.floor(draw() * WINDOW_MS);
  let on = draw() < duty;
  while (t < DURATION_MS) {
    const periodMs = -Math.log(1 - draw()) * (on ? 20_000 * duty : 20_000 * (1 - duty)) + 1;
    const end = Math.min(DURATION_MS, t + periodMs);
    if (on) {
      let at = t;
      for (;;) {
        at += -Math.log(1 - draw()) / burstRatePerMs;
        if (at >= end) break;
        times.push(Math.floor(at));
      }
    }
    t = end;
    on = !on;
  }
  return times;
}

// The most in any window (t - W, t] of ascending times, over the limit.
function worstSpan(times) {
  let most = 0;
  let first = 0;
  for (let i = 0; i < times.length; i++) {
    while (times[first] <= times[i] - WINDOW_MS) first++;
    most = Math.max(most, i - first + 1);
  }
  return most / LIMIT;
}

function newTally() {
  return SEMANTICS.map(() => ({ requests: 0, wronglyAdmitted: 0, wronglyDenied: 0, worst: [] }));
}

// Runs one source's requests through every rule and both references; adds to `tally`.
function runSource(key, times, tally) {
  const admittedTimes = SEMANTICS.map(() => []);
  for (const t of times) {
    const now = T0 + t;
    const exact = core.check(exactAdmitted, key, 1, now).allowed;
    const all = core.check(exactAll, key, 1, now);
    const exactCountAll = REFERENCE_LIMIT - all.remaining <= LIMIT;
    for (let i = 0; i < SEMANTICS.length; i++) {
      const d = core.check(rules[i], key, 1, now);
      const reference = SEMANTICS[i].reference === "all" ? exactCountAll : exact;
      const entry = tally[i];
      entry.requests++;
      if (d.allowed && !reference) entry.wronglyAdmitted++;
      if (!d.allowed && reference) entry.wronglyDenied++;
      if (d.allowed) admittedTimes[i].push(now);
    }
  }
  const limited = times.length > 0 && worstSpan(times) > 1;
  for (let i = 0; i < SEMANTICS.length; i++) if (limited) tally[i].worst.push(worstSpan(admittedTimes[i]));
  core.reset(exactAdmitted, key);
  core.reset(exactAll, key);
  for (const rule of rules) core.reset(rule, key);
}

function quantile(sorted, q) {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function summarize(tally) {
  return SEMANTICS.map((s, i) => {
    const t = tally[i];
    const worst = [...t.worst].sort((a, b) => a - b);
    return {
      semantics: s.name,
      reference: s.reference === "all" ? "exact count of all requests" : "exact sliding log of admitted requests",
      requests: t.requests,
      wronglyAdmitted: t.wronglyAdmitted,
      wronglyDenied: t.wronglyDenied,
      errorShare: (t.wronglyAdmitted + t.wronglyDenied) / Math.max(1, t.requests),
      limitedSources: worst.length,
      worstSpan: { p50: quantile(worst, 0.5), p99: quantile(worst, 0.99), p999: quantile(worst, 0.999), max: worst.at(-1) ?? 0 },
      bound: s.bound,
      boundText: s.boundText,
    };
  });
}

// Realistic: SOURCES sources, seeded.
const draw = random(SEED);
const realisticTally = newTally();
let realisticRequests = 0;
for (let s = 0; s < SOURCES; s++) {
  const times = sourceTrace(draw);
  realisticRequests += times.length;
  runSource(`source-${s}`, times, realisticTally);
}
const realistic = summarize(realisticTally);

// Adversarial: one source each.
const adversarial = {};
const edge = []; // the limit in a window's last millisecond, then one request every millisecond
for (let i = 0; i < LIMIT; i++) edge.push(WINDOW_MS - 1);
for (let t = WINDOW_MS; t < 3 * WINDOW_MS; t++) edge.push(t);
const boundary = []; // the limit at the end of one window and again at the start of the next
for (let i = 0; i < LIMIT; i++) boundary.push(WINDOW_MS - 1, WINDOW_MS);
boundary.sort((a, b) => a - b);
const hammer = []; // 10 requests a second, steadily: six times the rate the rule allows
for (let t = 0; t < 5 * WINDOW_MS; t += 100) hammer.push(t);
for (const [name, times] of Object.entries({ "limit at a window's end, then one per ms": edge, "limit on both sides of a window boundary": boundary, "ten per second, steadily": hammer })) {
  const tally = newTally();
  // Counted whatever the source's own worst span: these are the cases that matter.
  runSource(`adversary`, times, tally);
  adversarial[name] = summarize(tally);
}

const broken = [...realistic, ...Object.values(adversarial).flat()].filter((r) => r.worstSpan.max > r.bound + 1e-9);
for (const r of broken) console.error(`bound broken: ${r.semantics} admitted ${r.worstSpan.max} x limit, bound ${r.bound}`);
if (broken.length > 0) process.exitCode = 1;

const pct = (share) => `${(100 * share).toFixed(4)} %`;
const x = (v) => `${v.toFixed(3)} x`;
console.log(`${SOURCES} sources, ${realisticRequests} requests`);
for (const r of realistic) {
  console.log(`${r.semantics}: error ${pct(r.errorShare)} (admitted ${r.wronglyAdmitted}, denied ${r.wronglyDenied}); worst span p50 ${x(r.worstSpan.p50)} p99 ${x(r.worstSpan.p99)} max ${x(r.worstSpan.max)} (bound ${x(r.bound)})`);
}

function markdown() {
  const lines = [
    `Measured by \`node bench/accuracy.js\` (seed ${SEED}): ${SOURCES.toLocaleString("en")} sources, ${realisticRequests.toLocaleString("en")} requests over ten minutes, rates Pareto-distributed (alpha 1.1, at most ${MAX_RATE_PER_MIN.toLocaleString("en")} a minute) and sent in bursts; the rule is ${LIMIT} requests per ${WINDOW_MS / 1000} s. "Wrong" is a decision other than the reference's, each run on its own state (so one early difference can change later decisions too): every rule but countDenied against the exact sliding log of admitted requests, countDenied against the exact count of all requests (the reference of Cloudflare's published figure). "Most in any window" is, over the ${realistic[0].limitedSources.toLocaleString("en")} sources that sent more than the limit in some window, the most a source was admitted in any ${WINDOW_MS / 1000} s, as a multiple of the limit.`,
    "",
    "| algorithm | wrongly admitted | wrongly denied | most in any window: median | p99 | p99.9 | max | bound |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const r of realistic) {
    lines.push(`| ${r.semantics} | ${pct(r.wronglyAdmitted / r.requests)} | ${pct(r.wronglyDenied / r.requests)} | ${x(r.worstSpan.p50)} | ${x(r.worstSpan.p99)} | ${x(r.worstSpan.p999)} | ${x(r.worstSpan.max)} | ${r.boundText} |`);
  }
  lines.push("", "Adversarial sources (most admitted in any window, as a multiple of the limit):", "");
  lines.push(`| algorithm | ${Object.keys(adversarial).join(" | ")} |`, `|---|${Object.keys(adversarial).map(() => "---").join("|")}|`);
  for (let i = 0; i < SEMANTICS.length; i++) {
    lines.push(`| ${SEMANTICS[i].name} | ${Object.values(adversarial).map((rows) => x(rows[i].worstSpan.max)).join(" | ")} |`);
  }
  lines.push("", "Cloudflare publishes, for its counter of all requests on its own traffic, 0.003 % of requests wrongly allowed or limited (blog: \"How we built rate limiting capable of scaling to millions of domains\", 2017).");
  return lines.join("\n");
}

if (!quick) {
  writeFileSync(resolve(root, "bench/accuracy.json"), `${JSON.stringify({ seed: SEED, sources: SOURCES, requests: realisticRequests, limit: LIMIT, windowMs: WINDOW_MS, realistic, adversarial }, null, 2)}\n`);
  writeDocsSection(resolve(root, "docs/core.md"), "accuracy", markdown());
}
