// Plain vitest in Node: the Hono app, called with app.request(), limited by sluice's memory store.
import { Hono } from "hono";
import { createLimiter } from "sluice";
import { ip, rateLimit } from "sluice/hono";
import { describe, expect, it } from "vitest";

describe("sluice under plain Node", () => {
  it("limits a Hono app called with app.request()", async () => {
    const app = new Hono();
    app.use("*", rateLimit({ key: ip(), limit: 2, windowSec: 60 }));
    app.get("/", (c) => c.text("ok"));
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await app.request("/", { headers: { "cf-connecting-ip": "192.0.2.9" } })).status);
    expect(statuses).toEqual([200, 200, 429]);
  });

  it("decides with createLimiter and the memory store", async () => {
    const limiter = createLimiter({ key: "one-key", limit: 1, windowSec: 60 });
    const first = await limiter.limit(new Request("http://example.test/"), {}, undefined);
    const second = await limiter.limit(new Request("http://example.test/"), {}, undefined);
    expect([first.allowed, first.store, second.allowed]).toEqual([true, "memory", false]);
  });
});
