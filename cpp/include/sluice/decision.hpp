#pragma once
#include <cstdint>

namespace sluice {

// kNever is the retry_after_ms of a request that no amount of waiting admits (its cost exceeds
// what the rule can ever hold). It is -1 rather than a huge number so that it survives the trip
// through a double and cannot be mistaken for a real delay.
inline constexpr int64_t kNever = -1;

// Decision is the answer to one check, in the rule's own units and integer milliseconds.
struct Decision {
  bool allowed = false;
  int64_t limit = 0;           // the most the rule admits at once (window quota or bucket capacity)
  int64_t remaining = 0;       // what could still be admitted now, after this request if it was charged
  int64_t reset_ms = 0;        // until the key is back to its full quota (or, for windows, the window turns)
  int64_t retry_after_ms = 0;  // until this same request would be admitted; 0 when admitted; kNever
};

}  // namespace sluice
