#pragma once
#include <cstddef>
#include <cstdint>

#include "sluice/algorithms/concurrency.hpp"
#include "sluice/decision.hpp"
#include "sluice/eviction_summary.hpp"
#include "sluice/key_table.hpp"
#include "sluice/lease.hpp"
#include "sluice/rule.hpp"
#include "sluice/siphash.hpp"
#include "sluice/status.hpp"

namespace sluice {

// Check is one (rule, key, cost) triple of a call. The key is a byte string the limiter does not keep.
struct Check {
  uint32_t rule = 0;
  const uint8_t* key = nullptr;
  uint32_t key_length = 0;
  int64_t cost = 1;
  // With has_hash, `hash` is key_hash() of these same key bytes, which a caller that knows its key did
  // not change since it last asked may pass instead of having them hashed again. A wrong hash decides
  // on another key's state: only pass one key_hash() returned for exactly these bytes.
  bool has_hash = false;
  uint64_t hash = 0;
};

// Outcome is the answer to a whole call.
struct Outcome {
  // allowed: every check admitted and all were charged. Otherwise nothing was charged, and the
  // decision is the denying check's with the longest retry_after_ms (kNever counts as longest).
  // When allowed, the decision is the check's with the least remaining.
  Decision decision;
  int32_t deciding_check = -1;  // index of the check `decision` was taken from
};

// TableStats describes one rule's key table and its eviction summary.
struct TableStats {
  uint32_t keys = 0;
  uint32_t slots = 0;
  uint64_t memory_bytes = 0;  // the table's and the summary's
  uint64_t evictions = 0;
  // Evictions of a key whose state still restricted it (folded into the summary). Any at all means
  // the table is smaller than the set of keys being limited at once: raise its key capacity.
  uint64_t evictions_restricting = 0;
  // Charged requests of keys not in the table that the summary says had used some quota (newcomers
  // possibly limited for what evicted keys owed: the summary's false limiting shows here, true too).
  uint64_t summary_starts = 0;
  uint64_t summary_bytes = 0;
};

// Limiter holds several rules, each with its own bounded key table, and checks any number of them
// (up to kMaxChecksPerCall) in one all-or-nothing call. It never reads a clock: every call takes
// `now_ms`, integer milliseconds since the Unix epoch.
class Limiter {
 public:
  static constexpr uint32_t kMaxRules = 64;
  // Table growth (see set_table_growth): by default a table may grow to 16 times the slots it was
  // added with, all tables of a limiter together by at most 28 MiB beyond what they started with (the
  // tables the host declares fit 56 MiB; with their summaries (under 2 MiB) and this, 86 MiB of the
  // instance's 96 MB (91.5 MiB) ceiling. A step holds its old table until the new one has every key;
  // one that finds no memory for that changes nothing. 28, not less: a flood of 10 times the default
  // 50,000-key table of a sliding log at limit 5 needs ~27 MiB of growth to be held without folding.)
  static constexpr uint32_t kDefaultMaxGrowth = 16;
  static constexpr uint64_t kDefaultGrowthBudgetBytes = uint64_t{28} << 20;
  // The size of an exported state: a fixed header, then 8 bytes per entry for the sliding log.
  static constexpr uint32_t kStateHeaderBytes = 24;

  explicit Limiter(SipHashKey seed) : seed_(seed) {}

  // add_rule validates `config` and allocates a table for `key_capacity` keys. On kInvalidRule,
  // `field` names the offending field.
  Status add_rule(const RuleConfig& config, uint32_t key_capacity, uint32_t* rule_id, const char** field);

  // check decides `count` checks at `now_ms` and, if all admit, charges them all. Two checks of the
  // same rule and key are one request of their summed cost. per_check[i] receives check i's own
  // decision (uncharged, with retry_after_ms 0, when another check denied the call).
  Status check(const Check* checks, uint32_t count, int64_t now_ms, Decision* per_check, Outcome* outcome);

  // check_one decides (and, with `charge`, charges) one request of `cost` on the key whose key_hash() is
  // `hash`: the call nearly every request makes, without the Check and Outcome wrapping. Its decision
  // is exactly check()'s (or peek()'s, without `charge`) for one check of those key bytes.
  Status check_one(uint32_t rule_id, uint64_t hash, int64_t cost, int64_t now_ms, bool charge, Decision* out);

  // peek is check without charging or remembering any key.
  Status peek(const Check* checks, uint32_t count, int64_t now_ms, Decision* per_check, Outcome* outcome);

  // reset forgets a key of a rule: it is back to its full quota. Forgetting an unknown key is kOk.
  Status reset(uint32_t rule_id, const uint8_t* key, uint32_t key_length);

  // export_state writes a key's state as portable bytes (see README: "State bytes"); kNotFound if the
  // key holds none. `written` receives the size, or the size needed on kBufferTooSmall.
  Status export_state(uint32_t rule_id, const uint8_t* key, uint32_t key_length, uint8_t* out,
                      uint32_t out_capacity, uint32_t* written);

  // import_state replaces a key's state with bytes from export_state of a rule with the same
  // parameters; kInvalidState if they are malformed or were made under other parameters.
  Status import_state(uint32_t rule_id, const uint8_t* key, uint32_t key_length, const uint8_t* bytes,
                      uint32_t length);

  // exported_state_bytes is the largest export_state output of a rule.
  Status exported_state_bytes(uint32_t rule_id, uint32_t* bytes) const;
  // The same for a rule not added yet (its limit as validated by add_rule), so that a host can make
  // room for its exports before adding it.
  static uint64_t exported_state_bytes(Algorithm algorithm, int64_t limit) {
    if (algorithm == Algorithm::kConcurrency) return kStateHeaderBytes + 16 * static_cast<uint64_t>(limit);
    return kStateHeaderBytes + (algorithm == Algorithm::kSlidingLog ? 8 * static_cast<uint64_t>(limit) : 0);
  }

  // concurrency applies `op` for `holder` to the key whose key_hash() is `hash` of a concurrency rule
  // (kInvalidArgument for any other rule). Acquire decides like check_one (allowed: the units were
  // taken). Release and renew always succeed as calls; `allowed` then reports whether the holder had
  // live units to free or renew, and the rest of the decision describes the key afterwards (a peek).
  Status concurrency(uint32_t rule_id, uint64_t hash, concurrency::Op op, uint32_t holder, int64_t cost,
                     int64_t now_ms, Decision* out);

  // set_table_growth bounds how far key tables grow under eviction pressure: when a new key's slot
  // would evict a key whose state still restricts it (a key the summary would have to remember), its
  // table grows instead (it doubles, or takes the largest step of at least a quarter that still fits),
  // as long as it stays within `max_factor` times the capacity it was added with and the growth of all
  // tables stays within `budget_bytes`. Past that, keys are folded into the
  // eviction summary as before. A factor of 1 never grows. Growth changes no decision: it moves every
  // key with its state, and the summary keeps everything folded before.
  void set_table_growth(uint32_t max_factor, uint64_t budget_bytes) {
    max_growth_ = max_factor == 0 ? 1 : max_factor;
    growth_budget_bytes_ = budget_bytes;
  }

  Status stats(uint32_t rule_id, TableStats* out) const;
  uint32_t rule_count() const { return rule_count_; }

  // lend lends up to `wanted` units of the key whose key_hash() is `hash` for at most `lease_ms` from
  // `now_ms` (lease.hpp): min(wanted, what is left / kLendShare), charged to the key now. Nothing is
  // lent (units 0) when the key is in a later window than now's (time ran backwards), and a rule
  // whose algorithm cannot lend, or that blocks (block.hpp), is kInvalidArgument. A sliding log lends only once the key has a
  // direct admission, and not when `now_ms` is before its newest one (sliding_log::lend). A fixed window
  // or sliding counter whose window ends within `ahead_ms` of `now_ms` lends from the next window
  // instead (lease.hpp, "lent ahead": out->starts_at_ms is that window's start).
  Status lend(uint32_t rule_id, uint64_t hash, int64_t wanted, int64_t lease_ms, int64_t now_ms, Lease* out,
              int64_t ahead_ms = 0);

  // give_back takes back up to `units` unused units of a lease that lend() gave out with
  // `expires_at_ms`, if the key is still in the window they were charged in (a sliding log: while
  // the lent entries are still in its ring); `returned` receives how many it took (0 once the window
  // is over: they lapsed with it).
  Status give_back(uint32_t rule_id, uint64_t hash, int64_t units, int64_t expires_at_ms, int64_t* returned);

  // key_hash is the hash the key tables know `key` by (SipHash-1-3 under this limiter's seed).
  uint64_t key_hash(const uint8_t* key, uint32_t key_length) const { return siphash13(seed_, key, key_length); }

 private:
  struct RuleTable {
    Rule rule;
    uint32_t signature = 0;
    KeyTable table;
    EvictionSummary summary;
    uint64_t summary_starts = 0;
    // The slot of the last key a single check found or placed: a client sending request after request
    // finds its slot again without probing the buckets. Verified against the slot's tag before use, so
    // the initial slot 0 needs no "none" marker (and the limiter stays all zeros until rules arrive).
    uint64_t last_hash = 0;
    uint32_t last_slot = 0;
    // The slots the table was added with, which table growth multiplies at most max_growth_ times.
    uint32_t first_slot_count = 0;
    // The bucket count at which grow() last found no step (budget or memory): it does not try again
    // until the table has another size. 0: none yet.
    uint32_t no_growth_at_buckets = 0;
  };

  // Start is where a key that is not in its table begins: fresh, or rebuilt from the eviction summary
  // (`restricted`). For the sliding log, `ring` is the table's zero ring and `summarized` the summary form.
  struct Start {
    KeyState state;
    SlidingLogRing ring;
    KeyState summarized;
    bool restricted = false;
  };
  // With `counted` (a charging call), a start from the summary counts in summary_starts.
  Start start_of(RuleTable& rt, uint64_t hash, int64_t now_ms, bool counted);
  // choose_slot picks a slot for a new key of `rt` (changing nothing); place_key puts the key there,
  // folding a still-restricting evicted key into the summary first, and gives it its start.
  // With no pinned slots, choose_slot first grows the table when the slot it would choose holds a
  // still-restricting key and growth is allowed (set_table_growth); with pinned slots it never grows
  // (growth renumbers every slot: place_new_keys grows before it pins anything).
  uint32_t choose_slot(RuleTable& rt, uint64_t hash, int64_t now_ms, const uint32_t* pinned, uint32_t pinned_count);
  uint32_t choose_without_growth(RuleTable& rt, uint64_t hash, int64_t now_ms, const uint32_t* pinned, uint32_t pinned_count) const;
  // make_room moves a key of `hash`'s full buckets to its other bucket (KeyTable::make_room), never a
  // pinned one; the freed slot, or KeyTable::kMissing.
  uint32_t make_room(RuleTable& rt, uint64_t hash, int64_t now_ms, const uint32_t* pinned, uint32_t pinned_count);
  // would_fold says whether placing a key in `slot` would evict a key whose state still restricts it.
  bool would_fold(RuleTable& rt, uint32_t slot, int64_t now_ms);
  // grow enlarges rt's table (and its summary's cells) if growth allows: doubling, or the largest step
  // of at least a quarter that the budget still fits; false when it did not.
  bool grow(RuleTable& rt);
  void place_key(RuleTable& rt, uint32_t slot, uint64_t hash, const Start& start, int64_t now_ms);
  // lend_from_log is lend() for a sliding log (lease.cpp).
  Status lend_from_log(RuleTable& rt, uint32_t slot, uint64_t hash, int64_t wanted, int64_t lease_ms, int64_t now_ms,
                       Lease* out);
  // count_denied charges a denied request to a rule that counts denied requests too.
  static void count_denied(RuleTable& rt, uint32_t slot, int64_t now_ms, int64_t cost);

  // place_new_keys gives every key of `checks` that has no slot yet (group leaders only; with
  // counting_rules_only, only those of rules that count denied requests, and of blocking rules whose
  // decision in `per_check` blocks the key) a slot and its start, choosing all slots before changing
  // anything: on kOutOfMemory nothing has changed.
  Status place_new_keys(const Check* checks, uint32_t count, const uint64_t* hashes, uint32_t* slots,
                        const int32_t* group_leader, const Start* starts, int64_t now_ms, bool counting_rules_only,
                        const Decision* per_check);

  Status run(const Check* checks, uint32_t count, int64_t now_ms, bool charge, Decision* per_check,
             Outcome* outcome);
  Status run_one(const Check& check, int64_t now_ms, bool charge, Decision* per_check, Outcome* outcome);
  // The concurrency rule's state bytes (limiter_concurrency.cpp).
  Status export_concurrency(RuleTable& rt, uint32_t slot, uint8_t* out, uint32_t out_capacity, uint32_t* written);
  Status import_concurrency(RuleTable& rt, uint64_t hash, const uint8_t* bytes, uint32_t length);
  Status validate_key(uint32_t rule_id, uint32_t key_length, const uint8_t* key) const;
  uint64_t hash_of(const Check& c) const { return c.has_hash ? c.hash : key_hash(c.key, c.key_length); }

  SipHashKey seed_;
  RuleTable rules_[kMaxRules];
  uint32_t rule_count_ = 0;
  uint32_t max_growth_ = kDefaultMaxGrowth;
  uint64_t growth_budget_bytes_ = kDefaultGrowthBudgetBytes;
  uint64_t grown_bytes_ = 0;
};

}  // namespace sluice
