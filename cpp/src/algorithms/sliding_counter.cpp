#include "sluice/algorithms/sliding_counter.hpp"

#include "sluice/algorithms/window_ahead.hpp"
#include "sluice/arithmetic.hpp"
#include "sluice/hot_path.hpp"

namespace sluice::sliding_counter {
namespace {

struct View {
  int64_t window;    // the window the key is in
  int64_t elapsed;   // ms since that window began
  int64_t current;   // charged in it
  int64_t previous;  // charged in the window before
  int64_t ahead;     // lent ahead into the window after (window_ahead.hpp)
};

View view(const Rule& rule, const KeyState& state, int64_t now) {
  const int64_t current = state.b & 0xffffffff;
  const int64_t previous = static_cast<int64_t>(static_cast<uint64_t>(state.b) >> 32);
  const int64_t key_window = window_ahead::window(state);
  const int64_t ahead = window_ahead::ahead(state);
  const int64_t window = now / rule.window_ms;
  if (window < key_window) return {key_window, 0, current, previous, ahead};  // time ran backwards: window start
  const int64_t elapsed = now - window * rule.window_ms;
  if (window == key_window) return {window, elapsed, current, previous, ahead};
  // What was lent ahead is charged to the window after the key's, from its start.
  if (window == key_window + 1) return {window, elapsed, ahead, current, 0};
  if (window == key_window + 2) return {window, elapsed, 0, ahead, 0};
  return {window, elapsed, 0, 0, 0};
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
  // Units lent ahead may all be used at the next window's start, where this window's count weighs in
  // whole: this window keeps room for them (lease.hpp, "lent ahead").
  const int64_t room = rule.limit - v.ahead;
  d.allowed = cost <= rule.limit && v.current + cost <= room && weighted(rule, v, v.current + cost) <= budget;
  const int64_t current_after = d.allowed ? v.current + cost : v.current;
  d.remaining = detail::min64(detail::floor_div(budget - weighted(rule, v, current_after), rule.window_ms),
                              detail::max64(0, room - current_after));
  // Back to full quota once neither window's count weighs any more (units lent ahead are the next
  // window's count, which weighs until the end of the window after it).
  if (v.ahead > 0) {
    d.reset_ms = window_start + 3 * rule.window_ms - now;
  } else if (current_after > 0) {
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
  } else if (v.current + cost <= room) {
    // Later in this window, once enough of the previous window has slid out.
    const int64_t at = when_previous_fits(rule, v.previous, rule.limit - v.current - cost);
    d.retry_after_ms = window_start + at - now;
  } else if (v.ahead + cost > rule.limit) {
    // Not in the next window either, where what was lent ahead is its count: the one after.
    const int64_t at = when_previous_fits(rule, v.ahead, rule.limit - cost);
    d.retry_after_ms = window_start + 2 * rule.window_ms + at - now;
  } else if (v.ahead > 0) {
    // In the next window, where this window's count becomes the previous one beside what was lent ahead.
    const int64_t at = when_previous_fits(rule, v.current, rule.limit - v.ahead - cost);
    d.retry_after_ms = window_start + rule.window_ms + at - now;
  } else {
    // In the next window, where this window's count becomes the previous one.
    const int64_t at = when_previous_fits(rule, v.current, rule.limit - cost);
    d.retry_after_ms = window_start + rule.window_ms + at - now;
  }
  if (d.retry_after_ms == 0 && !d.allowed) d.retry_after_ms = 1;
  return d;
}

void charge_in(KeyState& state, const View& v, int64_t cost) {
  state.a = window_ahead::pack(v.window, v.ahead);
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
  state.a = window_ahead::pack(v.window, v.ahead);
  const int64_t current = detail::min64(count_cap(rule), v.current + cost);
  state.b = static_cast<int64_t>((static_cast<uint64_t>(v.previous) << 32) | static_cast<uint64_t>(current));
}

bool valid_state(const Rule& rule, const KeyState& state) {
  const int64_t current = state.b & 0xffffffff;
  const int64_t previous = static_cast<int64_t>(static_cast<uint64_t>(state.b) >> 32);
  const int64_t most = rule.count_denied ? count_cap(rule) : rule.limit;
  return window_ahead::valid(rule, state, rule.limit) && current <= most && previous <= most;
}

double usage(const Rule& rule, const KeyState& state, int64_t now) {
  const View v = view(rule, state, now);
  const double in_window = static_cast<double>(weighted(rule, v, v.current)) / static_cast<double>(rule.limit * rule.window_ms);
  const double ahead = static_cast<double>(v.ahead) / static_cast<double>(rule.limit);
  return in_window > ahead ? in_window : ahead;
}

int64_t window_of(const Rule& rule, const KeyState& state, int64_t now) { return view(rule, state, now).window; }

int64_t give_back(const Rule& /*rule*/, KeyState& state, int64_t window, int64_t units) {
  // Only the window the units were charged in: once it is the previous window, its count already
  // weighs in the current one's decisions as it stands.
  const int64_t key_window = window_ahead::window(state);
  if (window == key_window + 1) {
    // Lent ahead, and the key has not been charged in that window yet: take them off what is ahead.
    const int64_t taken = detail::min64(units, window_ahead::ahead(state));
    state.a = window_ahead::pack(key_window, window_ahead::ahead(state) - taken);
    return taken;
  }
  if (key_window != window) return 0;
  const int64_t current = state.b & 0xffffffff;
  const int64_t taken = detail::min64(units, current);
  state.b = static_cast<int64_t>((static_cast<uint64_t>(state.b) & 0xffffffff00000000ull) |
                                 static_cast<uint64_t>(current - taken));
  return taken;
}

}  // namespace sluice::sliding_counter

namespace sluice::sliding_counter {

int64_t room_ahead(const Rule& rule, const KeyState& state, int64_t now) {
  // Denied requests that count could push this window's count past what the lent units assumed.
  if (rule.count_denied) return 0;
  const View v = view(rule, state, now);
  // At the next window's start this window's count weighs in whole, beside what is lent ahead.
  const int64_t room = rule.limit - v.current - v.ahead;
  return detail::max64(0, detail::min64(room, window_ahead::kMaxAheadUnits - v.ahead));
}

void charge_ahead(const Rule& rule, KeyState& state, int64_t now, int64_t units) {
  const View v = view(rule, state, now);
  state.a = window_ahead::pack(v.window, v.ahead + units);
  state.b = static_cast<int64_t>((static_cast<uint64_t>(v.previous) << 32) | static_cast<uint64_t>(v.current));
}

}  // namespace sluice::sliding_counter
