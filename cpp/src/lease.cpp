// Limiter::lend and Limiter::give_back: the object's side of leased quotas (sluice/lease.hpp).
#include "algorithm_dispatch.hpp"
#include "sluice/algorithms/bucket_level.hpp"
#include "sluice/arithmetic.hpp"
#include "sluice/limiter.hpp"

namespace sluice {
namespace {

// A bucket's (or GCRA's) level at `now` in units of 1/rate_ms token, and whether it can be charged at
// `now` (not when its last charge is later: time ran backwards).
struct Level {
  bool usable;
  int64_t units;
};

Level level_of(const Rule& rule, const KeyState& state, int64_t now) {
  if (rule.algorithm == Algorithm::kGcra) {
    // TAT in units of 1/rate_tokens ms is the level in units of 1/rate_ms token, plus now.
    return {true, detail::max64(0, state.a - now * rule.rate_tokens)};
  }
  if (now < state.a) return {false, 0};
  return {true, bucket_level::view(rule, state, now).level};
}

// Lends from a bucket or GCRA (lease.hpp): n units charged as if spent at now + lease_ms.
Status lend_from_bucket(const Rule& rule, KeyState& state, int64_t wanted, int64_t lease_ms, int64_t now, Lease* out) {
  const Level level = level_of(rule, state, now);
  if (!level.usable) return Status::kOk;
  const int64_t capacity = rule.capacity * rule.rate_ms;
  // What drains over the lease is held back, so the lease lasts at most a quarter of the time the
  // full bucket takes to drain: at most a quarter of the capacity held back (and the product small).
  lease_ms = detail::min64(lease_ms, capacity / rule.rate_tokens / kLendShare);
  if (lease_ms < 1) return Status::kOk;
  const int64_t held = detail::max64(level.units, lease_ms * rule.rate_tokens);
  const int64_t units = detail::min64(wanted, detail::floor_div(capacity - held, rule.rate_ms) / kLendShare);
  if (units < 1) return Status::kOk;
  const int64_t level_after = held + units * rule.rate_ms;
  if (rule.algorithm == Algorithm::kGcra) {
    state.a = now * rule.rate_tokens + level_after;
  } else {
    state.a = now;
    state.b = level_after;
  }
  out->units = units;
  out->expires_at_ms = now + lease_ms;
  return Status::kOk;
}

int64_t window_of(const Rule& rule, const KeyState& state, int64_t now) {
  return rule.algorithm == Algorithm::kFixedWindow ? fixed_window::window_of(rule, state, now)
                                                   : sliding_counter::window_of(rule, state, now);
}

// What the window after now's can still lend at its start (lease.hpp, "lent ahead").
int64_t room_ahead(const Rule& rule, const KeyState& state, int64_t now) {
  return rule.algorithm == Algorithm::kFixedWindow ? fixed_window::room_ahead(rule, state, now)
                                                   : sliding_counter::room_ahead(rule, state, now);
}

void charge_ahead(const Rule& rule, KeyState& state, int64_t now, int64_t units) {
  if (rule.algorithm == Algorithm::kFixedWindow) {
    fixed_window::charge_ahead(rule, state, now, units);
  } else {
    sliding_counter::charge_ahead(rule, state, now, units);
  }
}

}  // namespace

Status Limiter::lend(uint32_t rule_id, uint64_t hash, int64_t wanted, int64_t lease_ms, int64_t now_ms, Lease* out,
                     int64_t ahead_ms) {
  if (rule_id >= rule_count_) return Status::kUnknownRule;
  if (out == nullptr || now_ms < 0 || now_ms > kMaxTimeMs || lease_ms < 1 || lease_ms > kMaxWindowMs || ahead_ms < 0 ||
      ahead_ms > kMaxWindowMs) {
    return Status::kInvalidArgument;
  }
  if (wanted < 0 || wanted > kMaxCost) return Status::kInvalidCost;
  RuleTable& rt = rules_[rule_id];
  const Rule& rule = rt.rule;
  // A blocking rule does not lend: units decided in an isolate could not block the key (block.hpp).
  if (!can_lend(rule.algorithm) || rule.block_ms != 0) return Status::kInvalidArgument;
  uint32_t slot = rt.table.find(hash);
  if (rule.algorithm == Algorithm::kSlidingLog) return lend_from_log(rt, slot, hash, wanted, lease_ms, now_ms, out);
  // A key not in the table is what the eviction summary says it may still owe (fresh if nothing).
  const Start start = slot == KeyTable::kMissing ? start_of(rt, hash, now_ms, false) : Start{};
  const KeyState& state = slot == KeyTable::kMissing ? start.state : rt.table.state(slot);
  const Decision now_as_is = dispatch::decide(rule, state, SlidingLogRing{}, now_ms, 0);
  *out = Lease{};
  out->remaining = now_as_is.remaining;
  out->starts_at_ms = now_ms;
  const bool bucket = lends_as_bucket(rule.algorithm);
  const int64_t window = now_ms / rule.window_ms;
  if (!bucket && window_of(rule, state, now_ms) != window) return Status::kOk;
  // Near the window's end, a window rule lends from the next window (lease.hpp, "lent ahead").
  const int64_t window_end = (window + 1) * rule.window_ms;
  const bool ahead = !bucket && window_end - now_ms <= ahead_ms;
  const int64_t room = ahead ? room_ahead(rule, state, now_ms) : now_as_is.remaining;
  const int64_t units = detail::min64(wanted, room / kLendShare);
  if (ahead) out->remaining = room;
  if (units < 1) return Status::kOk;
  if (slot == KeyTable::kMissing) {
    slot = choose_slot(rt, hash, now_ms, nullptr, 0);
    if (slot == KeyTable::kMissing) return Status::kOutOfMemory;
    place_key(rt, slot, hash, start, now_ms);
  }
  if (bucket) {
    const Status status = lend_from_bucket(rule, rt.table.state(slot), wanted, lease_ms, now_ms, out);
    out->remaining = dispatch::decide(rule, rt.table.state(slot), SlidingLogRing{}, now_ms, 0).remaining;
    return status;
  }
  if (ahead) {
    // Charged to the next window, usable from its start until the lease's length or that window ends.
    charge_ahead(rule, rt.table.state(slot), now_ms, units);
    out->units = units;
    out->starts_at_ms = window_end;
    out->expires_at_ms = window_end + detail::min64(lease_ms, rule.window_ms);
    out->remaining = room - units;
    return Status::kOk;
  }
  // Charged like one admitted request of `units`: the window's count (and the counter's weighted
  // estimate) stays within the limit, since units <= remaining.
  dispatch::charge(rule, rt.table.state(slot), SlidingLogRing{}, now_ms, units);
  out->units = units;
  out->expires_at_ms = detail::min64(now_ms + lease_ms, (window + 1) * rule.window_ms);
  out->remaining = dispatch::decide(rule, rt.table.state(slot), SlidingLogRing{}, now_ms, 0).remaining;
  return Status::kOk;
}

// Lends from a sliding log (sliding_log::lend): the ring records the lent units at the lease's end.
Status Limiter::lend_from_log(RuleTable& rt, uint32_t slot, uint64_t hash, int64_t wanted, int64_t lease_ms,
                              int64_t now_ms, Lease* out) {
  const Rule& rule = rt.rule;
  *out = Lease{};
  out->starts_at_ms = now_ms;  // a log's lease is usable at once (it lends nothing ahead)
  if (slot == KeyTable::kMissing) {
    // A key not in the table is what the eviction summary says it may still owe (fresh if nothing).
    const Start start = start_of(rt, hash, now_ms, false);
    out->remaining = sliding_log::decide(rule, start.state, start.ring, now_ms, 0).remaining;
    // Fresh, it has no direct entry yet: nothing to lend (sliding_log::lend), nor a slot to take.
    if (!start.restricted || now_ms < start.summarized.a) return Status::kOk;
    if (detail::min64(wanted, (rule.limit - sliding_log::count(start.state)) / kLendShare) < 1) return Status::kOk;
    slot = choose_slot(rt, hash, now_ms, nullptr, 0);
    if (slot == KeyTable::kMissing) return Status::kOutOfMemory;
    place_key(rt, slot, hash, start, now_ms);
  }
  KeyState& state = rt.table.state(slot);
  const SlidingLogRing ring = rt.table.ring(slot);
  int64_t expires_at_ms = 0;
  out->units = sliding_log::lend(rule, state, ring, wanted, lease_ms, now_ms, &expires_at_ms);
  if (out->units > 0) out->expires_at_ms = expires_at_ms;
  out->remaining = sliding_log::decide(rule, state, ring, now_ms, 0).remaining;
  return Status::kOk;
}

Status Limiter::give_back(uint32_t rule_id, uint64_t hash, int64_t units, int64_t expires_at_ms, int64_t* returned) {
  if (rule_id >= rule_count_) return Status::kUnknownRule;
  if (returned == nullptr || expires_at_ms < 1 || expires_at_ms > kMaxTimeMs + kMaxWindowMs) return Status::kInvalidArgument;
  if (units < 0 || units > kMaxCost) return Status::kInvalidCost;
  RuleTable& rt = rules_[rule_id];
  const Rule& rule = rt.rule;
  // A blocking rule does not lend: units decided in an isolate could not block the key (block.hpp).
  if (!can_lend(rule.algorithm) || rule.block_ms != 0) return Status::kInvalidArgument;
  *returned = 0;
  // A bucket drains unused units by itself; taking them back could undercount (lease.hpp).
  if (lends_as_bucket(rule.algorithm)) return Status::kOk;
  const uint32_t slot = rt.table.find(hash);
  if (slot == KeyTable::kMissing) return Status::kOk;  // evicted or reset: nothing of the lease is counted
  if (rule.algorithm == Algorithm::kSlidingLog) {
    *returned = sliding_log::give_back(rule, rt.table.state(slot), rt.table.ring(slot), units, expires_at_ms);
    return Status::kOk;
  }
  // The window the lease was lent in: it ends no later than that window does.
  // (A lease lent ahead was lent in the window after the key's: give_back finds it there.)
  const int64_t window = (expires_at_ms - 1) / rule.window_ms;
  *returned = rule.algorithm == Algorithm::kFixedWindow
                  ? fixed_window::give_back(rule, rt.table.state(slot), window, units)
                  : sliding_counter::give_back(rule, rt.table.state(slot), window, units);
  return Status::kOk;
}

}  // namespace sluice
