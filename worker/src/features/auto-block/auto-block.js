// Auto-blocking: a key refused `after` times within a span is refused everything for a set time.
//
// Composed from what the core already has, so no window arithmetic lives here: each auto-blocking rule
// gets a second rule, its "strikes" rule (sliding-log, limit `after`, window `within`, block duration
// `block`), kept in the same store under the same key. Every 429 the rule answers charges one strike.
// Every request first peeks the strikes rule: while it still has room the request goes on to the rule;
// once the strikes are spent, the request is charged to the strikes rule instead, a denial that starts
// the block in the core (or meets the block already there: a denial during a block does not extend it).
// So a key is blocked exactly when the core says so, in every isolate of the durable and Redis stores.
import { SluiceConfigError, describe } from "../../engine/errors.js";
import { normalizeRuleSpec } from "../../engine/options.js";
import { storeKey } from "../../http/keys.js";
import { MAX_LISTED_KEY_CHARS } from "../../stores/block-list-table.js";
import { createBlockList } from "./block-list.js";

/** @import { NormalizedRule, Outcome, Store, StoreOptions } from "../../stores/store.js" */
/** @import { BlockList } from "./block-list.js" */

/**
 * autoBlock's options: give one of withinSec and withinMs, and one of blockSec and blockMs.
 * @typedef {object} AutoBlockOptions
 * @property {number} after How many 429s of the rule, within the span, spend a key's strikes (1 to 1000); the next request starts its block.
 * @property {number} [withinSec] The span the 429s are counted in, in seconds (whole milliseconds).
 * @property {number} [withinMs] Or in milliseconds.
 * @property {number} [blockSec] How long a key is then refused everything, in seconds (whole milliseconds).
 * @property {number} [blockMs] Or in milliseconds.
 * @property {number} [maxListed] How many blocks the isolate's own list of blocks keeps (default 1000; older ones are forgotten, never lifted; the
 *   store's list of blocks, on durable and Redis, keeps its own 10,000).
 */

/**
 * What autoBlock counts, in this isolate since it started.
 * @typedef {object} AutoBlockCounters
 * @property {number} strikes 429s of the rule charged as strikes.
 * @property {number} blocksStarted Blocks this isolate started: denials of the strikes rule reporting the block's whole length (one
 *   that met a block started in the same millisecond counts too).
 * @property {number} refusedWhileBlocked Requests refused because their key was blocked (or its strikes spent).
 * @property {number} lifted Blocks lifted through lift().
 * @property {number} failures Strikes or peeks that failed in the store (the request was then decided by the rule alone).
 */

/**
 * A block as the list of blocks holds it: the rule's name, the key as its key function gave it, and
 * when the block ends (ms since the epoch, on the limiter's clock).
 * @typedef {{ rule: string, key: string, untilMs: number }} BlockEntry
 */

const MAX_AFTER = 1000;
const OPTIONS = ["after", "withinSec", "withinMs", "blockSec", "blockMs", "maxListed"];
const AUTO_BLOCK = Symbol.for("sluice.autoBlock");

/** isAutoBlock tells whether `value` came from autoBlock(). @param {unknown} value */
export function isAutoBlock(value) {
  return typeof value === "object" && value !== null && /** @type {any} */ (value)[AUTO_BLOCK] === true;
}

// One of a duration's two spellings, in whole milliseconds.
/** @param {AutoBlockOptions} options @param {"within" | "block"} name @param {string} path @returns {number} */
function durationMs(options, name, path) {
  const sec = options[`${name}Sec`];
  const ms = options[`${name}Ms`];
  if (sec !== undefined && ms !== undefined) throw new SluiceConfigError(`${path}${name}Ms`, `cannot be given with ${name}Sec: give one of them`);
  if (sec === undefined && ms === undefined) throw new SluiceConfigError(`${path}${name}Sec`, `is missing: give ${name}Sec or ${name}Ms`);
  // One of the two is given (checked just above); whether it is a whole number is checked next.
  const value = sec !== undefined ? sec * 1000 : /** @type {number} */ (ms);
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new SluiceConfigError(`${path}${name}${sec !== undefined ? "Sec" : "Ms"}`, `must be a positive duration in whole milliseconds; got ${describe(sec ?? ms)}`);
  }
  return value;
}

/**
 * autoBlock makes a rule block the keys it keeps refusing: after `after` 429s within `withinSec`, a key
 * is refused every request for `blockSec` (as a block duration is: docs/blocks.md). Give it as a rule's
 * `autoBlock` option. Bad options throw a SluiceConfigError naming the field.
 * @param {AutoBlockOptions} options
 */
export function autoBlock(options) {
  if (typeof options !== "object" || options === null) throw new SluiceConfigError("autoBlock", `must be an object; got ${describe(options)}`);
  for (const field of Object.keys(options)) {
    if (!OPTIONS.includes(field)) throw new SluiceConfigError(`autoBlock.${field}`, `is not an option (known: ${OPTIONS.join(", ")})`);
  }
  const { after, maxListed = 1000 } = options;
  if (!Number.isSafeInteger(after) || after < 1 || after > MAX_AFTER) throw new SluiceConfigError("autoBlock.after", `must be a whole number from 1 to ${MAX_AFTER}; got ${describe(after)}`);
  if (!Number.isSafeInteger(maxListed) || maxListed < 1 || maxListed > 100_000) throw new SluiceConfigError("autoBlock.maxListed", `must be a whole number from 1 to 100000; got ${describe(maxListed)}`);
  const withinMs = durationMs(options, "within", "autoBlock.");
  const blockMs = durationMs(options, "block", "autoBlock.");
  const spec = { after, withinMs, blockMs, maxListed };
  return Object.freeze({
    [AUTO_BLOCK]: true,
    ...spec,
    spec,
    /**
     * group binds the autoBlock() values of a limiter's rules (`entries`, as options.js normalizes
     * them, with `path` and `autoBlock`) to their rules, declares their strikes rules (`declare`), and
     * returns what the engine does with them (groupAutoBlocks). `kv`: the limiter's store is KV, which
     * keeps counts, not blocks. The engine calls it, so it never imports this module.
     * @param {ReadonlyArray<{ rule: NormalizedRule, path: string, autoBlock?: any }>} entries
     * @param {(rule: NormalizedRule, path: string) => void} declare @param {boolean} kv
     */
    group(entries, declare, kv) {
      /** @type {{ index: number, name: string, blocker: AutoBlocker }[]} */
      const list = [];
      entries.forEach(({ rule, path, autoBlock: value }, index) => {
        if (value === undefined) return;
        if (value?.[AUTO_BLOCK] !== true) throw new SluiceConfigError(`${path}autoBlock`, `must be made by autoBlock({ after, withinSec, blockSec }); got ${describe(value)}`);
        if (kv) throw new SluiceConfigError(`${path}autoBlock`, 'applies to the stores "memory", "durable" and "redis"; KV keeps counts, not blocks');
        const blocker = createAutoBlocker(value.spec, rule, strikesRuleOf(value.spec, rule, path));
        declare(blocker.rule, path);
        list.push({ index, name: rule.name, blocker });
      });
      return groupAutoBlocks(list);
    },
  });
}

/**
 * strikesRuleOf is the strikes rule of `rule` under `spec` (autoBlock()'s value): its own name, id
 * and table. `path` prefixes the fields of errors ("rules[1].").
 * @param {{ after: number, withinMs: number, blockMs: number }} spec
 * @param {NormalizedRule} rule
 * @param {string} path
 * @returns {NormalizedRule}
 */
export function strikesRuleOf(spec, rule, path) {
  try {
    const strikes = { name: `${rule.name}~strikes`, algorithm: "sliding-log", limit: spec.after, windowMs: spec.withinMs, blockMs: spec.blockMs };
    const sized = normalizeRuleSpec(strikes);
    // As many keys as the rule's own table holds, when that is fewer than a strikes table's default.
    return rule.keyCapacity < sized.keyCapacity ? normalizeRuleSpec({ ...strikes, keyCapacity: rule.keyCapacity }) : sized;
  } catch (error) {
    if (!(error instanceof SluiceConfigError)) throw error;
    const field = { limit: "after", windowMs: "withinMs", blockMs: "blockMs", name: "name" }[error.field] ?? error.field;
    throw new SluiceConfigError(`${path}${field === "name" ? "name" : `autoBlock.${field}`}`, error.problem);
  }
}

/**
 * createAutoBlocker binds an autoBlock() spec to its rule: the steps the engine takes per request
 * (gate before the rule, strike after its 429), the counters, and the list and lifting of blocks.
 * @param {{ after: number, withinMs: number, blockMs: number, maxListed: number }} spec
 * @param {NormalizedRule} rule the rule whose 429s count
 * @param {NormalizedRule} strikes its strikes rule (strikesRuleOf)
 */
export function createAutoBlocker(spec, rule, strikes) {
  /** @type {AutoBlockCounters} */
  const counters = { strikes: 0, blocksStarted: 0, refusedWhileBlocked: 0, lifted: 0, failures: 0 };
  const blocks = createBlockList(spec.maxListed);

  /**
   * A store call that fails is counted, and leaves the request to the rule alone.
   * @param {Store} store @param {string} key the store key @param {StoreOptions & { nowMs: number }} options
   * @returns {Promise<Outcome | null>}
   */
  async function call(store, key, options) {
    try {
      return await store.decide([{ rule: strikes, key, cost: 1 }], options);
    } catch {
      counters.failures++;
      return null;
    }
  }

  // A denied strike started the block when the store reports its whole length (a block it met has
  // less left, unless it started in the same millisecond: then it is counted twice); either way the
  // isolate's list holds it, and a block new to that list is noted in the store's list of blocks (the
  // deployment's: one write per block per isolate), awaited so that the list shows it once the
  // request that started it is answered.
  /** @param {Store} store @param {string} keyText @param {Outcome} charged a denial of the strikes rule @param {StoreOptions & { nowMs: number }} options */
  async function noteBlock(store, keyText, charged, options) {
    if (charged.retryAfterMs >= spec.blockMs) counters.blocksStarted++;
    const untilMs = options.nowMs + charged.retryAfterMs;
    if (!blocks.add(rule.name, keyText, untilMs, options.nowMs)) return;
    if (store.blockList === undefined || keyText.length > MAX_LISTED_KEY_CHARS) return;
    try {
      await store.blockList.note({ rule: rule.name, key: keyText, untilMs }, { nowMs: options.nowMs, env: options.env });
      blocks.shared(rule.name, keyText);
    } catch {
      counters.failures++;
    }
  }

  return Object.freeze({
    rule: strikes,
    counters,
    /**
     * gate decides whether the key is blocked: null when the request goes on to the rule, else the
     * strikes rule's denial (its retryAfterMs: until the block ends). With `peek`, it charges nothing.
     * @param {Store} store @param {string} key the store key @param {string} keyText @param {StoreOptions & { nowMs: number }} options
     * @returns {Promise<Outcome | null>}
     */
    async gate(store, key, keyText, options) {
      const seen = await call(store, key, { ...options, peek: true });
      if (seen === null || seen.allowed || options.peek) return seen === null || seen.allowed ? null : seen;
      // The strikes are spent: this charge is the denial that starts the block (or meets it).
      const charged = await call(store, key, options);
      if (charged === null || charged.allowed) {
        // A strike left the span between the peek and the charge: the key has room again.
        return null;
      }
      counters.refusedWhileBlocked++;
      await noteBlock(store, keyText, charged, options);
      return charged;
    },
    /**
     * strike charges one 429 of the rule to the key's strikes (awaited, so that sequential requests
     * are counted exactly). A strike past `after` (429s in flight at once) is itself the denial that
     * blocks the key. @param {Store} store @param {string} key @param {string} keyText
     * @param {StoreOptions & { nowMs: number }} options
     */
    async strike(store, key, keyText, options) {
      const charged = await call(store, key, { ...options, peek: false });
      if (charged === null) return;
      counters.strikes++;
      if (!charged.allowed) await noteBlock(store, keyText, charged, options);
    },
    /**
     * list is the blocks this isolate started or met that have not ended at `nowMs`; with
     * `unsharedOnly`, only those the store's list of blocks does not hold.
     * @param {number} nowMs @param {boolean} [unsharedOnly] @returns {BlockEntry[]}
     */
    list(nowMs, unsharedOnly = false) {
      return blocks.live(nowMs, unsharedOnly);
    },
    /** A call on the store's list of blocks failed (the isolate's own list answered alone). */
    listFailed() {
      counters.failures++;
    },
    /**
     * lift ends the block of `keyText` (the key as the rule's key function gives it) and forgets its
     * strikes, in the store. @param {Store} store @param {string} keyText @param {StoreOptions & { nowMs: number }} options
     */
    async lift(store, keyText, options) {
      if (typeof store.reset !== "function") throw new TypeError(`sluice: the ${store.name} store has no reset(checks, options)`);
      await store.reset([{ rule: strikes, key: await storeKey(keyText), cost: 1 }], options);
      blocks.remove(rule.name, keyText);
      counters.lifted++;
      // The block has ended in the store; off the deployment's list too (a failure leaves it listed until its end).
      if (store.blockList !== undefined) {
        try {
          await store.blockList.forget(rule.name, keyText, options);
        } catch {
          counters.failures++;
        }
      }
    },
  });
}

/** @typedef {ReturnType<typeof createAutoBlocker>} AutoBlocker */

/**
 * groupAutoBlocks is what the engine does with a limiter's auto-blocking rules (`list`: each rule's
 * index among the limiter's checks, name and blocker): refuse a blocked key before its rules are
 * charged, strike a rule's 429, and the limiter's `blocks`.
 * @param {ReadonlyArray<{ index: number, name: string, blocker: AutoBlocker }>} list
 */
export function groupAutoBlocks(list) {
  /**
   * The refusal of a request whose key an auto-blocking rule has blocked, or null: the rule's own
   * decision (its limit, nothing remaining) until the block ends, which its Retry-After says.
   * @param {Store} store @param {readonly import("../../stores/store.js").StoreCheck[]} checks @param {readonly string[]} keys
   * @param {StoreOptions & { nowMs: number }} options
   * @returns {Promise<Outcome | null>}
   */
  async function refusal(store, checks, keys, options) {
    for (const { index, blocker } of list) {
      const blocked = await blocker.gate(store, checks[index].key, keys[index], options);
      if (blocked === null) continue;
      const own = { allowed: false, limit: checks[index].rule.limit, remaining: 0, resetMs: blocked.resetMs, retryAfterMs: blocked.retryAfterMs };
      return { ...own, decidingCheck: index, checks: checks.map((_, i) => (i === index ? own : null)), store: blocked.store, autoBlocked: true };
    }
    return null;
  }

  return Object.freeze({
    /**
     * decide is the engine's store call with auto-blocking: a blocked key is refused before its rules
     * are charged; else the store decides, and a 429 of an auto-blocking rule is one of its key's
     * strikes (awaited, so that sequential requests count exactly). `conclude` turns an outcome into
     * the limiter's decision (and counts it).
     * @template D
     * @param {Store} store @param {import("../../stores/store.js").StoreCheck[]} checks @param {readonly string[]} keys
     * @param {StoreOptions & { nowMs: number, peek: boolean }} options @param {(outcome: Outcome) => D & { allowed: boolean }} conclude
     * @returns {Promise<D>}
     */
    async decide(store, checks, keys, options, conclude) {
      const blocked = await refusal(store, checks, keys, options);
      if (blocked !== null) return conclude(blocked);
      const outcome = await store.decide(checks, options);
      const decision = conclude(outcome);
      if (!options.peek && !decision.allowed) {
        const found = list.find((entry) => entry.index === outcome.decidingCheck);
        if (found !== undefined) await found.blocker.strike(store, checks[found.index].key, keys[found.index], options);
      }
      return decision;
    },
    /**
     * The limiter's `blocks` (engine/limiter.js's LimiterBlocks) over `store`, on the clock `now`.
     * @param {Store} store @param {() => number} now
     */
    blocks(store, now) {
      return Object.freeze({
        /**
         * The blocks in force: the store's list of blocks (the deployment's, on the durable and Redis
         * stores) with the blocks of this isolate's own list that the store's does not hold.
         * @param {any} [env]
         * @returns {Promise<BlockEntry[]>}
         */
        async list(env) {
          const nowMs = now();
          /** @type {Map<string, BlockEntry>} */
          const merged = new Map();
          /** @param {BlockEntry} entry */
          const add = (entry) => {
            const id = `${entry.rule}\u0000${entry.key}`;
            const known = merged.get(id);
            if (known === undefined || known.untilMs < entry.untilMs) merged.set(id, { rule: entry.rule, key: entry.key, untilMs: entry.untilMs });
          };
          let fromStore = false;
          if (store.blockList !== undefined) {
            const names = new Set(list.map((entry) => entry.name));
            try {
              for (const entry of await store.blockList.list({ nowMs, env })) if (names.has(entry.rule) && entry.untilMs > nowMs) add(entry);
              fromStore = true;
            } catch {
              for (const { blocker } of list) blocker.listFailed();
            }
          }
          // The store's list is the deployment's (a lift in another isolate takes a block off it); the
          // isolate's own adds what the store's list does not hold, or everything when it failed.
          for (const { blocker } of list) blocker.list(nowMs, fromStore).forEach(add);
          return [...merged.values()].sort((a, b) => a.untilMs - b.untilMs);
        },
        /** @param {string} rule @param {string} key @param {any} [env] @param {any} [ctx] */
        async lift(rule, key, env, ctx) {
          const found = list.find((entry) => entry.name === rule);
          if (found === undefined) return false;
          await found.blocker.lift(store, key, { nowMs: now(), env, ctx });
          return true;
        },
        counters: () => list.map(({ name, blocker }) => ({ rule: name, ...blocker.counters })),
      });
    },
  });
}
