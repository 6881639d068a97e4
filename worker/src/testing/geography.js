// A planet to test on: the isolate's region, with a round trip to the store's home, jitter, lost calls,
// late answers and a cut-off switch, applied to the seams the stores already take (a Durable Object
// namespace, a `fetch`). Nothing is monkeypatched: a test or bench Worker wraps its own bindings and
// hands the wrapped ones to sluice, which cannot tell them from the real thing.
//
// Each isolate lives in one region (regions are per isolate, since each isolate has its own globalThis):
//
//   const far = createRegion({ name: "syd", rttMs: 250, jitter: 0.2, seed: 7 });
//   // per request: a namespace whose stub calls take ~125 ms out and ~125 ms back
//   const env2 = { ...env, SLUICE_DO: far.namespace(env.SLUICE_DO, { ctx }) };
//
// A call goes out (half the round trip), reaches the object (the real call), and its answer comes
// back (the other half). Faults are chosen per call, from a seeded random stream or from a script of
// the next calls' fates, so a test can say exactly what happens to the third call:
//   "lostOut"    the call never reaches the object and never answers (a dropped request);
//   "lostBack"   the object decides (and charges) but its answer never arrives;
//   "late"       the object decides and its answer arrives `lateMs` after the round trip (after a caller
//                with a shorter timeout gave up; the object's charge stands);
//   "error"      the call fails after the round trip without reaching the object (a refused connection).
// A cut-off region (cutOff) reaches nothing: its calls are lost on the way out, or fail, as asked.
//
// A call whose answer the caller may no longer wait for is registered with `ctx.waitUntil`, so workerd
// does not cancel it when the request ends: a real RPC already sent still reaches the object.

/**
 * @typedef {"ok" | "lostOut" | "lostBack" | "late" | "error"} CallFate
 */
/**
 * @typedef {object} RegionOptions
 * @property {string} name The region's name (in errors and stats).
 * @property {number} rttMs The round trip to the store's home, ms (>= 0): half out, half back.
 * @property {number} [jitter] Each call's round trip varies by up to this fraction either way (0.2: +-20 %). Default 0.
 * @property {number} [seed] Seeds the random stream (jitter and fault draws). Default 1.
 * @property {Partial<Record<Exclude<CallFate, "ok">, number>>} [faults] The probability of each fault per call (0 to 1).
 * @property {number} [lateMs] How much later than its round trip a "late" answer arrives. Default 5000.
 * @property {() => number} [clock] The clock cutOff's duration is measured on (ms). Default Date.now.
 */
/**
 * @typedef {object} RegionStats
 * @property {number} calls Calls made through this region's seams.
 * @property {number} delivered Calls that reached the store (an answer may still have been lost).
 * @property {number} answered Calls whose answer (or error from the store) came back.
 * @property {number} lostOut Calls dropped on the way out (including while cut off, unless failing fast).
 * @property {number} lostBack Calls whose answer was dropped on the way back.
 * @property {number} late Calls answered `lateMs` late.
 * @property {number} errors Calls failed by the network ("error", or cut off with failFast).
 * @property {number} cutOff Calls made while the region was cut off.
 */

/** GeographyError is a call the simulated network failed (an "error" fate, or a fail-fast cut-off). */
export class GeographyError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = "GeographyError";
  }
}

const FATES = /** @type {const} */ (["lostOut", "lostBack", "late", "error"]);
// The stub's own members, and the names a Promise machinery probes on anything it is given.
const PASS_THROUGH = new Set(["id", "name", "then", "catch", "finally", "toJSON", "constructor"]);

/**
 * createRegion returns the seams of one region: namespace() and fetch() wrap a binding or a fetch so
 * that every call pays this region's round trip and meets its faults.
 * @param {RegionOptions} options
 */
export function createRegion(options) {
  const { name, rttMs, jitter = 0, seed = 1, faults = {}, lateMs = 5000, clock = Date.now } = options ?? /** @type {any} */ ({});
  if (typeof name !== "string" || name === "") throw new TypeError("createRegion: name must be a non-empty string");
  if (typeof rttMs !== "number" || !(rttMs >= 0) || rttMs === Infinity) throw new TypeError("createRegion: rttMs must be a finite number >= 0");
  if (typeof jitter !== "number" || !(jitter >= 0 && jitter < 1)) throw new TypeError("createRegion: jitter must be from 0 to below 1");
  if (typeof lateMs !== "number" || !(lateMs >= 0)) throw new TypeError("createRegion: lateMs must be a number >= 0");
  for (const [fate, p] of Object.entries(faults)) {
    if (!FATES.includes(/** @type {any} */ (fate))) throw new TypeError(`createRegion: faults.${fate} is not a fault (${FATES.join(", ")})`);
    if (typeof p !== "number" || !(p >= 0 && p <= 1)) throw new TypeError(`createRegion: faults.${fate} must be a probability from 0 to 1`);
  }
  const random = seededRandom(seed);
  /** @type {CallFate[]} */
  const script = [];
  let cutUntilMs = -Infinity;
  let failFast = false;
  /** @type {RegionStats} */
  const stats = { calls: 0, delivered: 0, answered: 0, lostOut: 0, lostBack: 0, late: 0, errors: 0, cutOff: 0 };

  /** The next call's round trip, jittered. */
  function roundTripMs() {
    return rttMs * (1 + jitter * (2 * random() - 1));
  }

  /** The next call's fate: the script first, then the cut-off, then the random draws. @returns {CallFate} */
  function nextFate() {
    if (script.length > 0) return /** @type {CallFate} */ (script.shift());
    if (clock() < cutUntilMs) {
      stats.cutOff++;
      return failFast ? "error" : "lostOut";
    }
    const draw = random();
    let sum = 0;
    for (const fate of FATES) {
      sum += faults[fate] ?? 0;
      if (draw < sum) return fate;
    }
    return "ok";
  }

  /**
   * travel sends `call` across the planet: it runs after half the round trip, and its answer (or
   * error) is passed back after the other half, unless the fate says otherwise.
   * @param {() => unknown} call
   * @param {{ waitUntil(promise: Promise<unknown>): void } | undefined} ctx
   * @returns {Promise<any>}
   */
  function travel(call, ctx) {
    stats.calls++;
    const fate = nextFate();
    const rtt = roundTripMs();
    const half = rtt / 2;
    if (fate === "lostOut") {
      stats.lostOut++;
      return new Promise(() => {});
    }
    if (fate === "error") {
      stats.errors++;
      return delay(rtt).then(() => {
        throw new GeographyError(`${name}: the call to the store's home failed (simulated network error)`);
      });
    }
    // The call itself: it reaches the store whether or not anyone still waits for the answer.
    const delivered = delay(half).then(() => {
      stats.delivered++;
      return call();
    });
    const backMs = fate === "late" ? half + lateMs : half;
    const answer = delivered.then(
      (value) => delay(backMs).then(() => value),
      (error) => delay(backMs).then(() => Promise.reject(error)),
    );
    // Keep the delivery and the late answer alive past the end of the request that started them.
    ctx?.waitUntil(answer.then(() => {}, () => {}));
    if (fate === "lostBack") {
      stats.lostBack++;
      return new Promise(() => {});
    }
    if (fate === "late") stats.late++;
    return answer.then(
      (value) => {
        stats.answered++;
        return value;
      },
      (error) => {
        stats.answered++;
        throw error;
      },
    );
  }

  return {
    name,
    rttMs,
    /** This region's counts of calls and their fates. @returns {Readonly<RegionStats>} */
    get stats() {
      return { ...stats };
    },

    /**
     * namespace wraps a Durable Object namespace: its stubs' method calls travel (idFromName, get and
     * the ids are local, as in workerd). Wrap per request to pass that request's `ctx`.
     * @template {object} N
     * @param {N} binding
     * @param {{ ctx?: { waitUntil(promise: Promise<unknown>): void } }} [options]
     * @returns {N}
     */
    namespace(binding, { ctx } = {}) {
      const namespace = /** @type {any} */ (binding);
      return /** @type {N} */ ({
        idFromName: (/** @type {string} */ objectName) => namespace.idFromName(objectName),
        idFromString: (/** @type {string} */ id) => namespace.idFromString(id),
        newUniqueId: (/** @type {unknown} */ opts) => namespace.newUniqueId(opts),
        get: (/** @type {DurableObjectId} */ id, /** @type {unknown} */ opts) => wrapStub(namespace.get(id, opts), travel, ctx),
        getByName: (/** @type {string} */ objectName, /** @type {unknown} */ opts) => wrapStub(namespace.get(namespace.idFromName(objectName), opts), travel, ctx),
      });
    },

    /**
     * fetch wraps a fetch function (the Upstash REST client's seam): every request travels.
     * @param {typeof fetch} fetchFn
     * @param {{ ctx?: { waitUntil(promise: Promise<unknown>): void } }} [options]
     * @returns {typeof fetch}
     */
    fetch(fetchFn, { ctx } = {}) {
      return /** @type {typeof fetch} */ ((input, init) => travel(() => fetchFn(input, init), ctx));
    },

    /**
     * script sets the fates of the next calls, in order (then the random draws resume).
     * @param {...CallFate} fates
     */
    script(...fates) {
      for (const fate of fates) {
        if (fate !== "ok" && !FATES.includes(/** @type {any} */ (fate))) throw new TypeError(`createRegion: ${fate} is not a call fate`);
      }
      script.push(...fates);
    },

    /**
     * cutOff partitions this region from the store's home for `durationMs` (on `clock`): calls are
     * lost on the way out, or, with failFast, fail after one round trip. cutOff(0) heals it.
     * @param {number} durationMs
     * @param {{ failFast?: boolean }} [options]
     */
    cutOff(durationMs, options = {}) {
      cutUntilMs = clock() + durationMs;
      failFast = options.failFast === true;
    },

    /** isCutOff reports whether the region is cut off now. */
    get isCutOff() {
      return clock() < cutUntilMs;
    },
  };
}

/**
 * restartObject restarts the Durable Object `objectName` through the fixture's `restart()` RPC (the
 * tests' TestSluiceDurableObject aborts itself: its memory is lost, its storage kept). The abort
 * rejects the call that asked for it, so a rejection is the expected answer.
 * @param {any} namespace The real namespace, not a region's wrapper.
 * @param {string} objectName
 * @returns {Promise<void>}
 */
export async function restartObject(namespace, objectName) {
  const stub = namespace.get(namespace.idFromName(objectName));
  // Through Reflect.apply: reading a property of a stub's method is itself an RPC.
  await Promise.resolve(Reflect.apply(stub.restart, stub, [])).catch(() => {});
}

// A stub whose method calls travel. The stub is an RPC proxy: every property read of a method is a
// remote call, so methods are invoked through Reflect.apply on a fresh read, never `.apply`/`.bind`.
/** @param {Record<string, unknown>} stub @param {(call: () => unknown, ctx: { waitUntil(promise: Promise<unknown>): void } | undefined) => Promise<unknown>} travel @param {{ waitUntil(promise: Promise<unknown>): void } | undefined} ctx @returns {object} */
function wrapStub(stub, travel, ctx) {
  return new Proxy(
    {},
    {
      get(_, property) {
        if (typeof property === "symbol" || PASS_THROUGH.has(property)) return property === "id" || property === "name" ? stub[property] : undefined;
        return (/** @type {unknown[]} */ ...args) => travel(() => Reflect.apply(/** @type {Function} */ (stub[property]), stub, args), ctx);
      },
    },
  );
}

/** @param {number} ms */
function delay(ms) {
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * seededRandom returns a deterministic stream of numbers in [0, 1) (mulberry32): the same seed gives
 * the same jitter and the same faults, run after run.
 * @param {number} seed
 * @returns {() => number}
 */
export function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
