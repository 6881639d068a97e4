// Inside workerd: requests go to the Worker through its own fetch handler (SELF), each test file with
// its own isolated storage. Counters live in the isolate's memory, so each test uses its own client.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

const from = (address, init = {}) => ({ ...init, headers: { "cf-connecting-ip": address } });

describe("rate limits", () => {
  it("admits 5 requests a minute per client, then answers 429", async () => {
    for (let i = 0; i < 5; i++) {
      const response = await SELF.fetch("http://example.test/api/hello", from("192.0.2.1"));
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ hello: "world", left: 4 - i });
      expect(response.headers.get("x-ratelimit-limit")).toBe("5");
    }
    const denied = await SELF.fetch("http://example.test/api/hello", from("192.0.2.1"));
    expect(denied.status).toBe(429);
    expect(Number(denied.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(denied.headers.get("ratelimit-policy")).toMatch(/;q=5;w=60$/);
    expect((await denied.json()).code).toBe("rate_limited");
  });

  it("limits login to 2 a minute under its own name", async () => {
    const login = () => SELF.fetch("http://example.test/login", from("198.51.100.4", { method: "POST" }));
    expect((await login()).status).toBe(200);
    expect((await login()).status).toBe(200);
    const denied = await login();
    expect(denied.status).toBe(429);
    expect(denied.headers.get("ratelimit-policy")).toMatch(/^"login";q=2;w=60$/);
  });
});
