// The deployment's counters, added up from every isolate's reports (report.js sends them; object.js
// keeps this state in a Durable Object). An isolate reports its counters as they stand since it
// started, the same families its /metrics shows, so a report is idempotent: the object keeps each
// isolate's latest, and the deployment's count is the sum of those. The change since an isolate's
// previous report goes into the minute it arrived in, for the last hour's history.
//
// Isolates come and go. One that has not reported for RETIRE_AFTER_MS is retired: its counts move into
// one `retired` total, so what it counted is never lost and the table of isolates stays small.
//
// A gauge (a family of type "gauge", such as a store's round trip) is not a count: summing it over
// isolates means nothing. Each isolate's last reported value is kept, and the deployment's value is
// the largest or the mean (the family's `reduce`) of those reported in the last GAUGE_EXPIRY_MS; an
// isolate silent for longer no longer speaks for now, and a retired one takes its gauges with it.

/** How many minutes of history the dashboard keeps. */
export const HISTORY_MINUTES = 60;
/** An isolate silent for this long is folded into the retired total. */
export const RETIRE_AFTER_MS = 15 * 60_000;
/** The most isolates tracked one by one; beyond it, the longest silent are retired first. */
export const MAX_ISOLATES = 512;
/** A gauge an isolate has not reported for this long is left out of the deployment's value. */
export const GAUGE_EXPIRY_MS = 5 * 60_000;
/** How many limited keys the dashboard lists. */
export const TOP_KEYS = 20;
// How long a limited key stays in the "limited now" list after its last report.
const LIMITED_NOW_MS = 5 * 60_000;
// The rule events the history keeps per minute (metrics.js's RULE_EVENTS without near_limit).
export const HISTORY_EVENTS = Object.freeze(["admitted", "denied", "would_have_denied", "bypassed", "fallbacks"]);

/**
 * One isolate's report: its counters since it started, and the keys its rules denied since its
 * previous report (already redacted by the isolate unless the configuration shows keys).
 * @typedef {object} IsolateReport
 * @property {string} isolate A random id the isolate drew when it started.
 * @property {number} seq The report's number in its isolate: reports sent concurrently may arrive out
 *   of order, and one older than the latest taken is ignored.
 * @property {{ name: string, help: string, type?: string, reduce?: string, samples: { labels: Record<string, string>, value: number }[] }[]} families
 *   A family of type "gauge" is combined with `reduce` ("max" or "mean"); any other is a counter, summed.
 * @property {[key: string, denials: number, rule: string][]} limited
 */

/**
 * The whole deployment's view, as the dashboard page reads it.
 * @typedef {object} DeploymentView
 * @property {number} nowMs
 * @property {number} isolates Isolates that reported in the last RETIRE_AFTER_MS.
 * @property {number} retiredIsolates
 * @property {{ name: string, help: string, type: "counter" | "gauge", samples: { labels: Record<string, string>, value: number }[] }[]} families
 * @property {{ route: string, rule: string, mode: string, minutes: Record<string, number[]> }[]} history
 * @property {{ key: string, rule: string, denials: number, lastMs: number }[]} limitedNow
 */

const sampleId = (/** @type {string} */ name, /** @type {Record<string, string>} */ labels) => `${name}\u0000${JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;

export class DeploymentCounters {
  /** @param {any} [state] What toJSON() returned, to restore. */
  constructor(state = undefined) {
    /** @type {Map<string, { lastMs: number, seq: number, values: Map<string, number>, gauges: Map<string, number> }>} */
    this.isolates = new Map();
    /** @type {Map<string, number>} */
    this.retired = new Map();
    this.retiredIsolates = 0;
    /** @type {Map<string, { name: string, help: string, labels: Record<string, string>, reduce?: "max" | "mean" }>} */
    this.series = new Map();
    /** Per minute (epoch minute), per rule series id: deltas of HISTORY_EVENTS. */
    /** @type {Map<number, Map<string, number[]>>} */
    this.minutes = new Map();
    /** @type {Map<string, { key: string, rule: string, denials: number, lastMs: number }>} */
    this.limited = new Map();
    if (state !== undefined) this.#restore(state);
  }

  /**
   * Takes one isolate's report at `nowMs` (the object's clock). Malformed parts are skipped: a report
   * comes from the deployment's own isolates, but a bad one must not break the dashboard.
   * @param {IsolateReport} report
   * @param {number} nowMs
   */
  ingest(report, nowMs) {
    if (typeof report?.isolate !== "string" || !Array.isArray(report.families) || !Number.isSafeInteger(report.seq)) return false;
    const previous = this.isolates.get(report.isolate);
    if (previous !== undefined && report.seq <= previous.seq) {
      // Its counters are older than those taken; its denied keys are news all the same.
      this.#addLimited(report.limited, nowMs);
      return false;
    }
    /** @type {Map<string, number>} */
    const values = new Map();
    /** @type {Map<string, number>} */
    const gauges = new Map();
    const minute = Math.floor(nowMs / 60_000);
    for (const family of report.families) {
      if (typeof family?.name !== "string" || !Array.isArray(family.samples)) continue;
      const reduce = family.type !== "gauge" ? undefined : family.reduce === "mean" ? "mean" : "max";
      for (const sample of family.samples) {
        const value = sample?.value;
        if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || typeof sample.labels !== "object" || sample.labels === null) continue;
        const labels = Object.fromEntries(Object.entries(sample.labels).map(([k, v]) => [String(k), String(v)]));
        const id = sampleId(family.name, labels);
        if (!this.series.has(id)) this.series.set(id, { name: family.name, help: String(family.help ?? ""), labels, ...(reduce === undefined ? {} : { reduce }) });
        if (this.series.get(id)?.reduce !== undefined) {
          gauges.set(id, value);
          continue;
        }
        values.set(id, value);
        const event = ruleEvent(family.name);
        if (event >= 0) {
          // Counters only grow within an isolate (a restarted isolate draws a new id).
          const delta = value - (previous?.values.get(id) ?? 0);
          if (delta > 0) this.#addToMinute(minute, ruleSeries(labels), event, delta);
        }
      }
    }
    this.isolates.set(report.isolate, { lastMs: nowMs, seq: report.seq, values, gauges });
    this.#addLimited(report.limited, nowMs);
    this.#prune(nowMs);
    return true;
  }

  /**
   * The deployment's counters: each series summed over every isolate, live and retired.
   * @param {number} nowMs
   * @returns {DeploymentView}
   */
  view(nowMs) {
    this.#prune(nowMs);
    const totals = new Map(this.retired);
    for (const { values } of this.isolates.values()) for (const [id, value] of values) totals.set(id, (totals.get(id) ?? 0) + value);
    for (const [id, value] of this.#gaugeValues(nowMs)) totals.set(id, value);
    /** @type {Map<string, DeploymentView["families"][number]>} */
    const families = new Map();
    for (const [id, value] of totals) {
      const { name, help, labels, reduce } = /** @type {any} */ (this.series.get(id));
      let family = families.get(name);
      if (family === undefined) families.set(name, (family = { name, help, type: reduce === undefined ? "counter" : "gauge", samples: [] }));
      family.samples.push({ labels, value });
    }
    const firstMinute = Math.floor(nowMs / 60_000) - HISTORY_MINUTES + 1;
    /** @type {Map<string, DeploymentView["history"][number]>} */
    const history = new Map();
    for (let m = firstMinute; m < firstMinute + HISTORY_MINUTES; m++) {
      for (const [rule, counts] of this.minutes.get(m) ?? []) {
        let entry = history.get(rule);
        if (entry === undefined) {
          const [route, name, mode] = JSON.parse(rule);
          entry = { route, rule: name, mode, minutes: Object.fromEntries(HISTORY_EVENTS.map((e) => [e, new Array(HISTORY_MINUTES).fill(0)])) };
          history.set(rule, entry);
        }
        HISTORY_EVENTS.forEach((event, i) => {
          /** @type {any} */ (entry).minutes[event][m - firstMinute] += counts[i];
        });
      }
    }
    const limitedNow = [...this.limited.values()]
      .filter((entry) => nowMs - entry.lastMs <= LIMITED_NOW_MS)
      .sort((a, b) => b.denials - a.denials || (a.key < b.key ? -1 : 1))
      .slice(0, TOP_KEYS);
    const live = [...this.isolates.values()].filter(({ lastMs }) => nowMs - lastMs <= RETIRE_AFTER_MS).length;
    return { nowMs, isolates: live, retiredIsolates: this.retiredIsolates, families: [...families.values()], history: [...history.values()], limitedNow };
  }

  /**
   * Each gauge series' deployment value: the largest or the mean (its `reduce`) of the values the
   * isolates reported in the last GAUGE_EXPIRY_MS.
   * @param {number} nowMs
   * @returns {Map<string, number>}
   */
  #gaugeValues(nowMs) {
    /** @type {Map<string, { sum: number, count: number, max: number }>} */
    const reported = new Map();
    for (const { lastMs, gauges } of this.isolates.values()) {
      if (nowMs - lastMs > GAUGE_EXPIRY_MS) continue;
      for (const [id, value] of gauges) {
        const seen = reported.get(id);
        if (seen === undefined) reported.set(id, { sum: value, count: 1, max: value });
        else {
          seen.sum += value;
          seen.count++;
          seen.max = Math.max(seen.max, value);
        }
      }
    }
    const values = new Map();
    for (const [id, { sum, count, max }] of reported) values.set(id, this.series.get(id)?.reduce === "mean" ? sum / count : max);
    return values;
  }

  /** The state as plain JSON, for storage. */
  toJSON() {
    return {
      isolates: [...this.isolates].map(([id, { lastMs, seq, values, gauges }]) => [id, lastMs, seq, [...values], [...gauges]]),
      retired: [...this.retired],
      retiredIsolates: this.retiredIsolates,
      series: [...this.series],
      minutes: [...this.minutes].map(([m, rules]) => [m, [...rules]]),
      limited: [...this.limited.values()],
    };
  }

  /** @param {any} state What toJSON() returned (stored JSON, as the constructor takes it). */
  #restore(state) {
    for (const [id, lastMs, seq, values, gauges] of state.isolates ?? []) this.isolates.set(id, { lastMs, seq, values: new Map(values), gauges: new Map(gauges ?? []) });
    this.retired = new Map(state.retired ?? []);
    this.retiredIsolates = state.retiredIsolates ?? 0;
    this.series = new Map(state.series ?? []);
    for (const [m, rules] of state.minutes ?? []) this.minutes.set(m, new Map(rules));
    for (const entry of state.limited ?? []) this.limited.set(`${entry.rule}\u0000${entry.key}`, entry);
  }

  // Adds the keys an isolate saw denied since its previous report.
  /** @param {unknown} limited @param {number} nowMs */
  #addLimited(limited, nowMs) {
    for (const entry of Array.isArray(limited) ? limited : []) {
      const [key, denials, rule] = entry ?? [];
      if (typeof key !== "string" || typeof denials !== "number" || !(denials > 0)) continue;
      const id = `${rule}\u0000${key}`;
      const known = this.limited.get(id);
      if (known === undefined) this.limited.set(id, { key, rule: String(rule ?? ""), denials, lastMs: nowMs });
      else {
        known.denials += denials;
        known.lastMs = nowMs;
      }
    }
  }

  /** @param {number} minute @param {string} rule @param {number} event @param {number} delta */
  #addToMinute(minute, rule, event, delta) {
    let rules = this.minutes.get(minute);
    if (rules === undefined) this.minutes.set(minute, (rules = new Map()));
    let counts = rules.get(rule);
    if (counts === undefined) rules.set(rule, (counts = new Array(HISTORY_EVENTS.length).fill(0)));
    counts[event] += delta;
  }

  /** @param {number} nowMs */
  #prune(nowMs) {
    const oldestMinute = Math.floor(nowMs / 60_000) - HISTORY_MINUTES + 1;
    for (const minute of this.minutes.keys()) if (minute < oldestMinute) this.minutes.delete(minute);
    for (const [id, entry] of this.limited) if (nowMs - entry.lastMs > LIMITED_NOW_MS) this.limited.delete(id);
    const byAge = [...this.isolates].sort(([, a], [, b]) => a.lastMs - b.lastMs);
    let excess = byAge.length - MAX_ISOLATES;
    for (const [id, { lastMs, values }] of byAge) {
      if (!(nowMs - lastMs > RETIRE_AFTER_MS || excess > 0)) break;
      for (const [series, value] of values) this.retired.set(series, (this.retired.get(series) ?? 0) + value);
      this.isolates.delete(id);
      this.retiredIsolates++;
      excess--;
    }
  }
}

// The index in HISTORY_EVENTS of a per-rule family (sluice_rule_<event>_total), or -1.
/** @param {string} name @returns {number} */
function ruleEvent(name) {
  const match = /^sluice_rule_(.+)_total$/.exec(name);
  return match === null ? -1 : HISTORY_EVENTS.indexOf(match[1]);
}

const ruleSeries = (/** @type {Record<string, string | undefined>} */ labels) => JSON.stringify([labels.route ?? "", labels.rule ?? "", labels.mode ?? ""]);
