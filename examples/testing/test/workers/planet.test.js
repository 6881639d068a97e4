// Your limit on a planet, before you deploy it: the Durable Object store 150 and 250 ms away (± 20 %
// per call), through sluice/testing's geography seam (createRegion wraps the real SLUICE_DO binding;
// nothing is patched), with the library's default options. Users in both regions ask for twice their
// limit at once; none gets more than the limit, wherever their requests come from.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { createLimiter } from "sluice";
import { durableStore } from "sluice/stores/durable";
import { createRegion, resetLimiters } from "sluice/testing";
import { beforeEach, describe, expect, it } from "vitest";

const LIMIT = 5;
const USERS = Array.from({ length: 10 }, (_, i) => `user-${i}`);
const ROUNDS = 5; // per region: 2 regions x 5 rounds = 10 requests per user for a limit of 5

describe("per-user limits from two far regions, default options", () => {
  beforeEach(() => resetLimiters());

  it("admits at most the limit per user per window; a call that does not answer in time is denied", async () => {
    // Default options: no timeoutMs (learnt from the round trips), no fallback, failMode "closed".
    const limiter = createLimiter({ name: "planet", key: (request) => request.headers.get("x-user"), limit: LIMIT, windowSec: 60, store: durableStore });
    const regions = [
      createRegion({ name: "sydney", rttMs: 250, jitter: 0.2, seed: 1 }),
      createRegion({ name: "singapore", rttMs: 150, jitter: 0.2, seed: 2 }),
    ];
    const admitted = Object.fromEntries(USERS.map((user) => [user, 0]));
    let fellBack = 0;
    let admittedByFallback = 0;
    for (let round = 0; round < ROUNDS; round++) {
      // Every user from both regions at once: the requests race across the planet.
      const ctx = createExecutionContext();
      const decisions = await Promise.all(
        regions.flatMap((region) =>
          USERS.map(async (user) => {
            const planetEnv = { ...env, SLUICE_DO: region.namespace(env.SLUICE_DO, { ctx }) };
            const decision = await limiter.limit(new Request("https://example.test/", { headers: { "x-user": user } }), planetEnv, ctx);
            return { user, decision };
          }),
        ),
      );
      await waitOnExecutionContext(ctx);
      for (const { user, decision } of decisions) {
        if (decision.allowed) admitted[user]++;
        if (decision.fallback !== undefined) fellBack++;
        if (decision.fallback !== undefined && decision.allowed) admittedByFallback++;
      }
    }
    // The guarantee: no user past the limit. A call that outlives its timeout (the first ones wait up to
    // 1 s for a fresh object) is denied by failMode "closed", never admitted by a weaker store.
    for (const user of USERS) expect(admitted[user]).toBeLessThanOrEqual(LIMIT);
    expect(admittedByFallback).toBe(0);
    // And the limit is used, not just enforced: every user asked twice the limit, so with no call
    // denied for want of an answer, each gets exactly it.
    const total = USERS.reduce((n, user) => n + admitted[user], 0);
    expect(total).toBeGreaterThanOrEqual(USERS.length * LIMIT - fellBack);
    // Every admission crossed the planet (no lease here): the seams saw at least that many calls, and lost none.
    const calls = regions.reduce((n, region) => n + region.stats.calls, 0);
    expect(calls).toBeGreaterThanOrEqual(USERS.length * LIMIT);
    for (const region of regions) expect(region.stats.lostOut + region.stats.lostBack + region.stats.errors).toBe(0);
  });
});
