#pragma once
#include <cstdint>

#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"

// Units lent ahead (lease.hpp, "lent ahead"): near the end of window w, a fixed window or a sliding
// counter may lend units charged to window w + 1, usable only from w + 1's start. They are counted in
// KeyState::a beside the window number, so a key still costs two words:
//   bits 0..42   the key's window number (at most kMaxTimeMs / window_ms <= 2^42),
//   bits 43..62  units already charged to the window after it (at most kMaxAheadUnits),
//   bit 63       0 (a negative `a` is a blocking rule's blocked form: block.hpp; blocking rules never lend).
// A state written before leases could lend ahead reads as the same state with nothing ahead.
namespace sluice::window_ahead {

inline constexpr int kShift = 43;
inline constexpr int64_t kWindowMask = (int64_t{1} << kShift) - 1;
// The most units a key can hold lent ahead into its next window (a lend ahead is cut to fit).
inline constexpr int64_t kMaxAheadUnits = (int64_t{1} << 20) - 1;

// window is the key's window number; ahead what is already charged to the window after it.
inline int64_t window(const KeyState& state) { return state.a & kWindowMask; }
inline int64_t ahead(const KeyState& state) { return state.a >> kShift; }
inline int64_t pack(int64_t window_number, int64_t ahead_units) { return window_number | (ahead_units << kShift); }

// valid reports whether `a` holds a window number a rule can reach and at most `most_ahead` units ahead.
inline bool valid(const Rule& rule, const KeyState& state, int64_t most_ahead) {
  return state.a >= 0 && window(state) <= kMaxTimeMs / rule.window_ms && ahead(state) <= most_ahead &&
         ahead(state) <= kMaxAheadUnits;
}

}  // namespace sluice::window_ahead
