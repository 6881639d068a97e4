// vitest under Node: the same app, the same clock.
import { resetLimiters, testClock } from "sluice/testing";
import { beforeEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";

const from = (address) => ({ headers: { "cf-connecting-ip": address } });

describe("rate limits under vitest (Node)", () => {
  beforeEach(() => resetLimiters());

  it("denies the 4th request of a minute and admits it a minute later", async () => {
    const clock = testClock();
    const app = createApp({ clock });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.request("/api/hello", from("192.0.2.1"))).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    clock.advance(60_000);
    expect((await app.request("/api/hello", from("192.0.2.1"))).status).toBe(200);
  });

  it("imports the Worker's main module, Durable Object export and all", async () => {
    const worker = await import("../../src/index.js");
    expect(typeof worker.default.fetch).toBe("function");
  });
});
