// The per-isolate limiter: one sluice.wasm instance shared by every request, every middleware and every
// re-evaluation of these modules in the isolate.
//
// It lives on globalThis under one Symbol.for key, so a module evaluated twice (two bundles, a hot
// reload) still finds the same counters. Rules are registered in the instance lazily, the first time a
// request checks them, under their stable id: two middlewares with the same rule share its table.
//
// An instance that fails (a wasm trap, or no memory left to register a rule) is thrown away: the host
// counts the event, creates a fresh instance, registers the rules again as requests need them and keeps
// serving. The counters of the failed instance are lost; a limit that forgets is better than a Worker
// that fails. A check the core refuses (any status, out-of-memory included) is not a failure of the
// instance: a refused call changes nothing in it (test/cpp/failed_call_test.cpp), so it and every
// counter in it stay, and only that request sees the error. No request can make the host forget counts.
// #sluice-wasm is the compiled core, found the way this runtime can load it (package.json "imports").
import wasmModule from "#sluice-wasm";
import { CoreBase, SluiceError, Status } from "../../../wasm-bindings/core-base.js";
import { coreAcquire, coreExportState, coreImportState, coreRelease, coreRenew, coreStats } from "../../../wasm-bindings/sluice.js";
import { MAX_RULES, RuleTable } from "../stores/rule-table.js";

/** @import { Outcome as CoreOutcome, RuleSpec, TableStats } from "../../../wasm-bindings/sluice.js" */
/** @import { IsolateTable, NormalizedRule, Outcome, StoreCheck } from "../stores/store.js" */

/**
 * This isolate's limiter counters.
 * @typedef {object} IsolateStats
 * @property {number} instancesCreated Instances created in this isolate (1 + replacements, once traffic arrived).
 * @property {number} instanceFailures Failures of an instance (a trap, no memory left to register a rule).
 * @property {number} refusedChecks Checks the core refused (out of memory, say): the instance and its counters were kept.
 * @property {number} replacements Instances thrown away after a failure; their counters were lost.
 * @property {number} decisions Requests checked.
 * @property {number} denied Requests checked and denied.
 * @property {number} bypassed Requests let through by the dev bypass.
 * @property {string | null} lastFailure The last failure's error, or null.
 * @property {number} memoryBytes The live instance's linear memory.
 * @property {Array<{ id: string } & (TableStats | { unavailable: true })>} rules The rules registered in the live instance,
 *   with their key tables' statistics.
 */

const STATE = Symbol.for("sluice.isolate");

/**
 * What the isolate keeps on globalThis[STATE].
 * @typedef {object} IsolateState
 * @property {number} version STATE_VERSION of the module that created it.
 * @property {RuleTable<CoreBase>} rules
 * @property {Map<string, IsolateTable>} declaredTables `${owner}\0${rule id}` -> the table, as declared at construction.
 * @property {Omit<IsolateStats, "lastFailure" | "memoryBytes" | "rules">} counters
 * @property {string | null} lastFailure
 */
/** globalThis seen as the holder of the isolate's state. @type {{ [STATE]?: IsolateState }} */
const holder = /** @type {any} */ (globalThis);
// Bumped when the shape of the state changes, so an older copy of this module's state is not misread.
const STATE_VERSION = 3;
const PEEK = Object.freeze({ peek: true });

// Refusals caused by the call, not by the instance: the instance is healthy, the caller is wrong.
const CALLER_ERRORS = new Set([Status.KEY_TOO_LONG, Status.INVALID_RULE, Status.INVALID_COST, Status.TOO_MANY_CHECKS]);

// A normalized rule carries every field SluiceCore.addRule reads, its own key capacity included.
const asRuleSpec = /** @param {NormalizedRule} rule @returns {RuleSpec} */ (rule) => rule;

/** @returns {IsolateState} */
function isolateState() {
  const existing = holder[STATE];
  if (existing !== undefined && existing.version === STATE_VERSION) return existing;
  const counters = {
    instancesCreated: 0,
    instanceFailures: 0,
    replacements: 0,
    decisions: 0,
    denied: 0,
    bypassed: 0,
    refusedChecks: 0,
  };
  /** @type {IsolateState} */
  const state = {
    version: STATE_VERSION,
    // Created on first use, inside a request: workerd refuses random numbers (the hash seed) at global scope.
    // A CoreBase: the operations beyond deciding (concurrency, state bytes, statistics) are functions
    // of it (wasm-bindings/sluice.js), so an app bundles only those its features reach.
    rules: new RuleTable(asRuleSpec, () => {
      counters.instancesCreated++;
      return CoreBase.instantiate(wasmModule);
    }),
    declaredTables: new Map(), // `${owner}\0${rule id}` -> the table, as declared at construction
    counters,
    lastFailure: null,
  };
  // Not enumerable: the state is nobody else's business when globalThis is inspected.
  Object.defineProperty(globalThis, STATE, { value: state, writable: true, configurable: true, enumerable: false });
  return state;
}

// Marks an error thrown by the core's check itself (not by registering a rule): the instance refused
// the call and is intact.
const REFUSED = Symbol("sluice.refused-check");

/**
 * @param {IsolateState} state
 * @param {readonly StoreCheck[]} checks
 * @param {number} nowMs
 * @param {boolean | undefined} peek
 * @returns {Outcome}
 */
function run(state, checks, nowMs, peek) {
  const indices = state.rules.indicesOf(checks);
  const count = checks.length;
  const specs = new Array(count);
  for (let i = 0; i < count; i++) {
    const check = checks[i];
    specs[i] = { rule: indices[i], key: check.key, cost: check.cost };
  }
  // The core's outcome, which this function completes with the store that decided.
  /** @type {Outcome} */
  let outcome;
  try {
    outcome = /** @type {Outcome} */ (state.rules.core.checkAll(specs, nowMs, peek ? PEEK : undefined));
  } catch (error) {
    if (error instanceof SluiceError) /** @type {any} */ (error)[REFUSED] = true;
    throw error;
  }
  outcome.store = "memory";
  return outcome;
}

/** @param {unknown} error */
function isInstanceFailure(error) {
  if (error instanceof SluiceError && /** @type {any} */ (error)[REFUSED] === true) return false;
  return !(error instanceof SluiceError && CALLER_ERRORS.has(/** @type {any} */ (error.status)));
}

// Drops the failed instance; the next call creates a fresh one.
/** @param {IsolateState} state @param {unknown} error */
function discardCore(state, error) {
  state.counters.instanceFailures++;
  state.counters.replacements++;
  const thrown = /** @type {{ name?: unknown, message?: unknown } | null | undefined} */ (error);
  state.lastFailure = `${thrown?.name ?? "Error"}: ${thrown?.message ?? String(error)}`;
  state.rules.discard();
}

/**
 * decideInIsolate decides `checks` ({rule: NormalizedRule, key, cost}) on the isolate's instance at
 * `nowMs`, all-or-nothing, and returns the core's Outcome with `store: "memory"`. Synchronous.
 * An instance failure replaces the instance and retries once on the fresh one.
 * @param {readonly StoreCheck[]} checks
 * @param {number} nowMs
 * @param {boolean} [peek]
 * @returns {Outcome}
 */
export function decideInIsolate(checks, nowMs, peek = false) {
  const state = isolateState();
  try {
    return run(state, checks, nowMs, peek);
  } catch (error) {
    if (!isInstanceFailure(error)) {
      if (error instanceof SluiceError && /** @type {any} */ (error)[REFUSED] === true) state.counters.refusedChecks++;
      throw error;
    }
    discardCore(state, error);
  }
  try {
    return run(state, checks, nowMs, peek);
  } catch (error) {
    // Twice in a row: give up on this request, but leave the next one a fresh instance.
    if (isInstanceFailure(error)) discardCore(state, error);
    throw error;
  }
}

/**
 * resetInIsolate forgets the (rule, key) of each check in the isolate's instance: back to full quota.
 * @param {readonly StoreCheck[]} checks
 * @returns {void}
 */
export function resetInIsolate(checks) {
  const state = isolateState();
  const indices = state.rules.indicesOf(checks);
  for (let i = 0; i < checks.length; i++) state.rules.core.reset(indices[i], checks[i].key);
}

/**
 * concurrencyInIsolate runs one concurrency operation ("acquire", "release" or "renew") for `holder` on
 * `key` of the concurrency rule `rule` in the isolate's instance, at `nowMs`, and returns the core's
 * decision with `store: "memory"`. A failed instance is replaced (its holders are gone with it: they
 * can no longer be released, and need not be).
 * @param {"acquire" | "release" | "renew"} op
 * @param {NormalizedRule} rule
 * @param {string} key
 * @param {number} holder
 * @param {number} cost
 * @param {number} nowMs
 * @returns {import("../../../wasm-bindings/sluice.js").Decision & { store: "memory" }}
 */
export function concurrencyInIsolate(op, rule, key, holder, cost, nowMs) {
  const state = isolateState();
  try {
    const [index] = state.rules.indicesOf([{ rule }]);
    const core = state.rules.core;
    const decision =
      op === "acquire" ? coreAcquire(core, index, key, holder, cost, nowMs) : op === "release" ? coreRelease(core, index, key, holder, nowMs) : coreRenew(core, index, key, holder, nowMs);
    return { ...decision, store: "memory" };
  } catch (error) {
    if (isInstanceFailure(error)) discardCore(state, error);
    throw error;
  }
}

/**
 * exportKeyState returns the bytes of `key`'s state under `rule` in the isolate's instance (null when it
 * holds none), so that a host can keep them elsewhere (a WebSocket's hibernation attachment).
 * @param {NormalizedRule} rule
 * @param {string} key
 * @returns {Uint8Array | null}
 */
export function exportKeyState(rule, key) {
  const state = isolateState();
  const [index] = state.rules.indicesOf([{ rule }]);
  return coreExportState(state.rules.core, index, key);
}

/**
 * importKeyState puts bytes from exportKeyState back; false when the core refuses them (another rule).
 * @param {NormalizedRule} rule
 * @param {string} key
 * @param {Uint8Array} bytes
 * @returns {boolean}
 */
export function importKeyState(rule, key, bytes) {
  const state = isolateState();
  const [index] = state.rules.indicesOf([{ rule }]);
  try {
    coreImportState(state.rules.core, index, key, bytes);
    return true;
  } catch (error) {
    if (error instanceof SluiceError && error.status === Status.INVALID_STATE) return false;
    throw error;
  }
}

/**
 * countDecision records a decision in the isolate's counters.
 * @param {{ allowed: boolean; bypassed: boolean }} decision
 */
export function countDecision(decision) {
  const counters = isolateState().counters;
  if (decision.bypassed) {
    counters.bypassed++;
    return;
  }
  counters.decisions++;
  if (!decision.allowed) counters.denied++;
}

// The instance's linear memory is capped at 96 MB (CMakeLists.txt) and it holds at most 64 rules
// (sluice::Limiter::kMaxRules). The key tables sluice keeps in an isolate (the memory store's, the
// KV store's views, and the memory fallback of durable and kv rules) are held to one budget below that
// ceiling, whichever instance holds them, so that registering them can never exhaust an instance nor
// crowd the isolate's 128 MB. The rest of the ceiling is the tables' growth under eviction pressure
// (at most 28 MiB, sluice::Limiter::kDefaultGrowthBudgetBytes; docs/core.md, "Table growth") and
// their summaries. Counts kept in a Durable Object take no isolate memory.
export { MAX_RULES };
export const TABLE_BUDGET_BYTES = 56 * 1024 * 1024;
/** The owner of the tables in the isolate's own instance (the memory store's). */
export const MEMORY_OWNER = "memory";

/**
 * slotBytes is the memory of one slot of a rule's key table: 24 bytes (a hash tag and two state words),
 * plus 4 bytes per unit of limit for the sliding log, which keeps every admitted request's time, and 8
 * for the concurrency rule, which keeps every held unit's holder and lease.
 * @param {string} algorithm
 * @param {number} limit
 * @returns {number}
 */
export function slotBytes(algorithm, limit) {
  return 24 + 4 * (algorithm === "sliding-log" ? limit : algorithm === "concurrency" ? 2 * limit : 0);
}

/**
 * summaryBytes is the memory of a rule's eviction summary (sluice::EvictionSummary::bytes_for): 2 rows
 * of one 16-byte cell per 64 keys of capacity, a power of two from 256 to 65536 cells.
 * @param {number} keyCapacity
 * @returns {number}
 */
export function summaryBytes(keyCapacity) {
  let cells = 256;
  while (cells < 65536 && cells * 64 < keyCapacity) cells *= 2;
  return 2 * cells * 16;
}

/**
 * tableBytes estimates the memory of a rule's key table: the core's own sizing (KeyTable::init, slots
 * for capacity / 0.9 keys in buckets of 8) times slotBytes, and the one spare ring of zeros of the
 * rules that keep rings. The table's eviction summary (summaryBytes) is not counted against
 * TABLE_BUDGET_BYTES: at 8 KiB per rule up to 16,384 keys and 0.5 bytes per key above, all of them
 * together (56 MiB of tables hold at most about 2.2 million keys) stay under 2 MiB of the 35.5 MiB the
 * budget leaves below the instance's 96 MB (91.5 MiB) ceiling, beside the tables' growth (28 MiB at most).
 * @param {string} algorithm
 * @param {number} limit
 * @param {number} keyCapacity
 * @returns {number}
 */
export function tableBytes(algorithm, limit, keyCapacity) {
  const slots = Math.ceil(Math.floor((keyCapacity * 10 + 8) / 9) / 8) * 8;
  const spareRing = slotBytes(algorithm, limit) - 24;
  return slots * slotBytes(algorithm, limit) + spareRing;
}

const tableId = /** @param {IsolateTable} table */ (table) => `${table.owner}\u0000${table.ruleId}`;

/**
 * declareTables records, at construction, the key tables a limiter's store will keep in the isolate
 * for one rule ({ owner, ruleId, algorithm, limit, keyCapacity }, from store.isolateTables(rule)).
 * Tables of one owner and rule id are one table, so they must agree on its size; an owner holds at
 * most MAX_RULES tables; all of them together must fit TABLE_BUDGET_BYTES. Records all or none.
 * Returns undefined when they fit, else why not, for the caller to report as a configuration error.
 */
/**
 * @param {readonly IsolateTable[]} tables
 * @returns {string | undefined}
 */
export function declareTables(tables) {
  const declared = isolateState().declaredTables;
  /** @type {IsolateTable[]} */
  const fresh = [];
  for (const table of tables) {
    const known = declared.get(tableId(table));
    if (known === undefined) {
      if (!fresh.some((other) => tableId(other) === tableId(table))) fresh.push(table);
    } else if (known.keyCapacity !== table.keyCapacity) {
      return `differs from the keyCapacity ${known.keyCapacity} of another limiter with the same rule (${table.ruleId})`;
    }
  }
  if (fresh.length === 0) return undefined;
  for (const table of fresh) {
    let held = fresh.filter((other) => other.owner === table.owner).length;
    for (const other of declared.values()) if (other.owner === table.owner) held++;
    if (held > MAX_RULES) {
      const where = table.owner === MEMORY_OWNER ? "this Worker" : `this Worker's ${table.owner} views`;
      return `would be rule number ${MAX_RULES + 1} of ${where}; an isolate holds at most ${MAX_RULES}`;
    }
  }
  let total = 0;
  for (const table of [...declared.values(), ...fresh]) total += tableBytes(table.algorithm, table.limit, table.keyCapacity);
  if (total > TABLE_BUDGET_BYTES) {
    return `brings this Worker's key tables to ${Math.ceil(total / 1048576)} MiB; they must fit in ${TABLE_BUDGET_BYTES / 1048576} MiB`;
  }
  for (const table of fresh) declared.set(tableId(table), table);
  return undefined;
}

/**
 * memoryTable describes the table the isolate's own instance keeps for `rule`.
 * @param {NormalizedRule} rule
 * @returns {IsolateTable}
 */
export function memoryTable(rule) {
  return { owner: MEMORY_OWNER, ruleId: rule.id, algorithm: rule.algorithm, limit: rule.limit, keyCapacity: rule.keyCapacity };
}

// Rules are validated by the core itself (the one place that knows every bound), in an instance that
// never sees traffic and is dropped at once, whatever memory the rule's table took. A fixed seed is
// fine there, and needed: construction runs at global scope, where workerd refuses random numbers.
const VALIDATION_SEED = new Uint32Array(4);

/**
 * validateRule asks the core whether it accepts `rule`'s algorithm, limit, window and burst; it throws
 * the core's SluiceError (with `field`) if not. Key capacity is not exercised here.
 * @param {Pick<NormalizedRule, "algorithm" | "limit" | "windowMs" | "burst" | "countDenied" | "blockMs">} rule
 * @returns {void}
 */
export function validateRule(rule) {
  const { algorithm, limit, windowMs, burst, countDenied = false, blockMs = 0 } = rule;
  CoreBase.instantiate(wasmModule, { seed: VALIDATION_SEED }).addRule({ algorithm, limit, windowMs, burst, countDenied, blockMs, keyCapacity: 1 });
}

/**
 * isolateStats reports the isolate's counters and, for every rule registered in the live instance,
 * its key table's statistics.
 * @returns {IsolateStats}
 */
export function isolateStats() {
  const state = isolateState();
  /** @type {IsolateStats["rules"]} */
  const rules = [];
  if (state.rules.live) {
    const core = state.rules.core;
    for (const [id, index] of state.rules.registered()) {
      try {
        rules.push({ id, ...coreStats(core, index) });
      } catch {
        rules.push({ id, unavailable: true });
      }
    }
  }
  return {
    ...state.counters,
    lastFailure: state.lastFailure,
    memoryBytes: state.rules.live ? state.rules.core.memoryBytes : 0,
    rules,
  };
}

/**
 * Test hooks: ways to make the live instance fail for real or as a trap would, so tests can watch the
 * host replace it. Nothing in the package entries or the demo Worker imports them, so no request can
 * reach them.
 */
export const isolateTestHooks = /* @__PURE__ */ Object.freeze({
  /** Makes the instance's next check throw as a wasm trap does (the instance is then unusable). */
  trapOnNextCheck() {
    // Shadows the method on this one instance, which the host then discards.
    isolateState().rules.core.checkAll = () => {
      throw new WebAssembly.RuntimeError("unreachable executed (sluice test hook)");
    };
  },

  /** Makes the instance's next check refuse the call as the core does when it has no room (OUT_OF_MEMORY). */
  refuseNextCheck() {
    const core = isolateState().rules.core;
    const checkAll = core.checkAll;
    core.checkAll = function refuseOnce() {
      core.checkAll = checkAll;
      throw new SluiceError(Status.OUT_OF_MEMORY, "sluice checkAll failed: OUT_OF_MEMORY (sluice test hook)");
    };
  },

  /**
   * Fills the live instance's memory with ballast tables until the core refuses any more (its 96 MB
   * ceiling), so the next rule it has to register fails with OUT_OF_MEMORY, as a real one would.
   */
  exhaustMemory() {
    const core = isolateState().rules.core;
    let keyCapacity = 1 << 20;
    while (keyCapacity >= 1) {
      try {
        core.addRule({ algorithm: "fixed-window", limit: 1, windowMs: 1000, keyCapacity });
      } catch (error) {
        if (!(error instanceof SluiceError) || error.status !== Status.OUT_OF_MEMORY) throw error;
        keyCapacity >>= 1;
      }
    }
  },

  /** Forgets the isolate's state entirely, as a fresh isolate would start. */
  reset() {
    delete holder[STATE];
  },
});
