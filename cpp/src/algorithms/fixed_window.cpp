#include "sluice/algorithms/fixed_window.hpp"

#include "sluice/algorithms/window_ahead.hpp"
#include "sluice/arithmetic.hpp"
#include "sluice/hot_path.hpp"

namespace sluice::fixed_window {
namespace {

struct View {
  int64_t window;  // the window the key is in: the caller's, or a later one if time ran backwards
  int64_t count;   // what was charged in it
  int64_t ahead;   // what was lent ahead into the window after it (window_ahead.hpp)
};

View view(const Rule& rule, const KeyState& state, int64_t now) {
  const int64_t window = now / rule.window_ms;
  const int64_t key_window = window_ahead::window(state);
  if (window == key_window + 1) return {window, window_ahead::ahead(state), 0};  // what was lent ahead now counts
  if (window > key_window) return {window, 0, 0};
  // Same window, or time ran backwards: keep the newer window's counts.
  return {key_window, state.b, window_ahead::ahead(state)};
}

// The decision of a request of `cost` at `now` on the key seen as `v`.
Decision decide_in(const Rule& rule, const View& v, int64_t now, int64_t cost) {
  const int64_t window_end = (v.window + 1) * rule.window_ms;
  Decision d;
  d.limit = rule.limit;
  d.allowed = v.count + cost <= rule.limit;
  const int64_t used = d.allowed ? v.count + cost : v.count;
  d.remaining = rule.limit - used;
  // Units lent ahead are the next window's count from its start: the key is back to full quota, and a
  // request that does not fit beside them admitted, a window later.
  d.reset_ms = (v.ahead > 0 ? window_end + rule.window_ms : window_end) - now;
  if (d.allowed) {
    d.retry_after_ms = 0;
  } else if (cost > rule.limit) {
    d.retry_after_ms = kNever;
  } else {
    d.retry_after_ms = (v.ahead + cost <= rule.limit ? window_end : window_end + rule.window_ms) - now;
  }
  return d;
}

void charge_in(KeyState& state, const View& v, int64_t cost) {
  state.a = window_ahead::pack(v.window, v.ahead);
  state.b = v.count + cost;
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

bool valid_state(const Rule& rule, const KeyState& state) {
  return window_ahead::valid(rule, state, rule.limit) && state.b >= 0 && state.b <= rule.limit;
}

double usage(const Rule& rule, const KeyState& state, int64_t now) {
  const View v = view(rule, state, now);
  return static_cast<double>(detail::max64(v.count, v.ahead)) / static_cast<double>(rule.limit);
}

int64_t window_of(const Rule& rule, const KeyState& state, int64_t now) { return view(rule, state, now).window; }

int64_t give_back(const Rule& /*rule*/, KeyState& state, int64_t window, int64_t units) {
  const int64_t key_window = window_ahead::window(state);
  if (window == key_window + 1) {
    // Lent ahead, and the key has not been charged in that window yet: take them off what is ahead.
    const int64_t taken = detail::min64(units, window_ahead::ahead(state));
    state.a = window_ahead::pack(key_window, window_ahead::ahead(state) - taken);
    return taken;
  }
  if (key_window != window) return 0;  // that window is over: what was lent in it lapsed with it
  const int64_t taken = detail::min64(units, state.b);
  state.b -= taken;
  return taken;
}

int64_t room_ahead(const Rule& rule, const KeyState& state, int64_t now) {
  const View v = view(rule, state, now);
  return detail::min64(rule.limit, window_ahead::kMaxAheadUnits) - v.ahead;
}

void charge_ahead(const Rule& rule, KeyState& state, int64_t now, int64_t units) {
  const View v = view(rule, state, now);
  state.a = window_ahead::pack(v.window, v.ahead + units);
  state.b = v.count;
}

}  // namespace sluice::fixed_window
