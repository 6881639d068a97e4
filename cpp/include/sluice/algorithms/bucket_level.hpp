#pragma once
#include <cstdint>

#include "sluice/arithmetic.hpp"
#include "sluice/decision.hpp"
#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"

// The arithmetic of a level that drains at a constant rate: the token bucket counts the tokens it is
// missing, the leaky bucket its level, and they are the same number. Levels are counted in units of
// 1/rate_ms of a token, so draining rate_tokens units per millisecond is exact.
// State: a = time of the last charge (ms), b = level at that time.
namespace sluice::bucket_level {

struct View {
  int64_t time;   // the caller's now, or the last charge's if time ran backwards
  int64_t level;  // the level at `time`
};

inline View view(const Rule& rule, const KeyState& state, int64_t now) {
  if (now <= state.a) return {state.a, state.b};  // no drain without time passing forwards
  const int64_t elapsed = now - state.a;
  // Cap before multiplying: once the level is drained, more time changes nothing.
  const int64_t drain_ms = detail::ceil_div(state.b, rule.rate_tokens);
  const int64_t drained = detail::min64(elapsed, drain_ms) * rule.rate_tokens;
  return {now, detail::max64(0, state.b - drained)};
}

// The decision of a request of `cost` at `now` on the key seen as `v`.
inline Decision decide_in(const Rule& rule, const View& v, int64_t now, int64_t cost) {
  const int64_t capacity = rule.capacity * rule.rate_ms;
  Decision d;
  d.limit = rule.capacity;
  if (cost > rule.capacity) {
    d.allowed = false;
    d.remaining = detail::floor_div(capacity - v.level, rule.rate_ms);
    d.reset_ms = v.time + detail::ceil_div(v.level, rule.rate_tokens) - now;
    d.retry_after_ms = kNever;
    return d;
  }
  const int64_t needed = v.level + cost * rule.rate_ms;
  d.allowed = needed <= capacity;
  const int64_t level_after = d.allowed ? needed : v.level;
  d.remaining = detail::floor_div(capacity - level_after, rule.rate_ms);
  d.reset_ms = v.time + detail::ceil_div(level_after, rule.rate_tokens) - now;
  d.retry_after_ms =
      d.allowed ? 0 : v.time + detail::ceil_div(needed - capacity, rule.rate_tokens) - now;
  return d;
}

inline void charge_in(const Rule& rule, KeyState& state, const View& v, int64_t cost) {
  state.a = v.time;
  state.b = v.level + cost * rule.rate_ms;
}

inline Decision decide(const Rule& rule, const KeyState& state, int64_t now, int64_t cost) {
  return decide_in(rule, view(rule, state, now), now, cost);
}

inline void charge(const Rule& rule, KeyState& state, int64_t now, int64_t cost) {
  charge_in(rule, state, view(rule, state, now), cost);
}

// admit is decide, then charge when admitted and `charge` is set, draining the level once (the single
// check's path).
inline Decision admit(const Rule& rule, KeyState& state, int64_t now, int64_t cost, bool charge) {
  const View v = view(rule, state, now);
  const Decision d = decide_in(rule, v, now, cost);
  if (d.allowed && charge) charge_in(rule, state, v, cost);
  return d;
}

inline bool valid_state(const Rule& rule, const KeyState& state) {
  return state.a >= 0 && state.a <= kMaxTimeMs && state.b >= 0 && state.b <= rule.capacity * rule.rate_ms;
}

inline double usage(const Rule& rule, const KeyState& state, int64_t now) {
  return static_cast<double>(view(rule, state, now).level) /
         static_cast<double>(rule.capacity * rule.rate_ms);
}

}  // namespace sluice::bucket_level
