#include "sluice/algorithms/fixed_window.hpp"

#include "sluice/arithmetic.hpp"
#include "sluice/hot_path.hpp"

namespace sluice::fixed_window {
namespace {

struct View {
  int64_t window;  // the window the key is in: the caller's, or a later one if time ran backwards
  int64_t count;   // what was charged in it
};

View view(const Rule& rule, const KeyState& state, int64_t now) {
  const int64_t window = now / rule.window_ms;
  if (window > state.a) return {window, 0};
  return {state.a, state.b};  // same window, or time ran backwards: keep the newer window's count
}

// The decision of a request of `cost` at `now` on the key seen as `v`.
Decision decide_in(const Rule& rule, const View& v, int64_t now, int64_t cost) {
  const int64_t window_end = (v.window + 1) * rule.window_ms;
  Decision d;
  d.limit = rule.limit;
  d.allowed = v.count + cost <= rule.limit;
  const int64_t used = d.allowed ? v.count + cost : v.count;
  d.remaining = rule.limit - used;
  d.reset_ms = window_end - now;
  if (d.allowed) {
    d.retry_after_ms = 0;
  } else {
    d.retry_after_ms = cost > rule.limit ? kNever : window_end - now;
  }
  return d;
}

void charge_in(KeyState& state, const View& v, int64_t cost) {
  state.a = v.window;
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
  return state.a >= 0 && state.a <= kMaxTimeMs / rule.window_ms && state.b >= 0 && state.b <= rule.limit;
}

double usage(const Rule& rule, const KeyState& state, int64_t now) {
  return static_cast<double>(view(rule, state, now).count) / static_cast<double>(rule.limit);
}

int64_t window_of(const Rule& rule, const KeyState& state, int64_t now) { return view(rule, state, now).window; }

int64_t give_back(const Rule& /*rule*/, KeyState& state, int64_t window, int64_t units) {
  if (state.a != window) return 0;  // that window is over: what was lent in it lapsed with it
  const int64_t taken = detail::min64(units, state.b);
  state.b -= taken;
  return taken;
}

}  // namespace sluice::fixed_window
