// Where the replay's "deciding and counting" time goes, for bench/replay.js: the same logged requests,
// already read into records, decided by each part alone, CPU time per request.
//   library decision   the --rule engine's decide(): createLimiter's own engine (the code a Worker runs
//                      for the same rule: key function, rule table, memory store, the core), no statistics;
//   core check alone   SluiceCore.check on the record's address: the core's arithmetic and key table,
//                      without the library around it;
//   statistics         RuleStats.observe for each verdict: the client table, the peak probe (a second
//                      core check), the denials over time.
// A floor of 500,000 lines/s is 2 us a line for everything, reading and parsing included: these say how
// much of that the Worker's own decision code takes before the replay adds anything.
import { PeakProbe } from "../../worker/cli/replay/peak-probe.js";
import { RuleStats } from "../../worker/cli/replay/rule-stats.js";
import { SluiceCore, sluiceWasm } from "../../worker/cli/replay/library.js";

const cpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/**
 * decideParts measures each part over `records` (LogRecords in log order), `rounds` times each, in
 * rotating order, each round on fresh state; returns the per-request CPU time of each part, in us, per round.
 * @param {readonly import("../../worker/cli/replay/formats/record.js").LogRecord[]} records
 * @param {{ engineOf: () => any, rule: { algorithm: string, limit: number, windowMs: number, keyCapacity: number }, rounds: number }} options
 */
export function decideParts(records, { engineOf, rule, rounds }) {
  const n = records.length;
  const noVerdicts = () => {};
  const parts = {
    library() {
      const engine = engineOf();
      const start = cpuMicros();
      for (let i = 0; i < n; i++) engine.decide(records[i], noVerdicts);
      return (cpuMicros() - start) / n;
    },
    core() {
      const core = SluiceCore.instantiate(sluiceWasm);
      const id = core.addRule(rule);
      const start = cpuMicros();
      for (let i = 0; i < n; i++) core.check(id, records[i].ip, 1, records[i].timeMs);
      return (cpuMicros() - start) / n;
    },
    statistics() {
      const engine = engineOf();
      const stats = new RuleStats(engine.rules[0], { probe: new PeakProbe(), maxClients: Math.min(rule.keyCapacity, 200_000), suggest: null });
      // The verdicts to count, taken first (not timed): every third request denied, keyed as ip() keys it.
      const keys = records.map((record) => `ip:${record.ip}`);
      const start = cpuMicros();
      for (let i = 0; i < n; i++) stats.observe(keys[i], i % 3 === 0 ? "denied" : "admitted", 1, records[i].timeMs);
      return (cpuMicros() - start) / n;
    },
  };
  /** @type {Record<string, number[]>} */
  const perRound = { library: [], core: [], statistics: [] };
  const names = /** @type {(keyof typeof parts)[]} */ (Object.keys(parts));
  for (const name of names) parts[name](); // warm-up, not counted
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(round + k) % names.length];
      perRound[name].push(parts[name]());
    }
  }
  return perRound;
}
