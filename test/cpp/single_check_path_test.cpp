// The single-check fast path (Limiter::run_one) must decide exactly as the general path does. A check
// of cost c split into two checks of the same rule and key (1 and c - 1) goes through the general
// path and is one request of cost c there; two limiters with the same seed, one fed single checks and
// one fed the split pairs, must then agree on every decision, every state byte and every eviction.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sluice/limiter.hpp"

using namespace sluice;

namespace {

struct Pair {
  Limiter single{SipHashKey{0x1234, 0x5678}};
  Limiter split{SipHashKey{0x1234, 0x5678}};
  uint32_t rule = 0;
};

void require_same(const Decision& a, const Decision& b) {
  REQUIRE(a.allowed == b.allowed);
  REQUIRE(a.limit == b.limit);
  REQUIRE(a.remaining == b.remaining);
  REQUIRE(a.reset_ms == b.reset_ms);
  REQUIRE(a.retry_after_ms == b.retry_after_ms);
}

std::vector<uint8_t> exported(Limiter& limiter, uint32_t rule, const std::string& key) {
  std::vector<uint8_t> bytes(Limiter::kStateHeaderBytes + 8 * 64);
  uint32_t written = 0;
  const Status status = limiter.export_state(rule, reinterpret_cast<const uint8_t*>(key.data()),
                                             static_cast<uint32_t>(key.size()), bytes.data(),
                                             static_cast<uint32_t>(bytes.size()), &written);
  if (status == Status::kNotFound) return {};
  REQUIRE(status == Status::kOk);
  bytes.resize(written);
  return bytes;
}

}  // namespace

TEST_CASE("a single check decides as the same request split in two checks does, for every algorithm") {
  const Algorithm algorithm = GENERATE(Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kSlidingCounter,
                                       Algorithm::kTokenBucket, Algorithm::kLeakyBucket, Algorithm::kGcra);
  CAPTURE(static_cast<int>(algorithm));
  Pair p;
  // A small table (capacity 40 for up to 120 keys) so that keys are evicted and re-admitted.
  const RuleConfig config{algorithm, 12, 10'000, 0};
  uint32_t rule_split = 0;
  REQUIRE(p.single.add_rule(config, 40, &p.rule, nullptr) == Status::kOk);
  REQUIRE(p.split.add_rule(config, 40, &rule_split, nullptr) == Status::kOk);
  REQUIRE(rule_split == p.rule);

  std::mt19937_64 random(static_cast<uint64_t>(algorithm) + 7);
  int64_t now = 1'700'000'000'000;
  for (int step = 0; step < 20'000; ++step) {
    CAPTURE(step);
    // Mostly forward in small steps, sometimes backwards (time running backwards is input too).
    now += static_cast<int64_t>(random() % 400) - (random() % 20 == 0 ? 900 : 0);
    const std::string key = "10.0." + std::to_string(random() % 120);
    const auto* bytes = reinterpret_cast<const uint8_t*>(key.data());
    const auto length = static_cast<uint32_t>(key.size());
    const int64_t cost = 2 + static_cast<int64_t>(random() % 4);
    const bool peek = random() % 8 == 0;

    const Check one{p.rule, bytes, length, cost};
    const Check two[2] = {{p.rule, bytes, length, 1}, {p.rule, bytes, length, cost - 1}};
    Decision single_per[1];
    Decision split_per[2];
    Outcome single_outcome;
    Outcome split_outcome;
    if (peek) {
      REQUIRE(p.single.peek(&one, 1, now, single_per, &single_outcome) == Status::kOk);
      REQUIRE(p.split.peek(two, 2, now, split_per, &split_outcome) == Status::kOk);
    } else {
      REQUIRE(p.single.check(&one, 1, now, single_per, &single_outcome) == Status::kOk);
      REQUIRE(p.split.check(two, 2, now, split_per, &split_outcome) == Status::kOk);
    }
    require_same(single_outcome.decision, split_outcome.decision);
    REQUIRE(single_outcome.deciding_check == split_outcome.deciding_check);
    require_same(single_per[0], split_per[0]);
    REQUIRE(exported(p.single, p.rule, key) == exported(p.split, p.rule, key));

    TableStats a;
    TableStats b;
    REQUIRE(p.single.stats(p.rule, &a) == Status::kOk);
    REQUIRE(p.split.stats(p.rule, &b) == Status::kOk);
    REQUIRE(a.keys == b.keys);
    REQUIRE(a.evictions == b.evictions);
    REQUIRE(a.evictions_restricting == b.evictions_restricting);
    REQUIRE(a.summary_starts == b.summary_starts);
  }
  TableStats stats;
  REQUIRE(p.single.stats(p.rule, &stats) == Status::kOk);
  CHECK(stats.evictions > 0);  // the sequence did reach the eviction path
}

TEST_CASE("a single check reports the same errors as the general path") {
  Limiter limiter(SipHashKey{1, 2});
  uint32_t rule = 0;
  REQUIRE(limiter.add_rule(RuleConfig{Algorithm::kFixedWindow, 5, 1000, 0}, 10, &rule, nullptr) == Status::kOk);
  const std::string key = "k";
  const auto* bytes = reinterpret_cast<const uint8_t*>(key.data());
  Decision per[1];
  Outcome outcome;
  const Check unknown_rule{rule + 1, bytes, 1, 1};
  CHECK(limiter.check(&unknown_rule, 1, 0, per, &outcome) == Status::kUnknownRule);
  const Check zero_cost{rule, bytes, 1, 0};
  CHECK(limiter.check(&zero_cost, 1, 0, per, &outcome) == Status::kInvalidCost);
  const Check too_long{rule, bytes, kMaxKeyBytes + 1, 1};
  CHECK(limiter.check(&too_long, 1, 0, per, &outcome) == Status::kKeyTooLong);
  const Check no_key{rule, nullptr, 3, 1};
  CHECK(limiter.check(&no_key, 1, 0, per, &outcome) == Status::kInvalidArgument);
  const Check fine{rule, bytes, 1, 1};
  CHECK(limiter.check(&fine, 1, -1, per, &outcome) == Status::kInvalidArgument);
}

TEST_CASE("a full key table keeps every key it holds findable, and forgets erased ones") {
  Limiter limiter(SipHashKey{3, 4});
  uint32_t rule = 0;
  REQUIRE(limiter.add_rule(RuleConfig{Algorithm::kFixedWindow, 100, 60'000, 0}, 5'000, &rule, nullptr) == Status::kOk);
  Decision per[1];
  Outcome outcome;
  auto charge = [&](const std::string& key, int64_t cost) {
    const Check c{rule, reinterpret_cast<const uint8_t*>(key.data()), static_cast<uint32_t>(key.size()), cost};
    REQUIRE(limiter.check(&c, 1, 0, per, &outcome) == Status::kOk);
    return outcome.decision;
  };
  // Every key is charged a distinct cost: reading its remaining quota back finds its own state.
  for (int i = 0; i < 5'000; ++i) charge("key" + std::to_string(i), 1 + i % 50);
  TableStats stats;
  REQUIRE(limiter.stats(rule, &stats) == Status::kOk);
  CHECK(stats.memory_bytes == static_cast<uint64_t>(stats.slots) * 24 + stats.summary_bytes);
  int held = 0;
  for (int i = 0; i < 5'000; ++i) {
    const std::string key = "key" + std::to_string(i);
    const Check c{rule, reinterpret_cast<const uint8_t*>(key.data()), static_cast<uint32_t>(key.size()), 1};
    REQUIRE(limiter.peek(&c, 1, 0, per, &outcome) == Status::kOk);
    // Held: its own state. Evicted: started from the eviction summary, never with more than its own.
    if (outcome.decision.remaining == 100 - (1 + i % 50) - 1) ++held;
    else REQUIRE(outcome.decision.remaining < 100 - (1 + i % 50) - 1);
  }
  CHECK(static_cast<uint32_t>(held) >= stats.keys);
  CHECK(stats.keys + stats.evictions == 5'000);

  const std::string first = "key1";
  REQUIRE(limiter.reset(rule, reinterpret_cast<const uint8_t*>(first.data()), 4) == Status::kOk);
  CHECK(charge(first, 1).remaining == 99);
}
