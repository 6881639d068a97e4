#pragma once
#include <cstdint>

namespace sluice {

// KeyState is everything a rule remembers about one key: two 64-bit words whose meaning belongs to the
// rule's algorithm (each algorithm header documents its own). All zeros is a key never seen: every
// algorithm reads it as "full quota", which is why the key table can hand out zeroed slots.
struct KeyState {
  int64_t a = 0;
  int64_t b = 0;
};

// SlidingLogRing is the extra per-key memory of the sliding-window log: `limit` timestamps kept as
// 32-bit offsets from KeyState::a, so a key costs 4 bytes per unit of limit.
struct SlidingLogRing {
  uint32_t* entries = nullptr;  // `limit` of them
};

}  // namespace sluice
