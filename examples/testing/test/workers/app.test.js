// Inside workerd (@cloudflare/vitest-pool-workers): the memory limit on a test clock, and the exact
// Durable Object limit through the Worker itself (SELF), with its real binding.
import { SELF, env } from "cloudflare:test";
import { resetLimiters, testClock } from "sluice/testing";
import { beforeEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";

const from = (address, init = {}) => ({ ...init, headers: { "cf-connecting-ip": address, ...init.headers } });

describe("rate limits inside workerd", () => {
  beforeEach(() => resetLimiters());

  it("denies the 4th request of a minute and admits it a minute later", async () => {
    const clock = testClock();
    const app = createApp({ clock });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.request("/api/hello", from("192.0.2.1"), env)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    clock.advance(60_000);
    expect((await app.request("/api/hello", from("192.0.2.1"), env)).status).toBe(200);
  });

  it("checkout: exactly 2 a minute per user, counted by the Durable Object", async () => {
    const pay = () => SELF.fetch("http://example.test/checkout", from("192.0.2.2", { method: "POST", headers: { "x-user": "ada" } }));
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await pay()).status);
    expect(statuses).toEqual([200, 200, 429]);
  });
});
