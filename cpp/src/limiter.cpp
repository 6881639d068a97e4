#include "sluice/limiter.hpp"

#include <cstring>
#include <new>

#include "algorithm_dispatch.hpp"
#include "sluice/arithmetic.hpp"
#include "sluice/block.hpp"
#include "sluice/hot_path.hpp"
#include "sluice/lease.hpp"

namespace sluice {
namespace {

constexpr uint8_t kStateFormat = 1;
constexpr int64_t kLentTimeFlag = int64_t{1} << 62;

// A fingerprint of the parameters a state's numbers depend on, so state is never imported into a
// rule that would read it differently (say, a bucket whose rate changed).
uint32_t rule_signature(const Rule& rule) {
  // A rule that counts denied requests keeps counts a plain one would refuse: another signature (and
  // the same one as before for every plain rule).
  // A blocking rule's states may be blocked forms (block.hpp), which a rule without blocks would refuse,
  // and its block_ms is part of what they mean: it goes into the kind (0 for every other rule).
  const int64_t kind = static_cast<int64_t>(rule.algorithm) | (rule.count_denied ? 0x100 : 0) | (rule.block_ms << 16);
  const int64_t words[4] = {kind, rule.limit, rule.window_ms, rule.capacity};
  return static_cast<uint32_t>(
      siphash13(SipHashKey{}, reinterpret_cast<const uint8_t*>(words), sizeof(words)));
}

void put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put64(uint8_t* p, int64_t v) { std::memcpy(p, &v, 8); }
uint32_t get32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
int64_t get64(const uint8_t* p) { int64_t v; std::memcpy(&v, p, 8); return v; }

// The eviction summary's form of a state (eviction_summary.hpp): the state itself, except for the rules
// with rings: the sliding log's live entries, and the concurrency rule's live units, as (newest time,
// count), read as all at that time.
KeyState summary_form(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now) {
  if (rule.algorithm == Algorithm::kSlidingLog) return sliding_log::summarize(rule, state, ring, now);
  if (rule.algorithm == Algorithm::kConcurrency) {
    const uint32_t count = concurrency::count(state);
    const uint32_t first = concurrency::live_from(rule, state, ring);
    if (first >= count) return KeyState{};
    return KeyState{concurrency::entry_time(state, ring, count - 1), static_cast<int64_t>(count - first)};
  }
  return state;
}

// More is worse: a retry of kNever outranks any finite one.
bool longer_retry(int64_t a, int64_t b) {
  if (a == kNever) return b != kNever;
  if (b == kNever) return false;
  return a > b;
}

}  // namespace

Status Limiter::add_rule(const RuleConfig& config, uint32_t key_capacity, uint32_t* rule_id,
                         const char** field) {
  if (rule_id == nullptr) return Status::kInvalidArgument;
  if (rule_count_ == kMaxRules) return Status::kOutOfMemory;
  Rule rule;
  const Status made = make_rule(config, &rule, field);
  if (made != Status::kOk) return made;
  if (key_capacity == 0) {
    if (field != nullptr) *field = "key_capacity";
    return Status::kInvalidRule;
  }
  RuleTable& slot = rules_[rule_count_];
  const Status allocated = slot.table.init(key_capacity, dispatch::ring_words(rule));
  if (allocated != Status::kOk) return allocated;
  const Status summarized = slot.summary.init(key_capacity, rule.block_ms != 0);
  if (summarized != Status::kOk) {
    slot.table.~KeyTable();
    new (&slot.table) KeyTable();
    return summarized;
  }
  slot.rule = rule;
  slot.signature = rule_signature(rule);
  slot.first_slot_count = slot.table.slot_count();
  *rule_id = rule_count_++;
  return Status::kOk;
}

Status Limiter::validate_key(uint32_t rule_id, uint32_t key_length, const uint8_t* key) const {
  if (rule_id >= rule_count_) return Status::kUnknownRule;
  if (key_length > kMaxKeyBytes) return Status::kKeyTooLong;
  if (key == nullptr && key_length != 0) return Status::kInvalidArgument;
  return Status::kOk;
}

Status Limiter::check(const Check* checks, uint32_t count, int64_t now_ms, Decision* per_check,
                      Outcome* outcome) {
  return run(checks, count, now_ms, true, per_check, outcome);
}

Status Limiter::peek(const Check* checks, uint32_t count, int64_t now_ms, Decision* per_check,
                     Outcome* outcome) {
  return run(checks, count, now_ms, false, per_check, outcome);
}

Status Limiter::run(const Check* checks, uint32_t count, int64_t now_ms, bool charge, Decision* per_check,
                    Outcome* outcome) {
  if (count > kMaxChecksPerCall) return Status::kTooManyChecks;
  if (count == 0 || checks == nullptr || per_check == nullptr || outcome == nullptr) {
    return Status::kInvalidArgument;
  }
  if (now_ms < 0 || now_ms > kMaxTimeMs) return Status::kInvalidArgument;
  if (count == 1) return run_one(checks[0], now_ms, charge, per_check, outcome);

  uint64_t hashes[kMaxChecksPerCall];
  uint32_t slots[kMaxChecksPerCall];
  int64_t group_cost[kMaxChecksPerCall];  // the summed cost of all checks on the same rule and key
  int32_t group_leader[kMaxChecksPerCall];
  for (uint32_t i = 0; i < count; ++i) {
    const Check& c = checks[i];
    const Status valid = validate_key(c.rule, c.key_length, c.key);
    if (valid != Status::kOk) return valid;
    if (c.cost < 1 || c.cost > kMaxCost) return Status::kInvalidCost;
    // Several rules keyed on the same bytes (an IP, say) hash them once.
    const bool same_key_as_previous = i > 0 && c.key == checks[i - 1].key && c.key_length == checks[i - 1].key_length;
    hashes[i] = same_key_as_previous && !c.has_hash ? hashes[i - 1] : hash_of(c);
    slots[i] = rules_[c.rule].table.find(hashes[i]);
    group_leader[i] = static_cast<int32_t>(i);
    group_cost[i] = c.cost;
    for (uint32_t j = 0; j < i; ++j) {
      if (group_leader[j] == static_cast<int32_t>(j) && checks[j].rule == c.rule && hashes[j] == hashes[i]) {
        group_leader[i] = static_cast<int32_t>(j);
        group_cost[j] += c.cost;
        break;
      }
    }
  }

  // Decide every check against its current state; nothing is charged yet. A key not in its table is
  // decided on its start (fresh, or what the eviction summary says it may still owe).
  Start starts[kMaxChecksPerCall];
  bool all_allowed = true;
  for (uint32_t i = 0; i < count; ++i) {
    const int32_t leader = group_leader[i];
    if (leader != static_cast<int32_t>(i)) continue;
    RuleTable& rt = rules_[checks[i].rule];
    if (slots[i] != KeyTable::kMissing) {
      per_check[i] = dispatch::decide(rt.rule, rt.table.state(slots[i]), rt.table.ring(slots[i]), now_ms, group_cost[i]);
    } else {
      starts[i] = start_of(rt, hashes[i], now_ms, charge);
      per_check[i] = dispatch::decide(rt.rule, starts[i].state, starts[i].ring, now_ms, group_cost[i]);
    }
    all_allowed = all_allowed && per_check[i].allowed;
  }
  for (uint32_t i = 0; i < count; ++i) per_check[i] = per_check[group_leader[i]];

  Outcome result;
  if (all_allowed) {
    for (uint32_t i = 0; i < count; ++i) {
      if (result.deciding_check < 0 || per_check[i].remaining < result.decision.remaining) {
        result.decision = per_check[i];
        result.deciding_check = static_cast<int32_t>(i);
      }
    }
    if (charge) {
      // Every new key gets its slot before anything changes, so that a call whose key finds no slot
      // changes nothing: all or nothing holds even then.
      const Status placed = place_new_keys(checks, count, hashes, slots, group_leader, starts, now_ms, false, per_check);
      if (placed != Status::kOk) return placed;
      for (uint32_t i = 0; i < count; ++i) {
        if (group_leader[i] != static_cast<int32_t>(i)) continue;
        RuleTable& rt = rules_[checks[i].rule];
        dispatch::charge(rt.rule, rt.table.state(slots[i]), rt.table.ring(slots[i]), now_ms, group_cost[i]);
      }
    }
  } else {
    for (uint32_t i = 0; i < count; ++i) {
      if (!per_check[i].allowed &&
          (result.deciding_check < 0 || longer_retry(per_check[i].retry_after_ms, result.decision.retry_after_ms))) {
        result.decision = per_check[i];
        result.deciding_check = static_cast<int32_t>(i);
      }
    }
    // Checks that would have admitted report their key as it stands, since nothing was charged.
    for (uint32_t i = 0; i < count; ++i) {
      if (!per_check[i].allowed) continue;
      RuleTable& rt = rules_[checks[i].rule];
      const Start& start = starts[group_leader[i]];
      const KeyState state = slots[i] == KeyTable::kMissing ? start.state : rt.table.state(slots[i]);
      const SlidingLogRing ring = slots[i] == KeyTable::kMissing ? start.ring : rt.table.ring(slots[i]);
      per_check[i] = dispatch::decide(rt.rule, state, ring, now_ms, 0);
    }
    // Rules that count denied requests count this one all the same (every one of their checks here),
    // and a blocking rule that denied it blocks the key (block.hpp).
    if (charge) {
      const Status placed = place_new_keys(checks, count, hashes, slots, group_leader, starts, now_ms, true, per_check);
      if (placed != Status::kOk) return placed;
      for (uint32_t i = 0; i < count; ++i) {
        if (group_leader[i] != static_cast<int32_t>(i)) continue;
        RuleTable& rt = rules_[checks[i].rule];
        if (rt.rule.count_denied) count_denied(rt, slots[i], now_ms, group_cost[i]);
        if (block::starts_block(rt.rule, per_check[i])) dispatch::block_key(rt.table.state(slots[i]), now_ms, per_check[i]);
      }
    }
  }
  *outcome = result;
  return Status::kOk;
}

// run_one is run for a single check, the call almost every request makes: the same steps and the
// same results without the grouping and ranking that only several checks need (the bench showed
// them costing more than the decision itself).
Status Limiter::run_one(const Check& c, int64_t now_ms, bool charge, Decision* per_check, Outcome* outcome) {
  const Status valid = validate_key(c.rule, c.key_length, c.key);
  if (valid != Status::kOk) return valid;
  Decision decision;
  const Status decided = check_one(c.rule, hash_of(c), c.cost, now_ms, charge, &decision);
  if (decided != Status::kOk) return decided;
  per_check[0] = decision;
  outcome->decision = decision;
  outcome->deciding_check = 0;
  return Status::kOk;
}

SLUICE_HOT_INLINE Status Limiter::check_one(uint32_t rule_id, uint64_t h, int64_t cost, int64_t now_ms, bool charge, Decision* out) {
  if (rule_id >= rule_count_) return Status::kUnknownRule;
  if (cost < 1 || cost > kMaxCost) return Status::kInvalidCost;
  if (now_ms < 0 || now_ms > kMaxTimeMs) return Status::kInvalidArgument;
  RuleTable& rt = rules_[rule_id];
  const bool same_as_last = rt.last_hash == h && rt.table.holds(rt.last_slot, h);
  uint32_t slot = same_as_last ? rt.last_slot : rt.table.find(h);
  if (slot != KeyTable::kMissing) {
    *out = dispatch::decide_and_charge(rt.rule, rt.table.state(slot), rt.table.ring(slot), now_ms, cost, charge);
    if (!out->allowed && charge && rt.rule.count_denied) count_denied(rt, slot, now_ms, cost);
  } else {
    // (decide_and_charge blocked the key above if this denial blocks it.)
    const Start start = start_of(rt, h, now_ms, charge);
    *out = dispatch::decide(rt.rule, start.state, start.ring, now_ms, cost);
    // Only admitted requests take a slot (and those a rule counts even when denied, or that block the
    // key), so denied traffic never evicts anyone but keys it blocks.
    if (charge && (out->allowed || rt.rule.count_denied || block::starts_block(rt.rule, *out))) {
      slot = choose_slot(rt, h, now_ms, nullptr, 0);
      if (slot == KeyTable::kMissing) return Status::kOutOfMemory;
      place_key(rt, slot, h, start, now_ms);
      if (out->allowed) {
        dispatch::charge(rt.rule, rt.table.state(slot), rt.table.ring(slot), now_ms, cost);
      } else if (rt.rule.count_denied) {
        count_denied(rt, slot, now_ms, cost);
      } else {
        dispatch::block_key(rt.table.state(slot), now_ms, *out);
      }
    }
  }
  if (slot != KeyTable::kMissing) {
    rt.last_hash = h;
    rt.last_slot = slot;
  }
  return Status::kOk;
}

Status Limiter::reset(uint32_t rule_id, const uint8_t* key, uint32_t key_length) {
  const Status valid = validate_key(rule_id, key_length, key);
  if (valid != Status::kOk) return valid;
  RuleTable& rt = rules_[rule_id];
  const uint64_t h = key_hash(key, key_length);
  const uint32_t slot = rt.table.find(h);
  if (slot != KeyTable::kMissing) rt.table.erase(slot);
  // A key the eviction summary would start with some use is given a slot of its own at full quota:
  // reset means full quota, whatever evicted keys owed. Reset takes no time: judged at time 0, every
  // state that was ever charged counts as still restricting, so a key evicted here is folded, never lost.
  if (!rt.summary.empty()) {
    KeyState summarized;
    if (rt.summary.start_for(rt.rule, h, &summarized) || rt.summary.blocked_until(h) > 0) {
      const uint32_t fresh = choose_slot(rt, h, 0, nullptr, 0);
      if (fresh != KeyTable::kMissing) place_key(rt, fresh, h, Start{}, 0);
    }
  }
  return Status::kOk;
}

Status Limiter::exported_state_bytes(uint32_t rule_id, uint32_t* bytes) const {
  if (rule_id >= rule_count_) return Status::kUnknownRule;
  const Rule& rule = rules_[rule_id].rule;
  *bytes = static_cast<uint32_t>(exported_state_bytes(rule.algorithm, rule.limit));  // the table's init bounds it
  return Status::kOk;
}

// State bytes, little-endian: u8 format (1), u8 algorithm, u16 zero, u32 rule signature, then
// i64 a, i64 b: the KeyState words, except for the sliding log, where a = 0, b = n and n i64
// entry times (ms, oldest first) follow, so the ring's internal layout never leaves the core. An entry
// a lease lent has kLentTimeFlag added (a core without leases for the log refuses such a state,
// rather than read a lease's end as a direct entry, which would move the key's clock ahead).
Status Limiter::export_state(uint32_t rule_id, const uint8_t* key, uint32_t key_length, uint8_t* out,
                             uint32_t out_capacity, uint32_t* written) {
  const Status valid = validate_key(rule_id, key_length, key);
  if (valid != Status::kOk) return valid;
  if (written == nullptr) return Status::kInvalidArgument;
  RuleTable& rt = rules_[rule_id];
  const uint32_t slot = rt.table.find(key_hash(key, key_length));
  if (slot == KeyTable::kMissing) return Status::kNotFound;
  if (rt.rule.algorithm == Algorithm::kConcurrency) return export_concurrency(rt, slot, out, out_capacity, written);
  const KeyState& state = rt.table.state(slot);
  // A blocked log holds no entries: its blocked form goes out as the words themselves (block.hpp).
  const bool is_log = rt.rule.algorithm == Algorithm::kSlidingLog && !block::is_blocked_form(state);
  const uint32_t entries = is_log ? sliding_log::count(state) : 0;
  *written = kStateHeaderBytes + 8 * entries;
  if (out == nullptr || out_capacity < *written) return Status::kBufferTooSmall;
  out[0] = kStateFormat;
  out[1] = static_cast<uint8_t>(rt.rule.algorithm);
  out[2] = 0;
  out[3] = 0;
  put32(out + 4, rt.signature);
  put64(out + 8, is_log ? 0 : state.a);
  put64(out + 16, is_log ? static_cast<int64_t>(entries) : state.b);
  for (uint32_t i = 0; i < entries; ++i) {
    const SlidingLogRing ring = rt.table.ring(slot);
    const int64_t flag = sliding_log::entry_lent(rt.rule, state, ring, i) ? kLentTimeFlag : 0;
    put64(out + kStateHeaderBytes + 8 * i, sliding_log::entry_time(rt.rule, state, ring, i) | flag);
  }
  return Status::kOk;
}

Status Limiter::import_state(uint32_t rule_id, const uint8_t* key, uint32_t key_length, const uint8_t* bytes,
                             uint32_t length) {
  const Status valid = validate_key(rule_id, key_length, key);
  if (valid != Status::kOk) return valid;
  if (bytes == nullptr || length < kStateHeaderBytes) return Status::kInvalidState;
  RuleTable& rt = rules_[rule_id];
  if (bytes[0] != kStateFormat || bytes[1] != static_cast<uint8_t>(rt.rule.algorithm) || bytes[2] != 0 ||
      bytes[3] != 0 || get32(bytes + 4) != rt.signature) {
    return Status::kInvalidState;
  }
  if (rt.rule.algorithm == Algorithm::kConcurrency) return import_concurrency(rt, key_hash(key, key_length), bytes, length);
  KeyState state{get64(bytes + 8), get64(bytes + 16)};
  const bool blocked = rt.rule.block_ms != 0 && block::is_blocked_form(state);
  const bool is_log = rt.rule.algorithm == Algorithm::kSlidingLog && !blocked;
  const int64_t entries = is_log ? state.b : 0;
  if (is_log && (state.a != 0 || entries < 0 || entries > rt.rule.limit)) return Status::kInvalidState;
  if (length != kStateHeaderBytes + 8 * static_cast<uint64_t>(entries)) return Status::kInvalidState;
  if (!is_log && !dispatch::valid_state(rt.rule, state)) return Status::kInvalidState;
  // The entry times without the lent flag (which only lent entries may carry).
  const auto time_of = [bytes](int64_t i) { return get64(bytes + kStateHeaderBytes + 8 * i) & ~kLentTimeFlag; };
  const auto lent = [bytes](int64_t i) { return (get64(bytes + kStateHeaderBytes + 8 * i) & kLentTimeFlag) != 0; };
  int64_t previous = 0;
  int64_t direct_span_start = -1;
  for (int64_t i = 0; i < entries; ++i) {
    const int64_t word = get64(bytes + kStateHeaderBytes + 8 * i);
    const int64_t t = time_of(i);
    if (word < 0 || (word & ~kLentTimeFlag) != t) return Status::kInvalidState;
    // Oldest first, all valid times (a lease's end at most a lease past one), all direct entries within
    // one window of the first direct one, and every entry within the span the ring's offsets hold.
    const int64_t latest = lent(i) ? kMaxTimeMs + rt.rule.window_ms / kLogLeaseShareOfWindow : kMaxTimeMs;
    if (t < previous || t > latest || t - time_of(0) >= sliding_log::kMaxSpanMs) return Status::kInvalidState;
    if (!lent(i)) {
      if (direct_span_start < 0) direct_span_start = t;
      if (t - direct_span_start >= rt.rule.window_ms) return Status::kInvalidState;
    }
    previous = t;
  }
  // Lent entries only beside a direct one, the key's clock (sliding_log::lend).
  if (entries > 0 && direct_span_start < 0) return Status::kInvalidState;

  const uint64_t h = key_hash(key, key_length);
  uint32_t slot = rt.table.find(h);
  if (slot == KeyTable::kMissing) {
    // Imported state replaces whatever the key had, the summary's start included.
    const int64_t now_guess = is_log && entries > 0 ? previous : 0;
    slot = choose_slot(rt, h, now_guess, nullptr, 0);
    if (slot == KeyTable::kMissing) return Status::kOutOfMemory;
    place_key(rt, slot, h, Start{}, now_guess);
  }
  KeyState& target = rt.table.state(slot);
  if (!is_log) {
    target = state;
    return Status::kOk;
  }
  // Rebuild the ring from absolute times, with the oldest entry as the base.
  const SlidingLogRing ring = rt.table.ring(slot);
  const int64_t base = entries > 0 ? time_of(0) : 0;
  for (int64_t i = 0; i < entries; ++i) {
    ring.entries[i] = static_cast<uint32_t>(time_of(i) - base) | (lent(i) ? sliding_log::kLentMark : 0);
  }
  target.a = base;
  target.b = static_cast<int64_t>(static_cast<uint64_t>(entries) << 32);
  return Status::kOk;
}

Status Limiter::stats(uint32_t rule_id, TableStats* out) const {
  if (rule_id >= rule_count_) return Status::kUnknownRule;
  if (out == nullptr) return Status::kInvalidArgument;
  const KeyTable& table = rules_[rule_id].table;
  const EvictionSummary& summary = rules_[rule_id].summary;
  out->keys = table.size();
  out->slots = table.slot_count();
  out->memory_bytes = table.memory_bytes() + summary.memory_bytes();
  out->evictions = table.evictions();
  out->evictions_restricting = summary.folds();
  out->summary_starts = rules_[rule_id].summary_starts;
  out->summary_bytes = summary.memory_bytes();
  return Status::kOk;
}

Limiter::Start Limiter::start_of(RuleTable& rt, uint64_t hash, int64_t now_ms, bool counted) {
  Start start;
  if (rt.summary.empty()) return start;  // nothing was ever folded: every new key is fresh
  KeyState summarized;
  const bool owes = rt.summary.start_for(rt.rule, hash, &summarized);
  const int64_t blocked_until = rt.summary.blocked_until(hash);
  if (!owes && blocked_until <= now_ms) return start;
  if (rt.rule.algorithm == Algorithm::kSlidingLog) {
    start.state = owes ? sliding_log::from_summary(summarized) : KeyState{};
    start.ring = rt.table.zero_ring();
  } else if (rt.rule.algorithm == Algorithm::kConcurrency) {
    // `b` units held by the anonymous holder (no holder can release them: they only expire), all
    // acquired at `a`, read with a ring of zero entries ({holder 0, offset 0}).
    start.state = KeyState{summarized.a, summarized.b};
    start.ring = rt.table.zero_ring();
  } else {
    start.state = owes ? summarized : KeyState{};
  }
  start.summarized = owes ? summarized : KeyState{};
  if (blocked_until > now_ms) {
    // The cells hold a block: the key may be one of the blocked keys folded there, or one whose state
    // the cells hold. Blocked until the later of the block's end and the time the cells' state is back
    // to its full quota, then fresh, is at least as restrictive as either (block.hpp).
    const Decision as_is = dispatch::algorithm_decide(rt.rule, start.state, start.ring, now_ms, 0);
    start.state = block::blocked_until(detail::max64(blocked_until, now_ms + as_is.reset_ms));
    start.summarized = KeyState{};  // a blocked form has no ring entries to zero
  }
  start.restricted = dispatch::usage(rt.rule, start.state, start.ring, now_ms) > 0;
  if (!start.restricted) return Start{};
  if (counted) ++rt.summary_starts;
  return start;
}

uint32_t Limiter::choose_without_growth(RuleTable& rt, uint64_t hash, int64_t now_ms, const uint32_t* pinned,
                                       uint32_t pinned_count) const {
  const auto usage = [&rt, now_ms](uint32_t slot) {
    return dispatch::usage(rt.rule, rt.table.state(slot), rt.table.ring(slot), now_ms);
  };
  return rt.table.choose(hash, usage, pinned, pinned_count);
}

bool Limiter::would_fold(RuleTable& rt, uint32_t slot, int64_t now_ms) {
  return slot != KeyTable::kMissing && rt.table.occupied(slot) &&
         dispatch::usage(rt.rule, rt.table.state(slot), rt.table.ring(slot), now_ms) > 0;
}

uint32_t Limiter::make_room(RuleTable& rt, uint64_t hash, int64_t now_ms, const uint32_t* pinned,
                            uint32_t pinned_count) {
  const auto usage = [&rt, now_ms](uint32_t slot) {
    return dispatch::usage(rt.rule, rt.table.state(slot), rt.table.ring(slot), now_ms);
  };
  const uint32_t freed = rt.table.make_room(hash, usage, pinned, pinned_count);
  // A key moved: the remembered slot may now be empty or another key's (holds() would catch it, but
  // a stale hint costs a probe for nothing).
  if (freed != KeyTable::kMissing) rt.last_hash = 0;
  return freed;
}

uint32_t Limiter::choose_slot(RuleTable& rt, uint64_t hash, int64_t now_ms, const uint32_t* pinned,
                              uint32_t pinned_count) {
  uint32_t slot = choose_without_growth(rt, hash, now_ms, pinned, pinned_count);
  if (!would_fold(rt, slot, now_ms)) return slot;
  const uint32_t freed = make_room(rt, hash, now_ms, pinned, pinned_count);
  if (freed != KeyTable::kMissing) return freed;
  if (pinned_count == 0 && grow(rt)) slot = choose_without_growth(rt, hash, now_ms, nullptr, 0);
  return slot;
}

bool Limiter::grow(RuleTable& rt) {
  // Growth answers a flood, not bad luck: below the keys it was added for, a table whose chosen bucket
  // pair is full folds the key as before. (Two-choice buckets of 8 fill unevenly from ~70 % of their
  // slots on; growing there would double a table that holds exactly what it was declared for.)
  if (uint64_t{rt.table.size()} * 10 < uint64_t{rt.first_slot_count} * 9) return false;
  const uint64_t buckets_now = rt.table.bucket_count();
  if (rt.no_growth_at_buckets == buckets_now) return false;
  const uint64_t most_buckets =
      detail::min64(static_cast<int64_t>(buckets_now * 2), static_cast<int64_t>(uint64_t{rt.first_slot_count} * max_growth_ / KeyTable::kWays));
  // Double while the budget allows; past that, the largest step that still fits it, down to a quarter
  // more (a smaller step would move every key for few new slots). A table whose keys take many bytes
  // each (the sliding log's ring: 4 bytes per unit of its limit) so gets the budget's last bytes
  // instead of stopping one doubling short of them.
  const uint64_t step = detail::max64(1, static_cast<int64_t>(buckets_now / 16));
  for (uint64_t buckets = most_buckets; buckets * 4 >= buckets_now * 5; buckets -= step) {
    const uint64_t table_more = rt.table.grown_memory_bytes(static_cast<uint32_t>(buckets)) - rt.table.memory_bytes();
    const uint32_t grown_capacity = static_cast<uint32_t>(buckets * KeyTable::kWays * 9 / 10);
    const uint64_t summary_more = rt.summary.growth_bytes(grown_capacity);
    if (grown_bytes_ + table_more + summary_more > growth_budget_bytes_) continue;
    // The summary first: it may fail alone and leave everything as it was; the table's growth is all
    // or nothing too, and a summary with more cells than its table needs is still exact. A step that
    // finds no memory (the instance's ceiling: the memory of the tables it replaced stays with the
    // instance) tries a smaller one.
    if (rt.summary.grow(grown_capacity) != Status::kOk) continue;
    grown_bytes_ += summary_more;
    if (rt.table.grow(static_cast<uint32_t>(buckets)) != Status::kOk) continue;
    grown_bytes_ += table_more;
    // Every slot moved: the remembered one no longer means anything.
    rt.last_hash = 0;
    rt.last_slot = 0;
    return true;
  }
  // No step fits: not at this size again, or every new key of a full table would retry (and a step
  // that failed for memory would allocate and move every key again, each time).
  rt.no_growth_at_buckets = static_cast<uint32_t>(buckets_now);
  return false;
}

void Limiter::place_key(RuleTable& rt, uint32_t slot, uint64_t hash, const Start& start, int64_t now_ms) {
  if (rt.table.occupied(slot)) {
    const KeyState& evicted = rt.table.state(slot);
    const SlidingLogRing ring = rt.table.ring(slot);
    if (dispatch::usage(rt.rule, evicted, ring, now_ms) > 0 && block::is_blocked_form(evicted)) {
      rt.summary.fold_block(rt.table.hash_at(slot), block::until(evicted));
    } else if (dispatch::usage(rt.rule, evicted, ring, now_ms) > 0) {
      const KeyState summarized = summary_form(rt.rule, evicted, ring, now_ms);
      rt.summary.fold(rt.rule, rt.table.hash_at(slot), summarized);
    }
  }
  rt.table.place(slot, hash);
  if (!start.restricted) return;
  rt.table.state(slot) = start.state;
  if (rt.rule.algorithm == Algorithm::kSlidingLog) sliding_log::zero_entries(rt.table.ring(slot), start.summarized);
  if (rt.rule.algorithm == Algorithm::kConcurrency) {
    const SlidingLogRing ring = rt.table.ring(slot);
    for (int64_t i = 0; i < 2 * start.summarized.b; ++i) ring.entries[i] = 0;
  }
}

void Limiter::count_denied(RuleTable& rt, uint32_t slot, int64_t now_ms, int64_t cost) {
  sliding_counter::count_denied(rt.rule, rt.table.state(slot), now_ms, cost);
}

Status Limiter::place_new_keys(const Check* checks, uint32_t count, const uint64_t* hashes, uint32_t* slots,
                               const int32_t* group_leader, const Start* starts, int64_t now_ms,
                               bool counting_rules_only, const Decision* per_check) {
  // Tables that a new key would make fold a still-restricting key grow first, before any slot is pinned
  // (growth renumbers a table's slots: the slots found for this call's keys of it are found again).
  for (uint32_t i = 0; i < count; ++i) {
    if (group_leader[i] != static_cast<int32_t>(i) || slots[i] != KeyTable::kMissing) continue;
    RuleTable& rt = rules_[checks[i].rule];
    if (counting_rules_only && !rt.rule.count_denied && !block::starts_block(rt.rule, per_check[i])) continue;
    if (!would_fold(rt, choose_without_growth(rt, hashes[i], now_ms, nullptr, 0), now_ms)) continue;
    if (make_room(rt, hashes[i], now_ms, nullptr, 0) == KeyTable::kMissing && !grow(rt)) continue;
    for (uint32_t j = 0; j < count; ++j) {
      if (checks[j].rule == checks[i].rule && slots[j] != KeyTable::kMissing) slots[j] = rt.table.find(hashes[j]);
    }
  }
  // Then choose every slot, changing nothing; a check pins the slots of its own rule's table that this
  // call already holds or chose (slot numbers of other rules' tables are other slots).
  uint32_t chosen[kMaxChecksPerCall];
  uint32_t chosen_count = 0;
  uint32_t chosen_check[kMaxChecksPerCall];
  for (uint32_t i = 0; i < count; ++i) {
    if (group_leader[i] != static_cast<int32_t>(i) || slots[i] != KeyTable::kMissing) continue;
    RuleTable& rt = rules_[checks[i].rule];
    if (counting_rules_only && !rt.rule.count_denied && !block::starts_block(rt.rule, per_check[i])) continue;
    uint32_t pinned[kMaxChecksPerCall];
    uint32_t pinned_count = 0;
    for (uint32_t j = 0; j < count; ++j) {
      if (j != i && checks[j].rule == checks[i].rule && slots[j] != KeyTable::kMissing) pinned[pinned_count++] = slots[j];
    }
    for (uint32_t k = 0; k < chosen_count; ++k) {
      if (checks[chosen_check[k]].rule == checks[i].rule) pinned[pinned_count++] = chosen[k];
    }
    const uint32_t slot = choose_slot(rt, hashes[i], now_ms, pinned, pinned_count);
    if (slot == KeyTable::kMissing) return Status::kOutOfMemory;  // nothing changed yet
    chosen[chosen_count] = slot;
    chosen_check[chosen_count++] = i;
  }
  // Then place them all.
  for (uint32_t k = 0; k < chosen_count; ++k) {
    const uint32_t i = chosen_check[k];
    place_key(rules_[checks[i].rule], chosen[k], hashes[i], starts[i], now_ms);
    slots[i] = chosen[k];
  }
  return Status::kOk;
}

}  // namespace sluice
