#pragma once
#include <cstddef>
#include <cstdint>

namespace sluice {

// SipHashKey is the 128-bit secret of the key table's hash. Drawn at random per table, it keeps
// clients from choosing keys that collide on purpose (hash flooding).
struct SipHashKey {
  uint64_t k0 = 0;
  uint64_t k1 = 0;
};

// siphash13 is SipHash-1-3 (the variant Rust's HashMap uses): a keyed 64-bit hash of `length` bytes.
uint64_t siphash13(const SipHashKey& key, const uint8_t* bytes, size_t length);

}  // namespace sluice
