// bench/results.md: the run's figures as markdown tables, each cell a median with its ratio to the
// plain-JS fixed window of the same run.

const si = (n) => {
  if (n === null || n === undefined || Number.isNaN(n)) return "n/a";
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return n.toFixed(n >= 100 ? 0 : 2);
};
const times = (r) => (r === null || r === undefined ? "" : ` (x${r.toFixed(2)})`);
const table = (head, rows) =>
  [`| ${head.join(" | ")} |`, `| ${head.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");

// Each limiter's own cost per decision: its time minus the no-op limiter's, per repetition, in ns
// (median, and the range over repetitions). Columns as in the figure above it.
function ownCostTable(figure, label) {
  const cols = Object.keys(figure);
  const subjects = Object.keys(figure[cols[0]]).filter((s) => figure[cols[0]][s].ownNanoseconds);
  if (subjects.length === 0) return "";
  const cell = (o) => (o ? `${o.median.toFixed(0)} ns (${o.min.toFixed(0)} to ${o.max.toFixed(0)})` : "");
  return [
    "Own cost per decision (the limiter's time minus the no-op limiter's, per repetition: median, and range):",
    "",
    table(["limiter", ...cols], subjects.map((s) => [label(s), ...cols.map((c) => cell(figure[c][s]?.ownNanoseconds))])),
  ].join("\n");
}

export function renderMarkdown(results) {
  const { machine: m, figures: f, subjects } = results;
  const label = (name) => subjects[name]?.label ?? name;
  const out = [];
  out.push(`# sluice bench results`);
  out.push("");
  out.push(
    `${results.quick ? "Quick" : "Full"} run of ${m.date.slice(0, 10)} (${m.date}), ${results.elapsedSeconds} s: ` +
      `${m.nproc} x ${m.cpuModel}, ${m.memoryGiB} GiB, load average ${m.loadAverageAtStart?.join(" ")} at start and ` +
      `${m.loadAverageAtEnd?.join(" ")} at end. Node ${m.node}, workerd ${m.versions.workerd} (miniflare ${m.versions.miniflare}), ` +
      `rate-limiter-flexible ${m.versions["rate-limiter-flexible"]}, hono-rate-limiter ${m.versions["hono-rate-limiter"]}, ` +
      `express-rate-limit ${m.versions["express-rate-limit"]}, hono ${m.versions.hono}.`,
  );
  out.push("");
  out.push(
    `Every limiter runs in its own workerd isolate. Each figure is the median of ${results.plan.reps} interleaved repetitions ` +
      `(loops of at least ${results.plan.minMs} ms${results.timing === "thread" ? "; figures 1 and 2 timed by the on-CPU time of the isolate's workerd thread, after an untimed spin request, the others by workerd's millisecond clock" : ", timed inside the request with workerd's millisecond clock"}); ` +
      `(xN) is the median per-repetition ratio to the plain-JS fixed window (${results.baseline}) of the same run. ` +
      `Each decision reads Date.now() and is handed a newly built key string, as a Worker's request is (except in the columns marked reused). Absolute numbers drift with the machine's load; ratios hold better.`,
  );

  out.push("", "## Floors", "");
  out.push(table(["floor", "met", "detail"], results.floors.map((x) => [x.floor, x.met === null ? "pending" : x.met ? "yes" : "**no**", x.detail])));

  out.push("", "## 1. Decisions per second, one hot key", "");
  const hot = f.hotKey;
  const modes = Object.keys(hot);
  out.push(
    table(
      ["limiter", ...modes],
      Object.keys(hot[modes[0]]).map((s) => [label(s), ...modes.map((mode) => `${si(hot[mode][s].decisionsPerSecond.median)}/s${times(hot[mode][s].ratio)}`)]),
    ),
  );

  out.push("", ownCostTable(hot, label));

  out.push("", "## 2. Decisions per second over many keys (after the keys exist)", "");
  const cols = Object.keys(f.manyKeys);
  out.push(
    table(
      ["limiter", ...cols.map((c) => c.replace(/^(\d+)/, (n) => `${Number(n).toLocaleString("en")} keys,`))],
      Object.keys(f.manyKeys[cols[0]]).map((s) => [label(s), ...cols.map((c) => `${si(f.manyKeys[c][s].decisionsPerSecond.median)}/s${times(f.manyKeys[c][s].ratio)}`)]),
    ),
  );
  out.push("", ownCostTable(f.manyKeys, label));
  out.push("", "Zipf: rank r drawn with weight 1/r (s = 1). Keys are IPv4 address strings. Each decision builds its key string, as a Worker gets a new header string per request; \"strings reused\" passes string objects built once instead (V8 then has each string's hash cached in it, which a Map lookup skips hashing for, and at 1M keys each string is a cache miss; neither happens to a header).");

  out.push("", "## 3. Bytes per key", "");
  const sizes = Object.keys(f.bytesPerKey);
  const largest = sizes[sizes.length - 1];
  const subjectsByMemory = Object.keys(f.bytesPerKey[largest]);
  out.push(
    table(
      ["limiter", ...sizes.map((k) => `${Number(k).toLocaleString("en")} keys`), "keys held", "V8 heap growth", "linear memory"],
      subjectsByMemory.map((s) => {
        const big = f.bytesPerKey[largest][s];
        return [
          big.keysInserted === Number(largest) ? label(s) : `${label(s)}, at ${big.keysInserted.toLocaleString("en")} keys`,
          ...sizes.map((k) => (f.bytesPerKey[k][s] ? `${f.bytesPerKey[k][s].bytesPerKey.toFixed(1)} B${times(f.bytesPerKey[k][s].ratio)}` : "")),
          `${big.keysHeld.toLocaleString("en")} of ${big.keysInserted.toLocaleString("en")}`,
          `${(big.heapBytes / 2 ** 20).toFixed(1)} MiB`,
          big.linearMemoryBytes === null ? "" : `${(big.linearMemoryBytes / 2 ** 20).toFixed(1)} MiB`,
        ];
      }),
    ),
  );
  out.push(
    "",
    "Heap growth is read through workerd's inspector (HeapProfiler.collectGarbage, then Runtime.getHeapUsage) before and after " +
      "inserting the keys; sluice adds its whole linear memory (the key table, allocated once for keyCapacity = the key count). " +
      "Bytes per key divide by the keys inserted; a full sluice table evicts a few keys (held < inserted).",
  );

  out.push("", "## 4. New keys inserted in one request", "");
  out.push(
    table(
      ["limiter", "inserted", "time", "error"],
      Object.entries(f.newKeysInOneRequest).map(([s, r]) => [label(s), `${r.inserted.toLocaleString("en")} of ${r.attempted.toLocaleString("en")}`, `${Math.round(r.ms)} ms`, r.failure ?? ""]),
    ),
  );

  out.push("", "## 5. Hono route behind each middleware", "");
  const h = f.hono;
  out.push(
    table(
      ["route", "us per request (in one request)", "added us", "requests/s via dispatchFetch", "vs bare"],
      Object.entries(h.routes).map(([route, r]) => [
        route,
        r.microsecondsPerRequest.median.toFixed(2),
        r.addedMicroseconds === null ? "" : `+${r.addedMicroseconds.median.toFixed(2)}`,
        si(r.requestsPerSecond.median),
        `x${r.requestsPerSecondRatioToBare.toFixed(2)}`,
      ]),
    ),
  );
  out.push(
    "",
    `Inside one request: ${h.count.toLocaleString("en")} app.fetch calls per repetition from 1,000 client addresses (all admitted). ` +
      `Through dispatchFetch: ${h.fetchCount.toLocaleString("en")} requests, 8 in flight.` +
      (h.sluice === "measured" ? "" : ` sluice row: ${h.sluice}.`),
  );

  out.push("", "## 6. sluice.wasm", "");
  const w = f.wasm;
  out.push(
    table(
      ["raw", "gzip -9", "first instance in a fresh isolate", "per instance (mean of " + w.instancesPerIsolate + ")"],
      [[`${w.rawBytes.toLocaleString("en")} B`, `${w.gzipBytes.toLocaleString("en")} B`, `${w.firstInstanceMs.median} ms (1 ms clock)`, `${w.microsecondsPerInstance.median.toFixed(1)} us`]],
    ),
  );
  out.push("", `${w.note}.`);

  out.push("", "## 7. Durable Object store", "");
  const d = f.durableObject;
  out.push(
    table(
      ["requests of", "requests/s", "decisions/s", "us per request", "round trips per request", "requests vs the empty round trip", "calls from reserved units", "rows written per 1,000 calls"],
      Object.entries(d.rows).map(([name, r]) => [
        name,
        `${si(r.requestsPerSecond.median)}/s`,
        `${si(r.decisionsPerSecond.median)}/s`,
        r.microsecondsPerRequest.median.toFixed(1),
        r.roundTripsPerRequest.toFixed(2),
        `x${r.requestsRatioToEcho.toFixed(3)}`,
        r.callsFromReservedShare === undefined ? "" : `${(r.callsFromReservedShare * 100).toFixed(0)} %`,
        r.rowsWrittenPer1000Calls === undefined ? "" : r.rowsWrittenPer1000Calls.toFixed(0),
      ]),
    ),
  );
  out.push(
    "",
    "One isolate sends each request's checks through createDurableStore (the store the middleware's store: 'durable' uses) " +
      "to SluiceDurableObject, awaiting each answer (with 8 in flight: eight such loops at once). " +
      "Echo is an object answering the same RPC with a fixed Outcome, with no core and no storage; \"echo writing\" upserts " +
      "one SQLite row per check first, the least a durable counter writes, so its answer waits for the commit as sluice's does. " +
      `Round trips are the RPCs the store made, counted on the binding. ${d.note[0].toUpperCase()}${d.note.slice(1)}.`,
  );
  const c = f.concurrency;
  if (c !== undefined) {
    out.push("", "## 8. Concurrency middleware", "");
    out.push(
      table(
        ["route", "us per request", "added us", "vs bare"],
        Object.entries(c.routes).map(([route, r]) => [
          route,
          r.microsecondsPerRequest.median.toFixed(1),
          r.addedMicroseconds === null ? "" : `+${r.addedMicroseconds.median.toFixed(1)}`,
          `x${r.ratioToBare.toFixed(2)}`,
        ]),
      ),
    );
    out.push(
      "",
      "A Hono route with concurrency() (store 'memory', then 'durable': one object per client key) against the same route " +
        "without it, in the isolate that has the Durable Object bound. Each request is an acquisition before the handler and a " +
        `release when its body has been read to the end. ${c.note[0].toUpperCase()}${c.note.slice(1)}.`,
    );
  }
  if (f.redis !== undefined) {
    out.push("", "## 9. Redis store and @upstash/ratelimit", "");
    const r = f.redis;
    out.push(
      table(
        ["case", "decisions/s", "round trips per decision", "conflicts per decision", "decisions per script call"],
        Object.entries(r.rows).map(([name, row]) => [
          name,
          `${si(row.decisionsPerSecond.median)}/s`,
          row.roundTripsPerDecision.toFixed(2),
          row.conflictsPerDecision === null || row.conflictsPerDecision === undefined ? "" : row.conflictsPerDecision.toFixed(3),
          row.decisionsPerCall === null || row.decisionsPerCall === undefined ? "" : row.decisionsPerCall.toFixed(2),
        ]),
      ),
    );
    const a = r.agreement;
    out.push(
      "",
      `Admitted, ${a.isolates} isolates sending ${a.count} decisions each at once over ${a.keys} keys${a.inFlight === undefined ? "" : `, ${a.inFlight} in flight per isolate`}, limit ${a.limit} per key per hour:`,
      "",
      table(
        ["algorithm", "sluice (store: 'redis')", "@upstash/ratelimit", "exact"],
        Object.entries(r.admitted).map(([algorithm, row]) => [
          algorithm === "sliding-counter" ? "sliding counter (Upstash: slidingWindow)" : algorithm,
          String(row.sluice),
          String(row.upstash),
          row.exact ? `both must be ${row.expected}` : "approximate in both",
        ]),
      ),
      "",
      "Each isolate decides one request at a time (8 at once where the case says so) through createRedisStore (the store the middleware's store: 'redis' uses) " +
        "or @upstash/ratelimit (no ephemeral cache, no timeout), both over fetch to the same Redis. Cold keys: a new key per decision; " +
        "warm keys: 100 keys in turn, after one pass; one key from 4 isolates: four isolates on one key at once (contention). " +
        "sluice's requests queued in an isolate on one key are decided together by its next script call (decisions per script call). " +
        "Round trips are the HTTP requests the bridge served. The durable row is figure 7's first durable case, measured in this figure's repetitions. " +
        `${r.note[0].toUpperCase()}${r.note.slice(1)}.`,
    );
  }
    if (f.leases !== undefined) {
    out.push("", "## 10. One rule over 4 isolates: memory, durable, leased", "");
    const l = f.leases;
    out.push(
      table(
        ["store, keys", "decisions/s", "admitted/s", "round trips per 1,000 decisions", "p50 / p99 added ms", "most admitted per key and minute", "over the limit", "vs durable"],
        Object.entries(l.rows).map(([name, r]) => [
          name,
          `${si(r.decisionsPerSecond.median)}/s`,
          r.admittedPerSecond === undefined ? "" : `${si(r.admittedPerSecond.median)}/s`,
          r.roundTripsPer1000Decisions.toFixed(1),
          `${r.p50AddedMs} / ${r.p99AddedMs}`,
          `${r.mostAdmittedPerKeyAndMinute.toLocaleString("en")} of ${r.limit.toLocaleString("en")}`,
          r.overAdmitted.toLocaleString("en"),
          r.decisionsRatioToDurable === undefined
            ? ""
            : `x${r.decisionsRatioToDurable.toFixed(1)}` + (r.admittedRatioToDurable === undefined ? "" : ` (admitted x${r.admittedRatioToDurable.toFixed(1)})`),
        ]),
      ),
    );
    out.push(
      "",
      `Store "memory", store "durable", and store "durable" with \`lease: true\` (docs/leases.md), as the middleware builds them, ` +
        (l.rows["leased (sliding log), Zipf mix of 1,000 keys"] === undefined
          ? ""
          : `and the Zipf mix's rule as a sliding log through "durable" and leased (its admissions counted per key over a repetition, which lasts seconds: every one in a single window; no hot-key row, since a log holds 4 bytes per unit of its limit per key and the hot key's 10M is beyond the object's memory), `) +
        (l.limitsPerMinute === undefined
          ? `one fixed-window rule of ${l.limitPerMinute.toLocaleString("en")} per minute per key; `
          : `one fixed-window rule per case: ${l.limitsPerMinute.hot.toLocaleString("en")} per minute for the hot key (out of reach of a repetition, so that ` +
            `decisions/s compare deciding, not denying past a spent limit), ${l.limitsPerMinute.zipf.toLocaleString("en")} per minute per key for the Zipf mix (its hottest keys reach it); `) +
        `${l.note}.`,
    );
  }
out.push("");
  return out.join("\n");
}
