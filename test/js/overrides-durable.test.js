// Overrides on the Durable Object across three isolates (test/js/fixtures/overrides/worker.js): the
// partner's override is its exact budget wherever its requests land, and every other key keeps the default.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { startIsolatesOnOneObject } from "./helpers/worker.js";

const ISOLATES = 3;
let mf;
let isolates = [];
before(async () => {
  ({ mf, isolates } = await startIsolatesOnOneObject(ISOLATES, "overrides"));
  const knob = await isolates[0].fetch("http://ov.test/__test/object", { method: "POST", body: JSON.stringify({ name: "sluice/1/0", method: "setKnob", args: ["clock", Date.UTC(2030, 0, 1)] }) });
  assert.equal(knob.status, 200);
});
after(() => mf?.dispose());

async function admitted(apiKeyValue, n) {
  let count = 0;
  for (let i = 0; i < n; i++) {
    const response = await isolates[i % ISOLATES].fetch("http://ov.test/api", { headers: { "x-api-key": apiKeyValue } });
    if (response.status === 200) count++;
    await response.text();
  }
  return count;
}

test("across three isolates, the partner's override admits exactly its limit and another key the default", async () => {
  assert.equal(await admitted("acme", 12), 6);
  assert.equal(await admitted("globex", 12), 2);
});
