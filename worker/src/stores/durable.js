// The Durable Object store, Worker side: the store contract over SluiceDurableObject instances
// (durable-object.js). Keys are spread over `shards` objects by a hash of the key, and each object
// gets one RPC per request carrying all of that request's checks on its keys.
//
// This module does not import the object's class (nor `cloudflare:workers`), so the host can offer
// store: 'durable' from modules that also load outside workerd.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { checkBinding, isBound, resolveBinding } from "./binding.js";
import { checkTimeout, withDeadline } from "./deadline.js";
import { RoundTrips, checkRoundTripOptions } from "./round-trip.js";
import { nowMs as wallClockMs } from "../engine/clock.js";

/** @import { SluiceDurableObject } from "./durable-object.js" */
/** @import { Outcome, StoreCheck, StoreOptions } from "./store.js" */
/** @import { ObjectOutcome, UndoToken } from "./durable-object.js" */

/**
 * The object's methods this store calls, as its RPC stub offers them.
 * @typedef {{
 *   decide(checks: StoreCheck[], options: object): ObjectOutcome | Promise<ObjectOutcome>;
 *   refill(checks: StoreCheck[], options: object): Promise<RefillAnswer>;
 *   undo(tokens: readonly UndoToken[]): Promise<number>;
 *   reset(checks: StoreCheck[]): Promise<unknown>;
 * }} ObjectStub
 */
/** @typedef {{ get(id: DurableObjectId): ObjectStub, idFromName(name: string): DurableObjectId }} ObjectNamespace */
/** The checks of one request that live in one object, with their indices in the request. @typedef {{ objectName: string, checks: StoreCheck[], indices: number[] }} Part */
/** A decide's options as this store reads them: the lease fields (leases.js) pass through to the object. @typedef {StoreOptions & { lend?: unknown, giveBack?: unknown[] }} DecideOptions */
/** What the object's refill answers (leases.js). @typedef {{ leases: Array<{ units: number, expiresAtMs: number, validForMs: number, remaining: number } | null>, returned: number[] | null, resetMs: number[] }} RefillAnswer */

/**
 * @typedef {object} DurableStoreOptions
 * @property {DurableObjectNamespace<SluiceDurableObject> | DurableObjectNamespace | string} binding The namespace bound to
 *   SluiceDurableObject (typed for it, as `wrangler types` writes it, or untyped), or its binding name in env.
 * @property {number | "key"} [shards] How many objects share the keys (by a hash of the key), or "key" for one object per key. Default 1.
 * @property {string} [name] Prefix of the objects' names. Default "sluice".
 * @property {number} [timeoutMs] Reject with DeadlineError after this many ms. Default: wait (a fallback chain bounds
 *   each call by timeoutFor(), learnt from each object's round trips).
 * @property {import("./round-trip.js").RoundTripOptions} [roundTrip] The round-trip estimator's settings (round-trip.js).
 * @property {() => number} [clock] The clock round trips are measured on (ms). Default the wall clock. For tests.
 */
/**
 * @typedef {object} DurableStoreCounters
 * @property {number} spreadRequests Requests whose keys lived in more than one object.
 * @property {number} undone Charges taken back because another object denied the request.
 * @property {number} undoMissed Charges that could not be taken back.
 * @property {number} roundTrips Answers whose round trip was measured (late ones included).
 */
/**
 * The store that decides in SluiceDurableObject instances (on the objects' clock: options.nowMs is not needed).
 * @typedef {{
 *   readonly name: "durable";
 *   decide(checks: readonly StoreCheck[], options?: StoreOptions): Promise<Outcome>;
 *   refill(checks: readonly StoreCheck[], options: StoreOptions & { lend: { wanted: number[], leaseMs: number, aheadMs?: number }, giveBack?: unknown[] }): Promise<{ leases: Array<{ units: number, expiresAtMs: number, validForMs: number, startsInMs?: number, remaining: number } | null>, returned: number[] | null, resetMs: number[] }>;
 *   reset(checks: readonly StoreCheck[], options?: StoreOptions): Promise<void>;
 *   readonly blockList: import("./block-list-table.js").BlockListStore;
 *   readonly counters: Readonly<DurableStoreCounters>;
 *   objectOf(key: string): string;
 *   timeoutFor(checks: readonly StoreCheck[]): number;
 *   timedOut(checks: readonly StoreCheck[], timeoutMs: number): void;
 *   takeBack(outcome: Outcome): Promise<{ undone: number, missed: number }>;
 *   readonly roundTrip: RoundTrips;
 *   isolateTables(): [];
 *   isBound(env: unknown): boolean;
 * }} DurableStore
 */
const MAX_SHARDS = 4096;

/**
 * createDurableStore returns a store that decides in SluiceDurableObject instances.
 *
 * - binding: the Durable Object namespace, or its name in `env` (passed to decide as options.env).
 * - shards: how many objects share the keys (a hash of the key picks one), or "key" for one object
 *   per key. Default 1. Changing it (or `name`) moves keys to other objects, whose counts start over.
 * - name: prefix of the objects' names, so that several stores can share one namespace.
 * - timeoutMs: reject with DeadlineError when the objects have not answered by then. Default: wait.
 *
 * A request whose keys live in several objects is still all-or-nothing: every object decides and
 * charges its part in parallel, and if any part is denied the others' charges are undone.
 * @param {DurableStoreOptions} options
 * @returns {DurableStore}
 */
export function createDurableStore(options = /** @type {any} */ ({})) {
  const { binding, shards = 1, name = "sluice", timeoutMs = Infinity, clock = wallClockMs } = options;
  checkBinding(binding, "binding", ["idFromName", "get"]);
  if (shards !== "key" && !(Number.isInteger(shards) && shards >= 1 && shards <= MAX_SHARDS)) {
    throw new SluiceConfigError("shards", `must be a whole number from 1 to ${MAX_SHARDS}, or "key"; got ${describe(shards)}`);
  }
  if (typeof name !== "string" || name === "") throw new SluiceConfigError("name", `must be a non-empty string; got ${describe(name)}`);
  checkTimeout(timeoutMs, "timeoutMs");
  if (typeof clock !== "function") throw new SluiceConfigError("clock", `must be a function returning ms; got ${describe(clock)}`);
  // One estimator per object: objects live where they were first used, so each has its own distance.
  const roundTrips = new RoundTrips(checkRoundTripOptions(options.roundTrip, "roundTrip"));
  // What it takes to undo an answer's charge (the stub and the object's tokens), kept off the outcome
  // that the caller (and its user) sees.
  /** @type {WeakMap<object, { stub: any, tokens: unknown[] }>} */
  const undoOf = new WeakMap();

  const counters = {
    /** Requests whose keys lived in more than one object. */
    spreadRequests: 0,
    /** Charges taken back because another object denied the request. */
    undone: 0,
    /** Charges that could not be taken back (key charged again since, or the object failed). */
    undoMissed: 0,
    /** Answers whose round trip was measured (late ones included). */
    roundTrips: 0,
  };

  /** @type {(key: string) => string} */
  const objectName = shards === "key" ? (key) => `${name}/key/${key}` : (key) => `${name}/${shards}/${fnv1a(key) % /** @type {number} */ (shards)}`;

  // decideOptions.lend and .giveBack (leases.js) pass through to the object when every check lives
  // in one; a request spread over objects takes no lease.
  /** @param {readonly StoreCheck[]} checks @param {DecideOptions} decideOptions @returns {Promise<Outcome>} */
  function decide(checks, decideOptions = /** @type {DecideOptions} */ ({})) {
    const namespace = /** @type {ObjectNamespace} */ (resolveBinding(binding, decideOptions.env, "durable store binding"));
    const peek = decideOptions.peek === true;
    if (!Array.isArray(checks) || checks.length === 0) throw new RangeError("checks must be a non-empty array");
    const parts = partition(checks, objectName);
    const work = parts.length === 1 ? decideOne(namespace, parts[0], peek, decideOptions) : decideSpread(namespace, checks, parts, peek);
    // Given a promise, withDeadline answers a promise.
    return /** @type {Promise<Outcome>} */ (withDeadline(work, timeoutMs, "the Durable Object"));
  }

  // A background lease refill (leases.js): the object lends without deciding a request. The checks
  // live in one object (leases.js only refills such requests).
  /** @param {readonly StoreCheck[]} checks @param {DecideOptions} refillOptions @returns {Promise<RefillAnswer>} */
  function refill(checks, refillOptions) {
    const namespace = /** @type {ObjectNamespace} */ (resolveBinding(binding, refillOptions.env, "durable store binding"));
    const target = objectName(checks[0].key);
    const stub = /** @type {any} */ (namespace.get(namespace.idFromName(target)));
    const { peek: _, ...options } = objectOptions(false, refillOptions);
    return withDeadline(stub.refill(checks.map(({ rule, key, cost }) => ({ rule, key, cost })), options), timeoutMs, "the Durable Object");
  }

  // One object decides the whole request. A plain charge asks for undo tokens, so that a charge whose
  // answer came after the caller gave up (and decided otherwise) can be taken back (takeBack); a lease
  // call cannot be undone (the object lends only to calls that are not undoable).
  /** @param {ObjectNamespace} namespace @param {Part} part @param {boolean} peek @param {DecideOptions} decideOptions @returns {Promise<Outcome>} */
  function decideOne(namespace, part, peek, decideOptions) {
    const stub = namespace.get(namespace.idFromName(part.objectName));
    const options = objectOptions(peek, decideOptions);
    if (!peek && options.lend === undefined && options.giveBack === undefined) options.undoable = true;
    // The round trip starts now, as the call leaves the isolate.
    const sentAtMs = clock();
    return Promise.resolve(stub.decide(part.checks, options)).then((outcome) => {
      measured(part.objectName, sentAtMs);
      if (outcome.undo !== undefined) {
        if (outcome.allowed && outcome.undo.length > 0) undoOf.set(outcome, { stub, tokens: outcome.undo });
        delete outcome.undo;
      }
      return asDurable(outcome);
    });
  }

  /** @param {string} objectName @param {number} sentAtMs */
  function measured(objectName, sentAtMs) {
    roundTrips.sample(objectName, clock() - sentAtMs);
    counters.roundTrips++;
  }

  /** @param {ObjectNamespace} namespace @param {readonly StoreCheck[]} checks @param {Part[]} parts @param {boolean} peek @returns {Promise<Outcome>} */
  async function decideSpread(namespace, checks, parts, peek) {
    counters.spreadRequests++;
    const stubs = parts.map((part) => namespace.get(namespace.idFromName(part.objectName)));
    const sentAtMs = clock();
    const results = await Promise.allSettled(
      parts.map((part, p) =>
        Promise.resolve(stubs[p].decide(part.checks, { peek, undoable: !peek })).then((outcome) => {
          measured(part.objectName, sentAtMs);
          return outcome;
        }),
      ),
    );
    const failed = results.find((r) => r.status === "rejected");
    const denied = results.some((r) => r.status === "fulfilled" && !r.value.allowed);
    if (failed !== undefined || denied) {
      await Promise.all(
        results.map((r, p) => (r.status === "fulfilled" && r.value.undo !== undefined ? undoCharge(stubs[p], r.value.undo) : null)),
      );
    }
    if (failed !== undefined) throw failed.reason;
    const merged = mergeOutcomes(checks.length, parts, results.map((r) => /** @type {PromiseFulfilledResult<any>} */ (r).value));
    if (merged.allowed) {
      // Every object charged: undoing the request is undoing each part.
      const parted = results.map((r, p) => ({ stub: stubs[p], tokens: /** @type {any} */ (r).value.undo ?? [] }));
      undoOf.set(merged, { stub: null, tokens: parted });
    }
    return merged;
  }

  /**
   * takeBack undoes the charge of an admitted outcome this store answered (a late answer whose
   * request the caller decided otherwise): each key's charge goes back only if nobody was charged on
   * it since (the object's undo()). Returns how many checks' charges went back and how many could not
   * (a lease call, a key charged since, an object that failed or restarted).
   * @param {Outcome} outcome
   * @returns {Promise<{ undone: number, missed: number }>}
   */
  async function takeBack(outcome) {
    const held = undoOf.get(outcome);
    undoOf.delete(outcome);
    if (held === undefined) return { undone: 0, missed: outcome.allowed ? outcome.checks.length : 0 };
    const parts = held.stub === null ? /** @type {Array<{ stub: any, tokens: unknown[] }>} */ (held.tokens) : [held];
    let undone = 0;
    let missed = 0;
    await Promise.all(
      parts.map(async ({ stub, tokens }) => {
        if (tokens.length === 0) return;
        try {
          const back = await Reflect.apply(stub.undo, stub, [tokens]);
          undone += back;
          missed += tokens.length - back;
        } catch {
          missed += tokens.length;
        }
      }),
    );
    return { undone, missed };
  }

  /** @param {ObjectStub} stub @param {UndoToken[]} tokens */
  async function undoCharge(stub, tokens) {
    try {
      const undone = await stub.undo(tokens);
      counters.undone += undone;
      counters.undoMissed += tokens.length - undone;
    } catch {
      counters.undoMissed += tokens.length;
    }
  }

  /**
   * reset forgets the keys of `checks` in the objects that hold them.
   * @param {readonly StoreCheck[]} checks
   * @param {StoreOptions} [resetOptions]
   * @returns {Promise<void>}
   */
  async function reset(checks, resetOptions = {}) {
    const namespace = resolveBinding(binding, resetOptions.env, "durable store binding");
    if (!Array.isArray(checks) || checks.length === 0) throw new RangeError("checks must be a non-empty array");
    const parts = partition(checks, objectName);
    await withDeadline(
      Promise.all(parts.map((part) => /** @type {any} */ (namespace.get(namespace.idFromName(part.objectName))).reset(part.checks))),
      timeoutMs,
      "durable store",
    );
  }

  // The deployment's list of auto-blocks lives in one object of its own, beside the shards.
  /** @param {unknown} env */
  const blocksObject = (env) => {
    const namespace = /** @type {ObjectNamespace} */ (resolveBinding(binding, env, "durable store binding"));
    return /** @type {any} */ (namespace.get(namespace.idFromName(`${name}/blocks`)));
  };
  /** @type {import("./block-list-table.js").BlockListStore} */
  const blockList = {
    note: async (entry, { nowMs, env }) => {
      await withDeadline(blocksObject(env).noteBlock(entry, nowMs), timeoutMs, "the Durable Object");
    },
    list: async ({ nowMs, env }) => withDeadline(blocksObject(env).listBlocks(nowMs), timeoutMs, "the Durable Object"),
    forget: async (rule, key, { env }) => {
      await withDeadline(blocksObject(env).forgetBlock(rule, key), timeoutMs, "the Durable Object");
    },
  };

  return {
    name: "durable",
    counters,
    decide,
    refill,
    reset,
    takeBack,
    blockList,
    roundTrip: roundTrips,
    /**
     * timeoutFor is how long a fallback chain should wait for `checks`' objects now: the longest of
     * their timeouts (round-trip.js), learnt from their answers.
     * @param {readonly StoreCheck[]} checks
     */
    timeoutFor(checks) {
      let longest = 0;
      for (const check of checks) longest = Math.max(longest, roundTrips.timeoutMs(objectName(check.key)));
      return longest;
    },
    /**
     * timedOut records that a call on `checks` did not answer within `usedMs`: their objects' timeouts
     * back off, once per timeout (concurrent calls that waited the same timeout back it off once).
     * @param {readonly StoreCheck[]} checks
     * @param {number} usedMs
     */
    timedOut(checks, usedMs) {
      for (const endpoint of new Set(checks.map((check) => objectName(check.key)))) {
        if (usedMs >= roundTrips.timeoutMs(endpoint)) roundTrips.timedOut(endpoint);
      }
    },
    /** objectOf names the object that counts `key` (leases.js groups give-backs by it). */
    objectOf: objectName,
    /** The objects keep every count: nothing in the isolate. @returns {[]} */
    isolateTables: () => [],
    /** @param {unknown} env */
    isBound: (env) => isBound(binding, env),
  };

}

/**
 * The options an object's decide gets: `peek`, and the lease fields leases.js passes (docs/leases.md).
 * @param {boolean} peek
 * @param {{ lend?: unknown, giveBack?: unknown[] }} decideOptions
 */
function objectOptions(peek, { lend, giveBack }) {
  /** @type {{ peek: boolean, undoable?: boolean, lend?: unknown, giveBack?: unknown[] }} */
  const options = { peek };
  if (lend !== undefined) options.lend = lend;
  if (giveBack !== undefined && giveBack.length > 0) options.giveBack = giveBack;
  return options;
}

/** @param {ObjectOutcome} outcome @returns {Outcome} */
function asDurable(outcome) {
  /** @type {Outcome} */ (outcome).store = "durable";
  return /** @type {Outcome} */ (outcome);
}

// Groups checks by the object their key lives in, keeping each check's index in the request.
/** @param {readonly StoreCheck[]} checks @param {(key: string) => string} objectName @returns {Part[]} */
function partition(checks, objectName) {
  /** @type {Part[]} */
  const parts = [];
  for (let i = 0; i < checks.length; i++) {
    const { rule, key, cost } = checks[i];
    const target = objectName(key);
    let part = parts.find((p) => p.objectName === target);
    if (part === undefined) {
      part = { objectName: target, checks: [], indices: [] };
      parts.push(part);
    }
    // Only the fields the object reads cross the RPC.
    part.checks.push({ rule, key, cost });
    part.indices.push(i);
  }
  return parts;
}

// Puts the objects' answers back in request order and picks the deciding check by the core's own rule
// (sluice::Limiter::run): when allowed, the least remaining; when denied, the denying check with the
// longest retry (Infinity longest); the first on ties. Checks of an object that admitted a denied
// request report the charge that was then undone.
/** @param {number} count @param {readonly Part[]} parts @param {readonly ObjectOutcome[]} outcomes @returns {Outcome} */
function mergeOutcomes(count, parts, outcomes) {
  const decisions = new Array(count);
  let allowed = true;
  for (let p = 0; p < parts.length; p++) {
    allowed = allowed && outcomes[p].allowed;
    const { indices } = parts[p];
    for (let j = 0; j < indices.length; j++) decisions[indices[j]] = outcomes[p].checks[j];
  }
  let deciding = -1;
  for (let i = 0; i < count; i++) {
    const d = decisions[i];
    const better = allowed
      ? deciding < 0 || d.remaining < decisions[deciding].remaining
      : !d.allowed && (deciding < 0 || d.retryAfterMs > decisions[deciding].retryAfterMs);
    if (better) deciding = i;
  }
  const { limit, remaining, resetMs, retryAfterMs } = decisions[deciding];
  return { allowed, limit, remaining, resetMs, retryAfterMs, decidingCheck: deciding, checks: decisions, store: "durable" };
}

// FNV-1a over the key's UTF-16 code units: spreads keys over shards; not a security boundary (a client
// choosing keys that land on one shard only loads that shard, it cannot share anyone's count).
/** @param {string} text @returns {number} */
function fnv1a(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
