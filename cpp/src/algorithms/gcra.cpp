#include "sluice/algorithms/gcra.hpp"

#include "sluice/arithmetic.hpp"
#include "sluice/hot_path.hpp"

namespace sluice::gcra {
namespace {

// Times in units of 1/rate_tokens ms, where the emission interval (window_ms / limit ms) is exactly
// rate_ms units and the delay-variation tolerance is capacity * rate_ms units.
int64_t scaled(const Rule& rule, int64_t ms) { return ms * rule.rate_tokens; }

// The first millisecond at which `scaled_time` has been reached.
int64_t to_ms(const Rule& rule, int64_t scaled_time) {
  return detail::ceil_div(scaled_time, rule.rate_tokens);
}

}  // namespace

Decision decide(const Rule& rule, const KeyState& state, int64_t now, int64_t cost) {
  const int64_t now_scaled = scaled(rule, now);
  const int64_t tolerance = rule.capacity * rule.rate_ms;
  const int64_t tat = detail::max64(state.a, now_scaled);
  Decision d;
  d.limit = rule.capacity;
  if (cost > rule.capacity) {
    d.allowed = false;
    d.remaining = detail::floor_div(tolerance - (tat - now_scaled), rule.rate_ms);
    d.reset_ms = to_ms(rule, tat) - now;
    d.retry_after_ms = kNever;
    return d;
  }
  const int64_t new_tat = tat + cost * rule.rate_ms;
  d.allowed = new_tat - now_scaled <= tolerance;
  const int64_t tat_after = d.allowed ? new_tat : tat;
  d.remaining = detail::floor_div(tolerance - (tat_after - now_scaled), rule.rate_ms);
  d.reset_ms = to_ms(rule, tat_after) - now;
  d.retry_after_ms = d.allowed ? 0 : to_ms(rule, new_tat - tolerance) - now;
  return d;
}

void charge(const Rule& rule, KeyState& state, int64_t now, int64_t cost) {
  state.a = detail::max64(state.a, scaled(rule, now)) + cost * rule.rate_ms;
}

SLUICE_HOT_INLINE Decision admit(const Rule& rule, KeyState& state, int64_t now, int64_t cost, bool charge) {
  const Decision d = decide(rule, state, now, cost);
  if (d.allowed && charge) gcra::charge(rule, state, now, cost);
  return d;
}

bool valid_state(const Rule& rule, const KeyState& state) {
  // A charge leaves TAT within the tolerance of the time it was made at.
  return state.a >= 0 && state.a <= scaled(rule, kMaxTimeMs) + rule.capacity * rule.rate_ms && state.b == 0;
}

double usage(const Rule& rule, const KeyState& state, int64_t now) {
  const int64_t backlog = detail::max64(0, state.a - scaled(rule, now));
  return static_cast<double>(backlog) / static_cast<double>(rule.capacity * rule.rate_ms);
}

}  // namespace sluice::gcra
