#pragma once
#include <cstdint>

namespace sluice {

// Status is what every fallible core call returns. A limited request is not an error: it is a
// Decision with allowed == false. These codes cross the wasm boundary unchanged, so their values are
// part of the ABI (mirrored in wasm-bindings/sluice.js).
enum class Status : int32_t {
  kOk = 0,
  kKeyTooLong = 1,       // a key longer than kMaxKeyBytes
  kInvalidRule = 2,      // a rule whose parameters are out of range
  kInvalidCost = 3,      // a cost below 1 or above kMaxCost
  kUnknownRule = 4,      // a rule id that was never added
  kTooManyChecks = 5,    // more checks in one call than kMaxChecksPerCall
  kOutOfMemory = 6,      // a table could not be allocated
  kInvalidState = 7,     // imported state bytes that are malformed or belong to another algorithm
  kNotFound = 8,         // no state is held for that key
  kBufferTooSmall = 9,   // an export that does not fit the caller's buffer
  kInvalidArgument = 10, // anything else the caller got wrong (a negative time, a null pointer)
};

// Hard limits of the core; the host validates against the same numbers.
inline constexpr uint32_t kMaxKeyBytes = 512;
inline constexpr uint32_t kMaxChecksPerCall = 16;
inline constexpr int64_t kMaxCost = int64_t{1} << 31;

}  // namespace sluice
