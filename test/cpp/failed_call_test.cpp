// Issue 11 §4: a multi-check's new keys take slots only in their own rule's table, and a call that
// fails changes nothing.
#include <string>
#include <vector>

#include "support.hpp"

namespace {

using namespace sluice;
using namespace sluice::test;

constexpr int64_t kNow = 1'700'000'000'000;

// Every state the limiter holds for `keys` of `rule`, and its table's counters: equal snapshots mean
// nothing observable changed.
struct Snapshot {
  std::vector<std::vector<uint8_t>> states;
  std::vector<uint64_t> counters;
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(Harness& h, const std::vector<uint32_t>& rules, const std::vector<std::string>& keys) {
  Snapshot s;
  for (const uint32_t rule : rules) {
    for (const std::string& key : keys) s.states.push_back(h.exported(rule, key).value_or(std::vector<uint8_t>{}));
    const TableStats t = h.stats(rule);
    s.counters.insert(s.counters.end(), {t.keys, t.evictions, t.evictions_restricting, t.summary_starts});
  }
  return s;
}

}  // namespace

TEST_CASE("a multi-check's new key evicts from its own rule's table, whatever slots other rules' keys hold", "[limiter]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    h.no_growth();
    // Capacity 1: one bucket of 8 slots, so both of a key's candidate buckets are slots 0..7.
    const uint32_t a = h.add(algorithm, 5, 60'000, 0, 1);
    const uint32_t b = h.add(algorithm, 5, 60'000, 0, 1);
    std::vector<std::string> keys;
    for (int i = 0; i < 8; ++i) keys.push_back("k" + std::to_string(i));
    for (const std::string& key : keys) {
      REQUIRE(h.check(a, key, 1, kNow).allowed);
      REQUIRE(h.check(b, key, 1, kNow).allowed);
    }
    REQUIRE(h.stats(a).keys == 8);
    REQUIRE(h.stats(b).keys == 8);
    // B's eight keys hold B's slots 0..7; the new key of A must still get one of A's slots.
    std::vector<Check> checks;
    for (const std::string& key : keys) checks.push_back(check_of(b, key, 1));
    checks.push_back(check_of(a, "newcomer", 1));
    std::vector<Decision> per(checks.size());
    Outcome outcome;
    REQUIRE(h.limiter.check(checks.data(), static_cast<uint32_t>(checks.size()), kNow, per.data(), &outcome) == Status::kOk);
    CHECK(outcome.decision.allowed);
    CHECK(h.stats(a).evictions == 1);
    CHECK(h.stats(b).evictions == 0);
    CHECK(h.exported(a, "newcomer").has_value());
  }
}

TEST_CASE("a call that fails changes nothing: states and counters identical before and after", "[limiter]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    const uint32_t a = h.add(algorithm, 3, 60'000, 0, 1);
    const uint32_t b = h.add(Algorithm::kGcra, 3, 60'000, 0, 1);
    std::vector<std::string> keys;
    for (int i = 0; i < 12; ++i) keys.push_back("k" + std::to_string(i));
    for (const std::string& key : keys) {
      h.check(a, key, 2, kNow);
      h.check(b, key, 1, kNow);
    }
    const Snapshot before = snapshot(h, {a, b}, keys);
    const std::string too_long(kMaxKeyBytes + 1, 'x');
    // New keys first (each would take a slot, evicting), then one check the core refuses.
    for (const Check& bad : {check_of(a, too_long, 1), check_of(a, "fine", 0), check_of(99, "fine", 1)}) {
      const Check checks[4] = {check_of(a, "new-1", 1), check_of(b, "new-2", 1), check_of(a, "k3", 1), bad};
      Decision per[4];
      Outcome outcome;
      CHECK(h.limiter.check(checks, 4, kNow + 1, per, &outcome) != Status::kOk);
      CHECK(h.limiter.check(checks, 4, -1, per, &outcome) == Status::kInvalidArgument);
      CHECK(snapshot(h, {a, b}, keys) == before);
      CHECK_FALSE(h.exported(a, "new-1").has_value());
      CHECK_FALSE(h.exported(b, "new-2").has_value());
    }
  }
}
