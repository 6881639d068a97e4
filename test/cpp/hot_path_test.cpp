// The single check's shortcuts must never change a decision:
//  - a check may carry its key's hash (the wasm ABI reuses the previous call's when the key bytes did
//    not change) instead of having the bytes hashed again;
//  - each rule remembers the slot of the last key a single check found or placed, and reuses it after
//    checking the slot's tag, also after other calls reused or emptied that slot.
// Two limiters with the same seed, one fed single checks with known hashes on mostly repeated keys and
// one fed the same requests split in two checks (the general path, which uses neither the hash nor the
// remembered slot), must agree on every decision, every state byte and every eviction, while resets,
// imports and two-key calls between them empty and reuse the remembered slots.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/limiter.hpp"
#include "support.hpp"

using namespace sluice;
using sluice::test::Random;

namespace {

const uint8_t* bytes_of(const std::string& key) { return reinterpret_cast<const uint8_t*>(key.data()); }
uint32_t length_of(const std::string& key) { return static_cast<uint32_t>(key.size()); }

std::vector<uint8_t> exported(Limiter& limiter, uint32_t rule, const std::string& key) {
  std::vector<uint8_t> bytes(Limiter::kStateHeaderBytes + 8 * 64);
  uint32_t written = 0;
  const Status status =
      limiter.export_state(rule, bytes_of(key), length_of(key), bytes.data(), static_cast<uint32_t>(bytes.size()), &written);
  if (status == Status::kNotFound) return {};
  REQUIRE(status == Status::kOk);
  bytes.resize(written);
  return bytes;
}

// Applies the same call to both limiters and requires the same answer.
void both_check(Limiter& a, Limiter& b, const Check* checks, uint32_t count, int64_t now) {
  Decision per_a[2];
  Decision per_b[2];
  Outcome out_a;
  Outcome out_b;
  REQUIRE(a.check(checks, count, now, per_a, &out_a) == Status::kOk);
  REQUIRE(b.check(checks, count, now, per_b, &out_b) == Status::kOk);
  REQUIRE(out_a.decision == out_b.decision);
  for (uint32_t i = 0; i < count; ++i) REQUIRE(per_a[i] == per_b[i]);
}

}  // namespace

TEST_CASE("known hashes and remembered slots decide as fresh lookups do, through resets, imports and evictions") {
  const Algorithm algorithm = GENERATE(Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kSlidingCounter,
                                       Algorithm::kTokenBucket, Algorithm::kLeakyBucket, Algorithm::kGcra);
  CAPTURE(static_cast<int>(algorithm));
  Limiter shortcut(test::kTestSeed);
  Limiter general(test::kTestSeed);
  // A table of 16 slots for 40 keys: keys are evicted and remembered slots reused all the time.
  const RuleConfig config{algorithm, 12, 10'000, 0};
  uint32_t rule = 0;
  uint32_t same_rule = 0;
  REQUIRE(shortcut.add_rule(config, 12, &rule, nullptr) == Status::kOk);
  REQUIRE(general.add_rule(config, 12, &same_rule, nullptr) == Status::kOk);
  REQUIRE(same_rule == rule);

  Random random(static_cast<uint64_t>(algorithm) + 101);
  int64_t now = 1'700'000'000'000;
  std::string key = "10.0.0.1";
  for (int step = 0; step < 20'000; ++step) {
    CAPTURE(step);
    // Mostly forward, across window edges, sometimes backwards.
    now += random.between(0, 700) - (random.percent(5) ? 2'000 : 0);
    // The same client again most of the time: the remembered slot is the common case.
    if (random.percent(35)) key = "10.0.0." + std::to_string(random.between(0, 39));
    const std::string other = "10.0.0." + std::to_string(random.between(0, 39));

    const int action = static_cast<int>(random.between(0, 99));
    if (action < 4) {
      // Forgetting a key empties its slot, which may be the remembered one.
      REQUIRE(shortcut.reset(rule, bytes_of(key), length_of(key)) == Status::kOk);
      REQUIRE(general.reset(rule, bytes_of(key), length_of(key)) == Status::kOk);
    } else if (action < 8) {
      // Importing another key's state may claim (and so reuse) the remembered slot.
      const std::vector<uint8_t> state = exported(general, rule, key);
      if (!state.empty()) {
        const auto size = static_cast<uint32_t>(state.size());
        REQUIRE(shortcut.import_state(rule, bytes_of(other), length_of(other), state.data(), size) == Status::kOk);
        REQUIRE(general.import_state(rule, bytes_of(other), length_of(other), state.data(), size) == Status::kOk);
      }
    } else if (action < 14) {
      // Two keys in one call: the general path claims slots without touching the remembered one.
      const std::string third = "10.0.1." + std::to_string(random.between(0, 39));
      const Check pair[2] = {{rule, bytes_of(other), length_of(other), 1}, {rule, bytes_of(third), length_of(third), 1}};
      both_check(shortcut, general, pair, 2, now);
    } else {
      const int64_t cost = random.between(2, 5);
      const bool peek = random.percent(12);
      Check one{rule, bytes_of(key), length_of(key), cost};
      one.has_hash = true;
      one.hash = shortcut.key_hash(bytes_of(key), length_of(key));
      const Check split[2] = {{rule, bytes_of(key), length_of(key), 1}, {rule, bytes_of(key), length_of(key), cost - 1}};
      Decision per_one[1];
      Decision per_split[2];
      Outcome out_one;
      Outcome out_split;
      if (peek) {
        REQUIRE(shortcut.peek(&one, 1, now, per_one, &out_one) == Status::kOk);
        REQUIRE(general.peek(split, 2, now, per_split, &out_split) == Status::kOk);
      } else {
        REQUIRE(shortcut.check(&one, 1, now, per_one, &out_one) == Status::kOk);
        REQUIRE(general.check(split, 2, now, per_split, &out_split) == Status::kOk);
      }
      REQUIRE(out_one.decision == out_split.decision);
      REQUIRE(per_one[0] == per_split[0]);
    }
    REQUIRE(exported(shortcut, rule, key) == exported(general, rule, key));
    TableStats a;
    TableStats b;
    REQUIRE(shortcut.stats(rule, &a) == Status::kOk);
    REQUIRE(general.stats(rule, &b) == Status::kOk);
    REQUIRE(a.keys == b.keys);
    REQUIRE(a.evictions == b.evictions);
  }
  TableStats stats;
  REQUIRE(shortcut.stats(rule, &stats) == Status::kOk);
  CHECK(stats.evictions > 0);  // the sequence did reach the eviction path
}

TEST_CASE("a key's hash is what the limiter hashes it to, and only its own bytes match it") {
  Limiter limiter(test::kTestSeed);
  Limiter other_seed(SipHashKey{1, 2});
  const std::string a = "203.0.113.7";
  const std::string b = "203.0.113.8";
  CHECK(limiter.key_hash(bytes_of(a), length_of(a)) == limiter.key_hash(bytes_of(a), length_of(a)));
  CHECK(limiter.key_hash(bytes_of(a), length_of(a)) != limiter.key_hash(bytes_of(b), length_of(b)));
  CHECK(limiter.key_hash(bytes_of(a), length_of(a)) != other_seed.key_hash(bytes_of(a), length_of(a)));
}
