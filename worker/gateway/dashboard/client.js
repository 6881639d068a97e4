// @ts-nocheck: a browser script (see below); the sources are checked against Workers' types, which have no DOM.
// The dashboard page's script, run in the browser. It is served as `(${dashboardClient})()` from the
// dashboard's own path (page.js), so the Content-Security-Policy can forbid inline scripts and every
// other origin. It reads the deployment's counters from `data` every few seconds and builds the page
// with DOM calls and textContent only: a route name, rule name or key is never parsed as HTML.
//
// It must stay self-contained: nothing outside the function exists in the browser. It is not
// type-checked with the sources: they are checked against the Workers runtime's types, which have no DOM.

export function dashboardClient() {
  const root = /** @type {HTMLElement} */ (document.getElementById("dashboard"));
  const base = root.dataset.base ?? "";
  const REFRESH_MS = 5000;
  const SVG = "http://www.w3.org/2000/svg";

  /** @param {string} tag @param {Record<string, string>} [attributes] @param {(Node | string)[]} [children] */
  function el(tag, attributes = {}, children = []) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    for (const child of children) node.append(child);
    return node;
  }
  const number = (value) => (Number.isInteger(value) ? value.toLocaleString("en-US") : value.toFixed(3));
  const labelText = (labels) =>
    Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(", ");
  // The identity a test (and a reader of the DOM) can match against /metrics: family and labels.
  const metricId = (name, labels) => `${name}${JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;

  /** An SVG sparkline of `values` (one per minute), `label` for screen readers. */
  function sparkline(values, label) {
    const width = 180;
    const height = 28;
    const max = Math.max(1, ...values);
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("width", String(width));
    svg.setAttribute("height", String(height));
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
    const step = width / Math.max(1, values.length - 1);
    const points = values.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - (v / max) * (height - 4)).toFixed(1)}`).join(" ");
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", points);
    line.setAttribute("class", "spark");
    svg.append(line);
    return svg;
  }

  // Only the counters that counted something: a deployment has hundreds of series at zero.
  function familyTable(families, caption) {
    const rows = [];
    for (const family of families) {
      for (const sample of family.samples) {
        if (sample.value === 0) continue;
        rows.push(
          el("tr", {}, [
            el("td", {}, [family.name]),
            el("td", {}, [labelText(sample.labels)]),
            el("td", { class: "num", "data-metric": metricId(family.name, sample.labels) }, [number(sample.value)]),
          ]),
        );
      }
    }
    if (rows.length === 0) return el("p", { class: "empty" }, [`No ${caption.toLowerCase()} yet.`]);
    return el("table", {}, [el("caption", {}, [caption]), el("thead", {}, [el("tr", {}, [el("th", {}, ["counter"]), el("th", {}, ["labels"]), el("th", {}, ["total"])])]), el("tbody", {}, rows)]);
  }

  // Round trips per store chain (gateway/store-round-trips.js): measured, then the gauges in ms.
  const ROUND_TRIP_COLUMNS = [
    ["sluice_store_round_trips_measured_total", "measured"],
    ["sluice_store_round_trip_smoothed_ms", "smoothed (ms)"],
    ["sluice_store_round_trip_p50_ms", "p50 (ms)"],
    ["sluice_store_round_trip_p99_ms", "p99 (ms)"],
    ["sluice_store_round_trip_max_ms", "max (ms)"],
  ];
  const ROUND_TRIP_FAMILY = /^sluice_store_round_trip/;
  function roundTripTable(byName) {
    const chains = (byName.get(ROUND_TRIP_COLUMNS[0][0])?.samples ?? []).map((sample) => sample.labels.chain);
    if (chains.length === 0) return el("p", { class: "empty", id: "round-trips" }, ["No store round trip measured yet."]);
    const rows = chains.map((chain) =>
      el("tr", {}, [
        el("td", {}, [chain]),
        ...ROUND_TRIP_COLUMNS.map(([name]) => {
          const value = byName.get(name)?.samples.find((sample) => sample.labels.chain === chain)?.value;
          return el("td", { class: "num", "data-metric": metricId(name, { chain }) }, [value === undefined ? "-" : number(value)]);
        }),
      ]),
    );
    return el("table", { id: "round-trips" }, [
      el("caption", {}, ["Store round trips (ms): smoothed, and the spread of the last 256 calls; smoothed and p50 are the mean over isolates, p99 and max the slowest isolate's"]),
      el("thead", {}, [el("tr", {}, ["chain", ...ROUND_TRIP_COLUMNS.map(([, title]) => title)].map((t) => el("th", {}, [t])))]),
      el("tbody", {}, rows),
    ]);
  }

  function render(view) {
    const families = view.families;
    const byName = new Map(families.map((family) => [family.name, family]));
    const ruleValue = (event, labels) => byName.get(`sluice_rule_${event}_total`)?.samples.find((s) => s.labels.route === labels.route && s.labels.rule === labels.rule)?.value ?? 0;
    const ruleSamples = byName.get("sluice_rule_admitted_total")?.samples ?? [];
    const history = new Map(view.history.map((h) => [`${h.route}\u0000${h.rule}`, h]));

    const ruleRows = ruleSamples.map(({ labels }) => {
      const minutes = history.get(`${labels.route}\u0000${labels.rule}`)?.minutes;
      const lastHour = (event) => (minutes?.[event] ?? []).reduce((a, b) => a + b, 0);
      const cell = (event) => el("td", { class: "num", "data-metric": metricId(`sluice_rule_${event}_total`, labels) }, [number(ruleValue(event, labels))]);
      return el("tr", {}, [
        el("td", {}, [labels.route]),
        el("td", {}, [labels.rule]),
        el("td", {}, [labels.mode]),
        cell("admitted"),
        cell("denied"),
        cell("would_have_denied"),
        el("td", { class: "num" }, [`${number(lastHour("admitted"))} / ${number(lastHour("denied"))} / ${number(lastHour("would_have_denied"))}`]),
        el("td", {}, [sparkline(minutes?.denied ?? new Array(60).fill(0), `denials per minute of ${labels.rule}, last hour`)]),
      ]);
    });
    const rules = el("table", { id: "rules" }, [
      el("caption", {}, ["Rules: totals since the isolates started, and the last hour"]),
      el("thead", {}, [el("tr", {}, ["route", "rule", "mode", "admitted", "denied", "would deny", "last hour (adm / den / would)", "denials per minute"].map((t) => el("th", {}, [t])))]),
      el("tbody", {}, ruleRows),
    ]);

    const lockoutRules = new Set(view.lockoutRules ?? []);
    const lockedRows = view.limitedNow
      .filter((entry) => lockoutRules.has(entry.rule))
      .map((entry) => el("tr", {}, [el("td", { class: "key" }, [entry.key]), el("td", {}, [entry.rule]), el("td", { class: "num" }, [number(entry.denials)])]));
    const locked =
      lockedRows.length === 0
        ? el("p", { class: "empty", id: "locked" }, ["No account locked out in the last five minutes."])
        : el("table", { id: "locked" }, [el("caption", {}, ["Lockouts in force (accounts refused in the last five minutes)"]), el("thead", {}, [el("tr", {}, ["account", "rule", "refusals"].map((t) => el("th", {}, [t])))]), el("tbody", {}, lockedRows)]);
    const limitedRows = view.limitedNow.filter((entry) => !lockoutRules.has(entry.rule)).map((entry) => el("tr", {}, [el("td", { class: "key" }, [entry.key]), el("td", {}, [entry.rule]), el("td", { class: "num" }, [number(entry.denials)])]));
    const limited =
      limitedRows.length === 0
        ? el("p", { class: "empty", id: "limited" }, ["No client limited in the last five minutes."])
        : el("table", { id: "limited" }, [el("caption", {}, ["Clients limited now (last five minutes)"]), el("thead", {}, [el("tr", {}, ["key", "rule", "denials"].map((t) => el("th", {}, [t])))]), el("tbody", {}, limitedRows)]);

    // The blocks of auto-blocking rules in force, the deployment's (keys redacted unless showKeys).
    const blockRows = (view.blocks ?? []).map((entry) =>
      el("tr", {}, [el("td", { class: "key" }, [entry.key]), el("td", {}, [entry.rule]), el("td", { class: "num" }, [number(Math.max(0, Math.ceil((entry.untilMs - view.nowMs) / 60_000)))])]),
    );
    const blocks =
      blockRows.length === 0
        ? el("p", { class: "empty", id: "blocks" }, ["No client blocked by an auto-blocking rule."])
        : el("table", { id: "blocks" }, [el("caption", {}, ["Blocks in force (auto-blocking rules)"]), el("thead", {}, [el("tr", {}, ["key", "rule", "minutes left"].map((t) => el("th", {}, [t])))]), el("tbody", {}, blockRows)]);

    const roundTrips = roundTripTable(byName);
    const stores = familyTable(
      families.filter((f) => /^sluice_(store|lease)_/.test(f.name) && !ROUND_TRIP_FAMILY.test(f.name)),
      "Store health: decisions, failures, breakers, leases",
    );
    const other = familyTable(
      families.filter((f) => !/^sluice_(rule|store|lease)_/.test(f.name)),
      "Other counters",
    );
    const summary = el("p", { id: "summary" }, [`${view.isolates} isolate(s) reporting, ${view.retiredIsolates} retired; updated ${new Date(view.nowMs).toISOString()}`]);
    const content = /** @type {HTMLElement} */ (document.getElementById("content"));
    content.replaceChildren(summary, rules, limited, blocks, locked, roundTrips, stores, other);
    root.dataset.loaded = String(view.nowMs);
  }

  async function refresh() {
    try {
      const response = await fetch(`${base}/data`, { credentials: "same-origin", headers: { accept: "application/json" } });
      if (response.status === 401) {
        window.location.assign(base);
        return;
      }
      if (!response.ok) throw new Error(`the data endpoint answered ${response.status}`);
      render(await response.json());
      document.getElementById("status")?.replaceChildren("");
    } catch (error) {
      document.getElementById("status")?.replaceChildren(`Could not refresh: ${String(error instanceof Error ? error.message : error)}`);
    }
  }

  refresh();
  window.setInterval(refresh, REFRESH_MS);
}
