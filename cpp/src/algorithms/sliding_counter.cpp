#include "sluice/algorithms/sliding_counter.hpp"

#include "sluice/arithmetic.hpp"
#include "sluice/hot_path.hpp"

namespace sluice::sliding_counter {
namespace {

struct View {
  int64_t window;    // the window the key is in
  int64_t elapsed;   // ms since that window began
  int64_t current;   // charged in it
  int64_t previous;  // charged in the window before
};

View view(const Rule& rule, const KeyState& state, int64_t now) {
  const int64_t current = state.b & 0xffffffff;
  const int64_t previous = static_cast<int64_t>(static_cast<uint64_t>(state.b) >> 32);
  const int64_t window = now / rule.window_ms;
  if (window < state.a) return {state.a, 0, current, previous};  // time ran backwards: window start
  const int64_t elapsed = now - window * rule.window_ms;
  if (window == state.a) return {window, elapsed, current, previous};
  if (window == state.a + 1) return {window, elapsed, 0, current};
  return {window, elapsed, 0, 0};
}

// The weighted count times window_ms: previous * (window_ms - elapsed) + current * window_ms.
int64_t weighted(const Rule& rule, const View& v, int64_t current) {
  return v.previous * (rule.window_ms - v.elapsed) + current * rule.window_ms;
}

// How long, from the start of the window, until previous * (window_ms - t) <= room * window_ms.
int64_t when_previous_fits(const Rule& rule, int64_t previous, int64_t room) {
  if (previous == 0) return 0;
  // t >= window_ms - room * window_ms / previous
  return detail::max64(0, rule.window_ms - (room * rule.window_ms) / previous);
}

// The decision of a request of `cost` at `now` on the key seen as `v`.
Decision decide_in(const Rule& rule, const View& v, int64_t now, int64_t cost) {
  const int64_t window_start = v.window * rule.window_ms;
  const int64_t budget = rule.limit * rule.window_ms;
  Decision d;
  d.limit = rule.limit;
  d.allowed = cost <= rule.limit && v.current + cost <= rule.limit &&
              weighted(rule, v, v.current + cost) <= budget;
  const int64_t current_after = d.allowed ? v.current + cost : v.current;
  d.remaining = detail::floor_div(budget - weighted(rule, v, current_after), rule.window_ms);
  // Back to full quota once neither window's count weighs any more.
  if (current_after > 0) {
    d.reset_ms = window_start + 2 * rule.window_ms - now;
  } else if (v.previous > 0) {
    d.reset_ms = window_start + rule.window_ms - now;
  } else {
    d.reset_ms = 0;
  }
  if (d.allowed) {
    d.retry_after_ms = 0;
  } else if (cost > rule.limit) {
    d.retry_after_ms = kNever;
  } else if (v.current + cost <= rule.limit) {
    // Later in this window, once enough of the previous window has slid out.
    const int64_t at = when_previous_fits(rule, v.previous, rule.limit - v.current - cost);
    d.retry_after_ms = window_start + at - now;
  } else {
    // In the next window, where this window's count becomes the previous one.
    const int64_t at = when_previous_fits(rule, v.current, rule.limit - cost);
    d.retry_after_ms = window_start + rule.window_ms + at - now;
  }
  if (d.retry_after_ms == 0 && !d.allowed) d.retry_after_ms = 1;
  return d;
}

void charge_in(KeyState& state, const View& v, int64_t cost) {
  state.a = v.window;
  state.b = static_cast<int64_t>((static_cast<uint64_t>(v.previous) << 32) |
                                 static_cast<uint64_t>(v.current + cost));
}

}  // namespace

Decision decide(const Rule& rule, const KeyState& state, int64_t now, int64_t cost) {
  return decide_in(rule, view(rule, state, now), now, cost);
}

void charge(const Rule& rule, KeyState& state, int64_t now, int64_t cost) { charge_in(state, view(rule, state, now), cost); }

SLUICE_HOT_INLINE Decision admit(const Rule& rule, KeyState& state, int64_t now, int64_t cost, bool charge) {
  const View v = view(rule, state, now);
  const Decision d = decide_in(rule, v, now, cost);
  if (d.allowed && charge) charge_in(state, v, cost);
  return d;
}

int64_t count_cap(const Rule& rule) {
  // Both weighted terms stay below 2^61 (make_rule's bound for limit * window_ms), and a count fits 32 bits.
  return detail::min64(0xffffffff, (int64_t{1} << 61) / rule.window_ms);
}

void count_denied(const Rule& rule, KeyState& state, int64_t now, int64_t cost) {
  const View v = view(rule, state, now);
  state.a = v.window;
  const int64_t current = detail::min64(count_cap(rule), v.current + cost);
  state.b = static_cast<int64_t>((static_cast<uint64_t>(v.previous) << 32) | static_cast<uint64_t>(current));
}

bool valid_state(const Rule& rule, const KeyState& state) {
  const int64_t current = state.b & 0xffffffff;
  const int64_t previous = static_cast<int64_t>(static_cast<uint64_t>(state.b) >> 32);
  const int64_t most = rule.count_denied ? count_cap(rule) : rule.limit;
  return state.a >= 0 && state.a <= kMaxTimeMs / rule.window_ms && current <= most && previous <= most;
}

double usage(const Rule& rule, const KeyState& state, int64_t now) {
  const View v = view(rule, state, now);
  return static_cast<double>(weighted(rule, v, v.current)) /
         static_cast<double>(rule.limit * rule.window_ms);
}

int64_t window_of(const Rule& rule, const KeyState& state, int64_t now) { return view(rule, state, now).window; }

int64_t give_back(const Rule& /*rule*/, KeyState& state, int64_t window, int64_t units) {
  // Only the window the units were charged in: once it is the previous window, its count already
  // weighs in the current one's decisions as it stands.
  if (state.a != window) return 0;
  const int64_t current = state.b & 0xffffffff;
  const int64_t taken = detail::min64(units, current);
  state.b = static_cast<int64_t>((static_cast<uint64_t>(state.b) & 0xffffffff00000000ull) |
                                 static_cast<uint64_t>(current - taken));
  return taken;
}

}  // namespace sluice::sliding_counter
