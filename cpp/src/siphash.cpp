#include "sluice/siphash.hpp"

#include <cstring>

namespace sluice {
namespace {

inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct SipState {
  uint64_t v0, v1, v2, v3;
  void round() {
    v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
    v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
  }
  void absorb(uint64_t m) {
    v3 ^= m;
    round();
    v0 ^= m;
  }
};

inline uint64_t load_le64(const uint8_t* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);  // both targets (x86-64, wasm32) are little-endian
  return x;
}

}  // namespace

uint64_t siphash13(const SipHashKey& key, const uint8_t* bytes, size_t length) {
  SipState s{key.k0 ^ 0x736f6d6570736575ULL, key.k1 ^ 0x646f72616e646f6dULL,
             key.k0 ^ 0x6c7967656e657261ULL, key.k1 ^ 0x7465646279746573ULL};
  const size_t whole = length & ~size_t{7};
  for (size_t i = 0; i < whole; i += 8) s.absorb(load_le64(bytes + i));
  uint64_t last = static_cast<uint64_t>(length) << 56;
  for (size_t i = whole; i < length; ++i) last |= static_cast<uint64_t>(bytes[i]) << (8 * (i - whole));
  s.absorb(last);
  s.v2 ^= 0xff;
  s.round();
  s.round();
  s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

}  // namespace sluice
