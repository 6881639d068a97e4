// What one rule did over the replay: request counts by verdict, its clients (bounded, client-table.js)
// with their peak rates (peak-probe.js), the clients it limited most, the distribution of per-client
// peaks, and denials over time. Memory is fixed by the rule's key capacity and the log's time span
// (one bucket per stretch of time, at most MAX_BUCKETS), never by the number of lines.
import { ClientTable } from "./client-table.js";

/** @import { ClientRecord } from "./client-table.js" */
/** @import { PeakProbe } from "./peak-probe.js" */
/** @import { SuggestGrid } from "./suggest.js" */
/** @import { ReplayRule } from "./gateway-engine.js" */

const TOP_CLIENTS = 20;
const MAX_BUCKETS = 720;
const FIRST_BUCKET_MS = 60_000;
// Peak histogram bins: 4 per doubling (bin b holds peaks in [2^(b/4), 2^((b+1)/4))), so a drawn
// limit falls within 19 % of its bin's edge.
const BINS_PER_DOUBLING = 4;

/** @param {number} peak */
export function peakBin(peak) {
  return Math.floor(Math.log2(peak) * BINS_PER_DOUBLING + 1e-9);
}
/** @param {number} bin */
export function binStart(bin) {
  return 2 ** (bin / BINS_PER_DOUBLING);
}

export class RuleStats {
  /**
   * @param {ReplayRule} rule
   * @param {{ probe: PeakProbe, maxClients: number, suggest: SuggestGrid | null }} options
   */
  constructor(rule, { probe, maxClients, suggest }) {
    this.rule = rule;
    this.probe = probe;
    this.probeRule = probe.addRule(rule.windowMs, rule.keyCapacity);
    this.suggest = suggest;
    this.requests = 0; // requests the rule checked
    this.admitted = 0;
    this.denied = 0; // denied by this enforced rule
    this.wouldDeny = 0; // denied by this rule in shadow (or outside its rollout)
    this.unchecked = 0; // not asked: an earlier store group blocked the request
    this.clients = 0;
    this.clientsLimited = 0;
    /** @type {Map<number, number>} */
    this.peakBins = new Map();
    /** @type {ClientRecord[]} */
    this.top = [];
    this.bucketMs = FIRST_BUCKET_MS;
    this.firstBucket = -1;
    /** @type {Map<number, { requests: number, limited: number }>} */
    this.buckets = new Map();
    // The bucket of the last request: most requests fall in the same one as the request before.
    this.lastIndex = -1;
    this.lastBucket = { requests: 0, limited: 0 };
    this.table = new ClientTable(maxClients, (record) => this.#retire(record));
  }

  /**
   * observe counts one verdict of this rule.
   * @param {string} key
   * @param {string} event "admitted", "denied", "would_have_denied" or "unchecked"
   * @param {number} cost
   * @param {number} nowMs
   */
  observe(key, event, cost, nowMs) {
    if (event === "unchecked") {
      this.unchecked++;
      return;
    }
    this.requests++;
    const limited = event !== "admitted";
    if (!limited) this.admitted++;
    else if (event === "denied") this.denied++;
    else this.wouldDeny++;
    const record = this.table.record(key);
    record.requests++;
    if (limited) record.limited++;
    const count = this.probe.count(this.probeRule, key, cost, nowMs);
    if (count > record.peak) record.peak = count;
    if (this.suggest !== null) record.limitedAt |= this.suggest.check(key, cost, nowMs);
    this.#countInTime(nowMs, limited);
  }

  /** @param {number} nowMs @param {boolean} limited */
  #countInTime(nowMs, limited) {
    let index = Math.floor(nowMs / this.bucketMs);
    if (this.firstBucket < 0 || index < this.firstBucket) this.firstBucket = index;
    // Too many buckets: double their width (merging pairs), so memory follows the span, bounded.
    while (index - this.firstBucket >= MAX_BUCKETS) {
      this.bucketMs *= 2;
      const merged = new Map();
      for (const [i, bucket] of this.buckets) {
        const j = Math.floor(i / 2);
        const into = merged.get(j);
        if (into === undefined) merged.set(j, { requests: bucket.requests, limited: bucket.limited });
        else {
          into.requests += bucket.requests;
          into.limited += bucket.limited;
        }
      }
      this.buckets = merged;
      this.lastIndex = -1;
      this.firstBucket = Math.floor(this.firstBucket / 2);
      index = Math.floor(nowMs / this.bucketMs);
    }
    if (index === this.lastIndex) {
      this.lastBucket.requests++;
      if (limited) this.lastBucket.limited++;
      return;
    }
    let bucket = this.buckets.get(index);
    if (bucket === undefined) {
      bucket = { requests: 0, limited: 0 };
      this.buckets.set(index, bucket);
    }
    bucket.requests++;
    if (limited) bucket.limited++;
    this.lastIndex = index;
    this.lastBucket = bucket;
  }

  /** @param {ClientRecord} record */
  #retire(record) {
    this.clients++;
    if (record.limited > 0) this.clientsLimited++;
    if (record.peak > 0) {
      const bin = peakBin(record.peak);
      this.peakBins.set(bin, (this.peakBins.get(bin) ?? 0) + 1);
    }
    if (this.suggest !== null) this.suggest.retire(record.limitedAt);
    if (record.limited > 0 && (this.top.length < TOP_CLIENTS || record.limited > this.top[this.top.length - 1].limited)) {
      this.top.push(record);
      this.top.sort((a, b) => b.limited - a.limited || b.peak - a.peak);
      if (this.top.length > TOP_CLIENTS) this.top.pop();
    }
  }

  /** summary finishes the rule's statistics (call once, at the end). */
  summary() {
    const evictions = this.table.evictions;
    this.table.flush();
    const rule = this.rule;
    const limited = this.denied + this.wouldDeny;
    const windowSec = rule.windowMs / 1000;
    const buckets = [...this.buckets.entries()].sort((a, b) => a[0] - b[0]);
    return {
      rule: { ...rule },
      requests: this.requests,
      admitted: this.admitted,
      denied: this.denied,
      wouldDeny: this.wouldDeny,
      limited,
      limitedShare: this.requests === 0 ? 0 : limited / this.requests,
      unchecked: this.unchecked,
      clients: this.clients,
      clientsLimited: this.clientsLimited,
      clientsLimitedShare: this.clients === 0 ? 0 : this.clientsLimited / this.clients,
      // Clients retired to keep the table bounded: above 0, clients and top counts are approximate.
      clientRecordsRetired: evictions,
      clientTableCapacity: this.table.capacity,
      topClients: this.top.map((c) => ({ key: c.key, requests: c.requests, limited: c.limited, peak: c.peak, peakPerSec: c.peak / windowSec })),
      peakDistribution: [...this.peakBins.entries()].sort((a, b) => a[0] - b[0]).map(([bin, clients]) => ({ from: binStart(bin), to: binStart(bin + 1), clients })),
      overTime: { bucketMs: this.bucketMs, buckets: buckets.map(([i, b]) => ({ startMs: i * this.bucketMs, requests: b.requests, limited: b.limited })) },
      suggest: this.suggest === null ? null : { ...this.suggest.report(this.clients, this.requests), skippedLimits: this.suggest.skippedLimits },
    };
  }
}
