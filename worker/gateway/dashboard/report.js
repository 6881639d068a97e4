// The isolate's side of the dashboard: it remembers which keys its rules denied, and every
// reportIntervalMs (at the first request after it, since a Worker has no timer of its own between
// requests) sends its counters to the aggregating Durable Object (object.js) in the background. A
// request never waits for a report, and a report that fails is counted, never retried in a loop.
//
// Keys leave the isolate redacted unless the configuration says `showKeys`: the part before the first
// ":" (the key's kind, such as `ip`) and 12 hex digits of an HMAC of the key under the admin token, so
// the same client has the same name in every isolate and nobody without the token can test guesses
// (an IPv4 address has only 2^32 spellings: a plain hash would not hide it).

/** The most distinct keys an isolate tracks between two reports (Space-Saving: the rarest make room). */
export const MAX_TRACKED_KEYS = 256;
/** How many of them a report carries. */
const REPORTED_KEYS = 50;
/** The Durable Object name every isolate reports to. */
export const DASHBOARD_OBJECT = "sluice-dashboard";
const encoder = new TextEncoder();

export class DashboardReporter {
  /**
   * @param {{ binding: string, reportIntervalMs: number, showKeys: boolean }} settings
   * @param {string} tokenSecret The admin token's binding name (the key of the redaction's HMAC).
   */
  constructor(settings, tokenSecret) {
    this.settings = settings;
    this.tokenSecret = tokenSecret;
    // Drawn at the first report: a Worker may not generate random values at start-up (global scope).
    this.isolate = "";
    /** @type {Map<string, { key: string, rule: string, denials: number }>} */
    this.limited = new Map();
    this.lastReportMs = -Infinity;
    this.seq = 0;
    this.reports = 0;
    this.errors = 0;
  }

  /**
   * Notes the keys a request's rules denied: verdicts as decide.js builds them.
   * @param {readonly { event: string, key: string | null, rule: { name: string } }[]} verdicts
   */
  note(verdicts) {
    for (const verdict of verdicts) {
      if (verdict.event !== "denied" || verdict.key === null) continue;
      const id = `${verdict.rule.name}\u0000${verdict.key}`;
      const known = this.limited.get(id);
      if (known !== undefined) {
        known.denials++;
        continue;
      }
      if (this.limited.size < MAX_TRACKED_KEYS) {
        this.limited.set(id, { key: verdict.key, rule: verdict.rule.name, denials: 1 });
        continue;
      }
      // Space-Saving: the newcomer takes the rarest entry's place and count (plus one), so a key
      // denied often is never pushed out by many keys denied once.
      let rarestId = "";
      let rarest = Infinity;
      for (const [otherId, entry] of this.limited) {
        if (entry.denials < rarest) {
          rarestId = otherId;
          rarest = entry.denials;
        }
      }
      this.limited.delete(rarestId);
      this.limited.set(id, { key: verdict.key, rule: verdict.rule.name, denials: rarest + 1 });
    }
  }

  /** Whether a report is due at nowMs. @param {number} nowMs */
  due(nowMs) {
    return nowMs - this.lastReportMs >= this.settings.reportIntervalMs;
  }

  /**
   * Sends the counters (`families`, as /metrics has them) and the keys denied since the last report.
   * Resolves when the object has them; a failure is counted and swallowed.
   * @param {any} env @param {number} nowMs @param {import("../metrics.js").MetricFamily[]} families
   * @returns {Promise<void>}
   */
  async report(env, nowMs, families) {
    this.lastReportMs = nowMs;
    const seq = ++this.seq;
    if (this.isolate === "") this.isolate = crypto.randomUUID();
    const tracked = [...this.limited.values()].sort((a, b) => b.denials - a.denials).slice(0, REPORTED_KEYS);
    this.limited.clear();
    try {
      const token = env?.[this.tokenSecret];
      const limited = await Promise.all(tracked.map(async ({ key, rule, denials }) => [this.settings.showKeys ? key : await redact(key, token), denials, rule]));
      const stub = dashboardObject(env, this.settings.binding);
      await stub.report({ isolate: this.isolate, seq, families: families.map(reportedFamily), limited });
      this.reports++;
    } catch {
      this.errors++;
    }
  }

  /** The reporter's own counters, as a metric family for /metrics. */
  families() {
    return [
      {
        name: "sluice_dashboard_reports_total",
        help: "Reports of this isolate's counters to the dashboard's Durable Object, by outcome.",
        type: /** @type {const} */ ("counter"),
        samples: [
          { labels: { outcome: "sent" }, value: this.reports },
          { labels: { outcome: "failed" }, value: this.errors },
        ],
      },
    ];
  }
}

// A family as a report carries it: a gauge with how isolates combine (aggregate.js), a counter without.
/** @param {import("../metrics.js").MetricFamily} family */
function reportedFamily({ name, help, type, samples, reduce }) {
  return type === "gauge" ? { name, help, type, reduce, samples } : { name, help, samples };
}

/**
 * The dashboard's Durable Object: one per deployment.
 * @param {any} env @param {string} binding
 */
export function dashboardObject(env, binding) {
  const namespace = env?.[binding];
  if (typeof namespace?.idFromName !== "function") throw new TypeError(`the Durable Object binding ${binding} (admin.dashboard.binding) is missing`);
  return namespace.get(namespace.idFromName(DASHBOARD_OBJECT));
}

/** redact is `kind#<12 hex>`: the key's kind and an HMAC of the whole key under `token` (the dashboard's blocks use it too). @param {string} key @param {string} token @returns {Promise<string>} */
export async function redact(key, token) {
  const colon = key.indexOf(":");
  const kind = colon > 0 && colon <= 16 && /^[a-z0-9_-]+$/i.test(key.slice(0, colon)) ? key.slice(0, colon) : "key";
  const hmacKey = await crypto.subtle.importKey("raw", encoder.encode(`sluice dashboard keys\u0000${String(token)}`), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", hmacKey, encoder.encode(key)));
  return `${kind}#${[...mac.slice(0, 6)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
