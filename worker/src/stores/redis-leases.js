// Leases over compare-and-set: `store: "redis", lease: true`. The isolate borrows a hot key's units
// from Redis and decides from them with no round trip, exactly as it borrows from the Durable Object
// (leases.js keeps the leases, asks for them and gives back what is unused). Redis lends with the
// core's own lend and giveBack (sluice/lease.hpp), applied to the key's state bytes in the same
// compare-and-set that decides the request (redis.js): the units are charged to the key when they are
// lent, so everything lent plus everything admitted directly never exceeds the rule.
import { createLeasedStore } from "./leases.js";

/** @import { LeaseOptions, LeasedStore } from "./leases.js" */
/** @import { RedisStore } from "./redis.js" */
/** @import { Outcome } from "./store.js" */

/**
 * A Redis store whose hot keys are decided from leases.
 * @typedef {Omit<LeasedStore, "name"> & Pick<RedisStore, "ownDeadline" | "timeoutFor" | "takeBack"> & { readonly name: "redis" }} LeasedRedisStore
 */

/**
 * createLeasedRedisStore puts leases (leases.js) in front of a Redis store: decisions taken from a
 * lease say store "redis" and lease true.
 * @param {{ redis: RedisStore } & LeaseOptions} options
 * @returns {LeasedRedisStore}
 */
export function createLeasedRedisStore({ redis, ...lease }) {
  const leased = createLeasedStore({ durable: /** @type {any} */ (redis), ...lease });
  /** @param {Outcome | null} outcome */
  const asRedis = (outcome) => (outcome === null ? null : { ...outcome, store: /** @type {const} */ ("redis") });
  return {
    ...leased,
    name: "redis",
    // The Redis store bounds its own calls from their send (redis.js): a chain adds no deadline.
    ownDeadline: redis.ownDeadline,
    timeoutFor: redis.timeoutFor,
    takeBack: redis.takeBack,
    decideLocally: (checks, options) => asRedis(leased.decideLocally(checks, options)),
    decide: (checks, options = {}) => asRedis(leased.decideLocally(checks, /** @type {any} */ (options))) ?? leased.decideRemotely(checks, options),
  };
}
