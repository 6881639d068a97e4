// The bounded key table, seen through the limiter: its size never grows, a flood of fresh keys cannot
// reset a key that is limiting someone, evictions are counted, and keys of any allowed length work.
#include <string>
#include <vector>

#include "support.hpp"

namespace {

using namespace sluice;
using namespace sluice::test;

constexpr int64_t kLimit = 10;
constexpr int64_t kWindowMs = 60000;
constexpr int64_t kNow = 1'700'000'000'000;

std::string flood_key(int i) { return "flood-" + std::to_string(i); }

}  // namespace

TEST_CASE("without growth, a key table never holds more keys than its slots, and its memory is fixed at init", "[key-table]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    h.no_growth();
    const uint32_t rule = h.add(algorithm, kLimit, kWindowMs, 0, 1000);
    const TableStats empty = h.stats(rule);
    CHECK(empty.keys == 0);
    CHECK(empty.slots >= 1000);
    CHECK(empty.memory_bytes > 0);
    for (int i = 0; i < 5000; ++i) {
      REQUIRE(h.check(rule, flood_key(i), 1, kNow + i).allowed);
      if (i % 500 == 0) {
        const TableStats now = h.stats(rule);
        REQUIRE(now.keys <= now.slots);
        REQUIRE(now.memory_bytes == empty.memory_bytes);
      }
    }
    const TableStats full = h.stats(rule);
    CHECK(full.keys <= full.slots);
    CHECK(full.keys >= 1000);  // two-choice hashing fills the table before it evicts much
    CHECK(full.slots == empty.slots);
    CHECK(full.memory_bytes == empty.memory_bytes);
    CHECK(full.evictions == 5000 - full.keys);
  }
}

TEST_CASE("the eviction flood: 100x capacity fresh keys, each spending its whole quota, cannot reset an exhausted key", "[key-table]") {
  // Issue 11 §3: with flood keys that use their quota as fully as the attacker did, the least-used
  // victim was the attacker's own slot, and it came back fresh. Limits 1 and 10.
  for (const Algorithm algorithm : kAllAlgorithms) {
    for (const int64_t limit : {int64_t{1}, kLimit}) {
      INFO(name_of(algorithm) << " limit " << limit);
      Harness h;
      const uint32_t rule = h.add(algorithm, limit, kWindowMs, 0, 1000);
      const Decision exhausted = h.check(rule, "attacker", limit, kNow);
      REQUIRE(exhausted.allowed);
      REQUIRE(exhausted.remaining == 0);
      int extra = 0;
      for (int i = 0; i < 100 * 1000; ++i) {
        h.check(rule, flood_key(i), limit, kNow + i / 100);
        if (i % 100 == 99 && h.check(rule, "attacker", 1, kNow + i / 100).allowed) ++extra;
      }
      CHECK(extra == 0);
      const Decision after = h.check(rule, "attacker", 1, kNow + 1000);
      CHECK_FALSE(after.allowed);
      CHECK(after.remaining == 0);
      CHECK(after.retry_after_ms > 0);
      const TableStats stats = h.stats(rule);
      CHECK(stats.keys <= stats.slots);
      // Every flood key still owed its whole quota when evicted: the signal says the table is too small,
      // and the flood keys that came after started from what the evicted ones owed.
      CHECK(stats.evictions > 0);
      CHECK(stats.evictions_restricting == stats.evictions);
      CHECK(stats.summary_starts > 0);
    }
  }
}

TEST_CASE("the table-too-small signal: restricting evictions count, idle ones do not", "[key-table]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    h.no_growth();
    const uint32_t rule = h.add(algorithm, kLimit, kWindowMs, 0, 100);
    // Keys idle for two windows are back to a full quota: evicting them costs nothing and says nothing.
    for (int i = 0; i < 1000; ++i) REQUIRE(h.check(rule, flood_key(i), 1, kNow + 2 * kWindowMs * i).allowed);
    const TableStats idle = h.stats(rule);
    CHECK(idle.evictions == 1000 - idle.keys);
    CHECK(idle.evictions_restricting == 0);
    CHECK(idle.summary_starts == 0);
    // Keys still limited when evicted: every such eviction is counted, and keys inserted after them
    // (whose cells hold folded use) start from the summary.
    const int64_t later = kNow + 2 * kWindowMs * 1000;
    for (int i = 0; i < 1000; ++i) h.check(rule, "busy-" + std::to_string(i), kLimit, later);
    const TableStats busy = h.stats(rule);
    CHECK(busy.evictions_restricting > 0);
    CHECK(busy.summary_starts > 0);
    CHECK(busy.summary_bytes == EvictionSummary::bytes_for(100));
    CHECK(busy.memory_bytes > busy.summary_bytes);
  }
}

namespace {

// One request of the eviction property: `key` asks for `cost` at `now`.
struct Request {
  std::string key;
  int64_t cost;
  int64_t now;
};

// Replays `requests` through a small table (`bounded`, which evicts) and an exact one (`exact`, large
// enough never to evict), charging the exact table only with what the small one admitted. Fails if the
// small table ever admits what exact counting denies, or reports more remaining than it. Returns the
// requests exact counting admitted and the small table denied (false limiting, the summary's cost).
int replay_against_exact(Algorithm algorithm, int64_t limit, int64_t window_ms, uint32_t capacity,
                         const std::vector<Request>& requests, bool growth) {
  Harness bounded;
  Harness exact;
  if (!growth) bounded.no_growth();
  const uint32_t b_rule = bounded.add(algorithm, limit, window_ms, 0, capacity);
  const uint32_t e_rule = exact.add(algorithm, limit, window_ms, 0, 1 << 16);
  const uint32_t first_slots = bounded.stats(b_rule).slots;
  int false_limited = 0;
  for (size_t step = 0; step < requests.size(); ++step) {
    const Request& r = requests[step];
    const Decision e = exact.peek(e_rule, r.key, r.cost, r.now);
    const Decision b = bounded.check(b_rule, r.key, r.cost, r.now);
    if (b.allowed) {
      if (!e.allowed) FAIL("step " << step << ": " << r.key << " admitted at " << r.now << " where exact counting denies");
      const Decision charged = exact.check(e_rule, r.key, r.cost, r.now);
      if (b.remaining > charged.remaining) {
        FAIL("step " << step << ": " << r.key << " has " << b.remaining << " remaining, exact counting " << charged.remaining);
      }
    } else if (e.allowed) {
      ++false_limited;
    } else if (b.remaining > e.remaining) {
      FAIL("step " << step << ": denied " << r.key << " has " << b.remaining << " remaining, exact counting " << e.remaining);
    }
  }
  REQUIRE(exact.stats(e_rule).evictions == 0);
  // Without growth the small table evicts; with it, a still-restricting key is folded only once the
  // table has grown to its bound.
  if (growth) {
    const TableStats grown = bounded.stats(b_rule);
    REQUIRE((grown.evictions_restricting == 0 || grown.slots == Limiter::kDefaultMaxGrowth * first_slots));
  } else {
    REQUIRE(bounded.stats(b_rule).evictions > 0);
  }
  return false_limited;
}

}  // namespace

TEST_CASE("eviction never raises any key's remaining quota above exact counting (six algorithms, limits 1..10, random and adversarial floods)",
          "[key-table][properties]") {
  constexpr int64_t kWindow = 1000;
  constexpr uint32_t kCapacity = 64;
  for (const Algorithm algorithm : kAllAlgorithms) {
    for (int64_t limit = 1; limit <= 10; ++limit) {
      INFO(name_of(algorithm) << " limit " << limit);
      Random random(0x5eed0000 + static_cast<uint64_t>(limit) * 7 + static_cast<uint64_t>(algorithm));
      // Random: a few hundred keys, low ids far more often, costs 1..limit, time moving on by
      // 0..window/20 per request over dozens of windows: keys come back after being evicted.
      std::vector<Request> traffic;
      int64_t now = kNow;
      for (int i = 0; i < 6000; ++i) {
        const int64_t id = random.between(0, random.between(0, 400));
        traffic.push_back({"k" + std::to_string(id), random.between(1, limit), now});
        now += random.between(0, kWindow / 20);
      }
      for (const bool growth : {false, true}) replay_against_exact(algorithm, limit, kWindow, kCapacity, traffic, growth);
      // Adversarial: eight targets exhaust themselves, then a flood of fresh keys each spending its
      // whole quota sweeps the table between every round of the targets' retries, within the window
      // and across its edges.
      std::vector<Request> flood;
      now = kNow;
      int fresh = 0;
      for (int round = 0; round < 30; ++round) {
        for (int t = 0; t < 8; ++t) flood.push_back({"target-" + std::to_string(t), round == 0 ? limit : 1, now});
        for (int i = 0; i < 300; ++i) flood.push_back({"flood-" + std::to_string(fresh++), limit, now + i / 100});
        now += kWindow / 7;
      }
      for (const bool growth : {false, true}) replay_against_exact(algorithm, limit, kWindow, kCapacity, flood, growth);
    }
  }
}

TEST_CASE("eviction never raises remaining quota in a multi-check either", "[key-table][properties]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
   for (const bool growth : {false, true}) {
    INFO(name_of(algorithm) << (growth ? " with growth" : " without growth"));
    Harness bounded;
    Harness exact;
    if (!growth) bounded.no_growth();
    const uint32_t b_user = bounded.add(algorithm, 2, 1000, 0, 32);
    const uint32_t first_slots = bounded.stats(b_user).slots;
    const uint32_t b_ip = bounded.add(Algorithm::kGcra, 3, 1000, 0, 32);
    const uint32_t e_user = exact.add(algorithm, 2, 1000, 0, 1 << 12);
    const uint32_t e_ip = exact.add(Algorithm::kGcra, 3, 1000, 0, 1 << 12);
    Random random(99);
    int64_t now = kNow;
    for (int i = 0; i < 20000; ++i) {
      const std::string user = "u" + std::to_string(random.between(0, random.between(0, 300)));
      const std::string ip = "ip" + std::to_string(random.between(0, 200));
      const Check b_checks[2] = {check_of(b_user, user, 1), check_of(b_ip, ip, 1)};
      const Check e_checks[2] = {check_of(e_user, user, 1), check_of(e_ip, ip, 1)};
      Decision b_per[2];
      Decision e_per[2];
      Outcome b_out;
      Outcome e_out;
      REQUIRE(exact.limiter.peek(e_checks, 2, now, e_per, &e_out) == Status::kOk);
      REQUIRE(bounded.limiter.check(b_checks, 2, now, b_per, &b_out) == Status::kOk);
      if (b_out.decision.allowed) {
        if (!e_out.decision.allowed) FAIL("step " << i << ": admitted where exact counting denies");
        REQUIRE(exact.limiter.check(e_checks, 2, now, e_per, &e_out) == Status::kOk);
        for (int c = 0; c < 2; ++c) {
          if (b_per[c].remaining > e_per[c].remaining) FAIL("step " << i << " check " << c << ": more remaining than exact");
        }
      }
      now += random.between(0, 30);
    }
    if (growth) {
      const TableStats grown = bounded.stats(b_user);
      CHECK((grown.evictions_restricting == 0 || grown.slots == Limiter::kDefaultMaxGrowth * first_slots));
    } else {
      CHECK(bounded.stats(b_user).evictions > 0);
    }
   }
  }
}

TEST_CASE("under eviction pressure a table doubles, up to 16 times its slots, before it folds keys, and idle keys never make it grow", "[key-table]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    const uint32_t rule = h.add(algorithm, kLimit, kWindowMs, 0, 100);
    const TableStats first = h.stats(rule);
    // Idle keys (two windows apart) are back to a full quota: evicting them folds nothing, so no growth.
    for (int i = 0; i < 1000; ++i) REQUIRE(h.check(rule, flood_key(i), 1, kNow + 2 * kWindowMs * i).allowed);
    CHECK(h.stats(rule).slots == first.slots);
    CHECK(h.stats(rule).evictions > 0);
    // Keys that spend their quota at one instant: the table doubles instead of folding them...
    const int64_t later = kNow + 2 * kWindowMs * 1000;
    for (int i = 0; i < 800; ++i) h.check(rule, "busy-" + std::to_string(i), kLimit, later);
    const TableStats grown = h.stats(rule);
    CHECK(grown.slots >= 8 * first.slots);
    CHECK(grown.evictions_restricting == 0);
    CHECK(grown.keys >= 800);
    // ... up to 16 times its slots, then folds as a table without growth does.
    for (int i = 800; i < 5000; ++i) h.check(rule, "busy-" + std::to_string(i), kLimit, later);
    const TableStats full = h.stats(rule);
    CHECK(full.slots == 16 * first.slots);
    CHECK(full.evictions_restricting > 0);
    // Every busy key is still exhausted, in the table or through the summary.
    for (int i = 0; i < 5000; i += 97) CHECK_FALSE(h.check(rule, "busy-" + std::to_string(i), 1, later).allowed);
    // Its memory: the grown table and its summary, as stats say.
    CHECK(full.memory_bytes > 16 * (first.memory_bytes - first.summary_bytes));
  }
}

TEST_CASE("table growth stays within the limiter's budget, over all its tables", "[key-table]") {
  Harness h;
  const uint64_t budget = 256 * 1024;
  h.limiter.set_table_growth(1024, budget);
  const uint32_t a = h.add(Algorithm::kFixedWindow, 1, kWindowMs, 0, 1000);
  const uint32_t b = h.add(Algorithm::kGcra, 1, kWindowMs, 0, 1000);
  const uint64_t start = h.stats(a).memory_bytes + h.stats(b).memory_bytes;
  for (int i = 0; i < 100000; ++i) {
    h.check(a, flood_key(i), 1, kNow);
    h.check(b, flood_key(i), 1, kNow);
  }
  const uint64_t end = h.stats(a).memory_bytes + h.stats(b).memory_bytes;
  CHECK(end > start);
  CHECK(end - start <= budget);
  CHECK(h.stats(a).evictions_restricting > 0);
  CHECK(h.stats(b).evictions_restricting > 0);
}

TEST_CASE("when a doubling no longer fits the growth budget, a table takes the largest step that does, and still never refunds", "[key-table]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    const uint32_t rule = h.add(algorithm, kLimit, kWindowMs, 0, 1000);
    const TableStats first = h.stats(rule);
    const uint64_t table_bytes = first.memory_bytes - first.summary_bytes;
    // Room for two doublings (3 tables more) and half of the third (2 more, where it needs 4).
    h.limiter.set_table_growth(16, 5 * table_bytes);
    for (int i = 0; i < 20000; ++i) h.check(rule, "busy-" + std::to_string(i), kLimit, kNow);
    const TableStats grown = h.stats(rule);
    CHECK(grown.slots >= 5 * first.slots);
    CHECK(grown.slots < 8 * first.slots);
    CHECK(grown.memory_bytes - first.memory_bytes <= 5 * table_bytes);
    CHECK(grown.evictions_restricting > 0);
    // Every busy key is still exhausted, in the table or through the summary.
    for (int i = 0; i < 20000; i += 101) CHECK_FALSE(h.check(rule, "busy-" + std::to_string(i), 1, kNow).allowed);
  }
}

TEST_CASE("a blocking rule's table grows under eviction pressure as any other does", "[key-table]") {
  // Its summary keeps a block end per cell: the growth's memory counts them, and never wraps below zero.
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    const uint32_t rule = h.add(algorithm, kLimit, kWindowMs, 0, 100, 60'000);
    const TableStats first = h.stats(rule);
    // Each key spends its quota, then asks once more and is blocked.
    for (int i = 0; i < 800; ++i) {
      h.check(rule, "busy-" + std::to_string(i), kLimit, kNow);
      REQUIRE_FALSE(h.check(rule, "busy-" + std::to_string(i), 1, kNow).allowed);
    }
    const TableStats grown = h.stats(rule);
    CHECK(grown.slots >= 8 * first.slots);
    CHECK(grown.evictions_restricting == 0);
  }
}

TEST_CASE("denied and peeked requests never take a slot", "[key-table]") {
  Harness h;
  const uint32_t guard = h.add(Algorithm::kFixedWindow, 1, kWindowMs);
  const uint32_t rule = h.add(Algorithm::kTokenBucket, kLimit, kWindowMs, 0, 100);
  REQUIRE(h.check(guard, "ip", 1, kNow).allowed);
  for (int i = 0; i < 1000; ++i) {
    h.peek(rule, flood_key(i), 1, kNow);
    h.check(rule, flood_key(i), kLimit + 1, kNow);  // above the capacity: denied
    const std::string key = flood_key(i);
    const Check checks[2] = {check_of(guard, "ip", 1), check_of(rule, key, 1)};
    Decision per[2];
    Outcome outcome;
    REQUIRE(h.limiter.check(checks, 2, kNow, per, &outcome) == Status::kOk);
    REQUIRE_FALSE(outcome.decision.allowed);
  }
  CHECK(h.stats(rule).keys == 0);
  CHECK(h.stats(rule).evictions == 0);
}

TEST_CASE("keys: 512 bytes work, 513 are refused everywhere, the empty key works", "[key-table]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kFixedWindow, 2, kWindowMs);
  const std::string longest(kMaxKeyBytes, 'k');
  const std::string too_long(kMaxKeyBytes + 1, 'k');
  CHECK(h.check(rule, longest, 1, kNow).remaining == 1);
  CHECK(h.check(rule, longest, 1, kNow).remaining == 0);
  CHECK_FALSE(h.check(rule, longest, 1, kNow).allowed);
  // A key that differs only in its last byte is another key.
  CHECK(h.check(rule, std::string(kMaxKeyBytes - 1, 'k') + "x", 1, kNow).remaining == 1);

  Decision per[1];
  Outcome outcome;
  const Check long_check = check_of(rule, too_long, 1);
  CHECK(h.limiter.check(&long_check, 1, kNow, per, &outcome) == Status::kKeyTooLong);
  CHECK(h.limiter.peek(&long_check, 1, kNow, per, &outcome) == Status::kKeyTooLong);
  CHECK(h.limiter.reset(rule, bytes_of(too_long), kMaxKeyBytes + 1) == Status::kKeyTooLong);
  uint8_t state[64];
  uint32_t written = 0;
  CHECK(h.limiter.export_state(rule, bytes_of(too_long), kMaxKeyBytes + 1, state, sizeof state, &written) ==
        Status::kKeyTooLong);
  CHECK(h.limiter.import_state(rule, bytes_of(too_long), kMaxKeyBytes + 1, state, 24) == Status::kKeyTooLong);
  CHECK(h.stats(rule).keys == 2);

  // The empty key, as an empty string and as a null pointer of length 0: the same key.
  CHECK(h.check(rule, "", 1, kNow).remaining == 1);
  const Check null_key{rule, nullptr, 0, 1};
  REQUIRE(h.limiter.check(&null_key, 1, kNow, per, &outcome) == Status::kOk);
  CHECK(outcome.decision.remaining == 0);
  const Check null_with_length{rule, nullptr, 3, 1};
  CHECK(h.limiter.check(&null_with_length, 1, kNow, per, &outcome) == Status::kInvalidArgument);
}

// Not a pass/fail check: the figures the README quotes. Run `sluice_tests "[report]"` to see them.
TEST_CASE("bytes per key at a capacity of 1,000,000 keys", "[key-table][report]") {
  struct Shape {
    Algorithm algorithm;
    int64_t limit;
  };
  for (const Shape shape : {Shape{Algorithm::kFixedWindow, 100}, Shape{Algorithm::kSlidingCounter, 100},
                            Shape{Algorithm::kTokenBucket, 100}, Shape{Algorithm::kLeakyBucket, 100},
                            Shape{Algorithm::kGcra, 100}, Shape{Algorithm::kSlidingLog, 10},
                            Shape{Algorithm::kSlidingLog, 100}}) {
    Harness h;
    const uint32_t rule = h.add(shape.algorithm, shape.limit, kWindowMs, 0, 1'000'000);
    const TableStats stats = h.stats(rule);
    CHECK(stats.slots >= 1'000'000);
    const double per_key = static_cast<double>(stats.memory_bytes) / 1e6;
    WARN(name_of(shape.algorithm) << " (limit " << shape.limit << "): " << stats.memory_bytes
                                  << " bytes for 1,000,000 keys = " << per_key << " bytes per key (" << stats.slots
                                  << " slots)");
  }
}

TEST_CASE("a flood of acquiring keys cannot free the units an evicted concurrency key still holds", "[key-table]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kConcurrency, 2, 60'000, 0, 16);
  const std::string target = "target";
  const auto hash_of = [&h](const std::string& key) { return h.limiter.key_hash(bytes_of(key), static_cast<uint32_t>(key.size())); };
  Decision d;
  REQUIRE(h.limiter.concurrency(rule, hash_of(target), concurrency::Op::kAcquire, 7, 2, kNow, &d) == Status::kOk);
  REQUIRE(d.allowed);
  int extra = 0;
  for (int i = 0; i < 5000; ++i) {
    h.limiter.concurrency(rule, hash_of(flood_key(i)), concurrency::Op::kAcquire, 1, 2, kNow + i, &d);
    if (i % 50 == 49) {
      REQUIRE(h.limiter.concurrency(rule, hash_of(target), concurrency::Op::kAcquire, 8, 1, kNow + i, &d) == Status::kOk);
      if (d.allowed) ++extra;
    }
  }
  // The lease (60 s) has not run out: exact counting holds both units for holder 7 throughout.
  CHECK(extra == 0);
  CHECK(h.stats(rule).evictions_restricting > 0);
}

TEST_CASE("a table holds the keys it was added for, all still restricting, without growing or folding any", "[key-table]") {
  // Two-choice buckets of 8 start to overflow at ~70 % of their slots; a key of a full pair moves to
  // its other bucket (make_room) instead of growing the table or folding a key into the summary.
  // Each key keeps its state where it moves: its next decision is the one a roomy table gives.
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    Harness roomy;
    const uint32_t capacity = 20000;
    const uint32_t rule = h.add(algorithm, kLimit, kWindowMs, 0, capacity);
    const uint32_t reference = roomy.add(algorithm, kLimit, kWindowMs, 0, 16 * capacity);
    const TableStats first = h.stats(rule);
    for (uint32_t i = 0; i < capacity; ++i) {
      const int64_t cost = 1 + static_cast<int64_t>(i % kLimit);
      h.check(rule, "busy-" + std::to_string(i), cost, kNow);
      roomy.check(reference, "busy-" + std::to_string(i), cost, kNow);
    }
    const TableStats full = h.stats(rule);
    CHECK(full.slots == first.slots);
    CHECK(full.keys == capacity);
    CHECK(full.evictions_restricting == 0);
    for (uint32_t i = 0; i < capacity; i += 7) {
      const std::string key = "busy-" + std::to_string(i);
      REQUIRE(h.peek(rule, key, 1, kNow + 1) == roomy.peek(reference, key, 1, kNow + 1));
    }
  }
}

TEST_CASE("a growth step that leaves the table three-quarters full still finds every key a slot", "[key-table]") {
  // A step of a quarter from a full table leaves it ~72 % full: greedy two-choice placement overflows a
  // bucket pair there, and the step moves a key to its other bucket rather than fail (and fold).
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    const uint32_t rule = h.add(algorithm, kLimit, kWindowMs, 0, 20000);
    const TableStats first = h.stats(rule);
    const uint64_t table_bytes = first.memory_bytes - first.summary_bytes;
    // Room for a step of a quarter and its summary's cells, not for a doubling.
    h.limiter.set_table_growth(16, table_bytes / 4 + first.summary_bytes + 4096);
    for (int i = 0; i < 40000; ++i) h.check(rule, "busy-" + std::to_string(i), kLimit, kNow);
    const TableStats grown = h.stats(rule);
    CHECK(grown.slots >= first.slots * 5 / 4);
    CHECK(grown.slots < 2 * first.slots);
    for (int i = 0; i < 40000; i += 101) CHECK_FALSE(h.check(rule, "busy-" + std::to_string(i), 1, kNow).allowed);
  }
}
