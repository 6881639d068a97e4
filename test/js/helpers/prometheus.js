// Reading the Prometheus text exposition (format 0.0.4) strictly, for the tests of the gateway's metrics
// endpoint, whether served by the fixture or by the shipped Worker.
import assert from "node:assert/strict";

// parseExposition checks the text format's grammar, line by line: each family's HELP and TYPE come
// first, then its samples; label values are quoted with \\, \" and \n escaped; no series appears
// twice. Returns the families by name: { name, help, type, samples: [{ labels, value }] }.
export function parseExposition(text) {
  assert.ok(text.endsWith("\n"), "the exposition ends with a newline");
  const families = new Map();
  const series = new Set();
  let current = null;
  const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"/y;
  for (const line of text.slice(0, -1).split("\n")) {
    let match;
    if ((match = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)) !== null) {
      assert.ok(!families.has(match[1]), `HELP for ${match[1]} twice`);
      current = { name: match[1], help: match[2], type: null, samples: [] };
      families.set(match[1], current);
    } else if ((match = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line)) !== null) {
      assert.equal(match[1], current?.name, "TYPE follows its family's HELP");
      current.type = match[2];
    } else {
      match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      assert.ok(match !== null, `not a sample line: ${JSON.stringify(line)}`);
      assert.equal(match[1], current?.name, `sample ${match[1]} outside its family`);
      assert.ok(current.type !== null, "TYPE comes before the samples");
      const labels = {};
      const body = match[2] ?? "";
      let at = 0;
      while (at < body.length) {
        labelPair.lastIndex = at;
        const pair = labelPair.exec(body);
        assert.ok(pair !== null, `bad labels ${JSON.stringify(body)}`);
        labels[pair[1]] = pair[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
        at = labelPair.lastIndex;
        if (body[at] === ",") at++;
      }
      const key = `${match[1]}${JSON.stringify(labels)}`;
      assert.ok(!series.has(key), `series twice: ${key}`);
      series.add(key);
      const value = match[3] === "+Inf" ? Infinity : match[3] === "-Inf" ? -Infinity : Number(match[3]);
      assert.ok(!Number.isNaN(value) || match[3] === "NaN", `bad value ${match[3]}`);
      current.samples.push({ labels, value });
    }
  }
  return families;
}

/** sample is the value of the one sample of `name` whose labels include `labels`. */
export function sample(families, name, labels) {
  const found = families.get(name)?.samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  assert.ok(found !== undefined, `no sample ${name} ${JSON.stringify(labels)}`);
  return found.value;
}
