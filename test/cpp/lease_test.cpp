// Leases (Limiter::lend / give_back): what is lent is charged when lent, so that everything lent plus
// everything admitted directly never exceeds the rule; unused units given back are admitted again.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sluice/limiter.hpp"
#include "support.hpp"

using namespace sluice;

namespace {

uint64_t hash_of(const Limiter& limiter, const std::string& key) {
  return limiter.key_hash(reinterpret_cast<const uint8_t*>(key.data()), static_cast<uint32_t>(key.size()));
}

uint32_t add(Limiter& limiter, Algorithm algorithm, int64_t limit, int64_t window_ms) {
  RuleConfig config;
  config.algorithm = algorithm;
  config.limit = limit;
  config.window_ms = window_ms;
  uint32_t id = 0;
  REQUIRE(limiter.add_rule(config, 64, &id, nullptr) == Status::kOk);
  return id;
}

Decision check(Limiter& limiter, uint32_t rule, uint64_t hash, int64_t now) {
  Decision d;
  REQUIRE(limiter.check_one(rule, hash, 1, now, true, &d) == Status::kOk);
  return d;
}

}  // namespace

TEST_CASE("a fixed window lends a quarter of what is left, until the window ends") {
  Limiter limiter(SipHashKey{1, 2});
  const uint32_t rule = add(limiter, Algorithm::kFixedWindow, 100, 60'000);
  const uint64_t key = hash_of(limiter, "k");
  Lease lease;
  // t0 = 30 s into window 0: a 60 s lease is cut at the window's end.
  REQUIRE(limiter.lend(rule, key, 50, 60'000, 30'000, &lease) == Status::kOk);
  CHECK(lease.units == 25);
  CHECK(lease.expires_at_ms == 60'000);
  CHECK(lease.remaining == 75);
  REQUIRE(limiter.lend(rule, key, 5, 10'000, 31'000, &lease) == Status::kOk);
  CHECK(lease.units == 5);
  CHECK(lease.expires_at_ms == 41'000);
  CHECK(check(limiter, rule, key, 32'000).remaining == 69);
  // Given back in the same window: admitted again.
  int64_t returned = -1;
  REQUIRE(limiter.give_back(rule, key, 10, 60'000, &returned) == Status::kOk);
  CHECK(returned == 10);
  CHECK(check(limiter, rule, key, 33'000).remaining == 78);
  // In the next window the lent units lapsed with their window: nothing to give back.
  check(limiter, rule, key, 61'000);
  REQUIRE(limiter.give_back(rule, key, 5, 41'000, &returned) == Status::kOk);
  CHECK(returned == 0);
  CHECK(check(limiter, rule, key, 62'000).remaining == 98);
}

TEST_CASE("nothing is lent near the limit, nor when time ran backwards, nor by algorithms that cannot lend") {
  Limiter limiter(SipHashKey{1, 2});
  const uint32_t rule = add(limiter, Algorithm::kFixedWindow, 10, 1'000);
  const uint64_t key = hash_of(limiter, "k");
  for (int i = 0; i < 7; ++i) check(limiter, rule, key, 100);
  Lease lease;
  REQUIRE(limiter.lend(rule, key, 100, 500, 100, &lease) == Status::kOk);
  CHECK(lease.units == 0);  // 3 left: below kLendShare
  CHECK(lease.remaining == 3);
  check(limiter, rule, key, 2'500);  // the key is in window 2
  REQUIRE(limiter.lend(rule, key, 100, 500, 1'500, &lease) == Status::kOk);  // now is in window 1
  CHECK(lease.units == 0);
  const uint32_t concurrency = add(limiter, Algorithm::kConcurrency, 10, 1'000);
  CHECK(limiter.lend(concurrency, key, 1, 500, 100, &lease) == Status::kInvalidArgument);
  int64_t returned = 0;
  CHECK(limiter.give_back(concurrency, key, 1, 600, &returned) == Status::kInvalidArgument);
  CHECK(limiter.lend(rule, key, 1, 0, 100, &lease) == Status::kInvalidArgument);
}

TEST_CASE("the sliding-window counter lends within the current window and takes back only from it") {
  Limiter limiter(SipHashKey{1, 2});
  const uint32_t rule = add(limiter, Algorithm::kSlidingCounter, 40, 1'000);
  const uint64_t key = hash_of(limiter, "k");
  Lease lease;
  REQUIRE(limiter.lend(rule, key, 100, 5'000, 200, &lease) == Status::kOk);
  CHECK(lease.units == 10);
  CHECK(lease.expires_at_ms == 1'000);
  int64_t returned = 0;
  REQUIRE(limiter.give_back(rule, key, 4, lease.expires_at_ms, &returned) == Status::kOk);
  CHECK(returned == 4);
  // 6 charged in window 0; at 1 500 they weigh half: 3 used of 40.
  Decision d;
  REQUIRE(limiter.check_one(rule, key, 1, 1'500, false, &d) == Status::kOk);
  CHECK(d.remaining == 36);
}

TEST_CASE("a bucket lends as if the units were spent when the lease ends, holding back the drain over it") {
  for (const Algorithm algorithm : {Algorithm::kTokenBucket, Algorithm::kLeakyBucket, Algorithm::kGcra}) {
    INFO("algorithm " << static_cast<int>(algorithm));
    Limiter limiter(SipHashKey{1, 2});
    // 100 per 10 s (10 a second), burst 100: a full bucket at 0.
    const uint32_t rule = add(limiter, algorithm, 100, 10'000);
    const uint64_t key = hash_of(limiter, "k");
    Lease lease;
    // A full bucket and a 2 s lease: 20 units of drain held back, a quarter of the other 80 lent.
    REQUIRE(limiter.lend(rule, key, 1'000, 2'000, 5'000, &lease) == Status::kOk);
    CHECK(lease.units == 20);
    CHECK(lease.expires_at_ms == 7'000);
    CHECK(lease.remaining == 60);
    // A drained bucket holds back nothing more: 40 missing already cover 2 s of drain.
    for (int i = 0; i < 20; ++i) REQUIRE(check(limiter, rule, key, 5'000).allowed);
    Decision d;
    REQUIRE(limiter.check_one(rule, key, 1, 5'000, false, &d) == Status::kOk);
    CHECK(d.remaining == 39);
    REQUIRE(limiter.lend(rule, key, 1'000, 2'000, 5'000, &lease) == Status::kOk);
    CHECK(lease.units == 10);  // (100 - 60) / 4
    CHECK(lease.remaining == 30);
    // Unused units are not taken back: the bucket drains them.
    int64_t returned = -1;
    REQUIRE(limiter.give_back(rule, key, 10, lease.expires_at_ms, &returned) == Status::kOk);
    CHECK(returned == 0);
    // A lease lasts at most a quarter of the full bucket's drain (10 s): 2.5 s, 25 units held back.
    REQUIRE(limiter.lend(rule, key, 1'000, 60'000, 60'000, &lease) == Status::kOk);
    CHECK(lease.expires_at_ms == 62'500);
    CHECK(lease.units == 18);  // (100 - 25) / 4
  }
}

// The buckets' bound, on every span [a, b] of the admissions (cost 1 each): at most capacity plus
// what drains in b - a ms, limit per window_ms.
void require_bucket_bound(std::vector<int64_t> times, int64_t capacity, int64_t limit, int64_t window_ms, uint64_t seed) {
  std::sort(times.begin(), times.end());
  for (size_t i = 0; i < times.size(); ++i) {
    for (size_t j = i; j < times.size(); ++j) {
      const int64_t admitted = static_cast<int64_t>(j - i + 1);
      const int64_t bound = capacity + (times[j] - times[i]) * limit / window_ms;
      if (admitted > bound) {
        INFO("seed " << seed << " span " << times[i] << ".." << times[j] << " admitted " << admitted << " bound " << bound);
        REQUIRE(admitted <= bound);
      }
    }
  }
}

// Several isolates share one key: each decides from its lease while it lasts and otherwise asks the
// object (a direct check, then a lease). In every window, direct and leased admissions together stay
// within the limit; leases are given back at random.
TEST_CASE("direct and leased admissions never exceed the limit in any window") {
  for (const Algorithm algorithm : {Algorithm::kFixedWindow, Algorithm::kSlidingCounter}) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      test::Random random(seed);
      Limiter limiter(SipHashKey{seed, 7});
      const int64_t limit = 1 + static_cast<int64_t>(random.next() % 200);
      const int64_t window_ms = 100 + static_cast<int64_t>(random.next() % 1'000);
      const uint32_t rule = add(limiter, algorithm, limit, window_ms);
      const uint64_t key = hash_of(limiter, "shared");
      struct Held {
        int64_t units = 0;
        int64_t expires_at_ms = 0;
      };
      std::vector<Held> isolates(4);
      std::map<int64_t, int64_t> admitted_per_window;
      int64_t now = static_cast<int64_t>(random.next() % 10'000);
      for (int step = 0; step < 3'000; ++step) {
        now += static_cast<int64_t>(random.next() % 7);
        Held& held = isolates[random.next() % isolates.size()];
        if (random.next() % 50 == 0 && held.units > 0) {
          int64_t returned = 0;
          REQUIRE(limiter.give_back(rule, key, held.units, held.expires_at_ms, &returned) == Status::kOk);
          REQUIRE(returned <= held.units);
          held.units = 0;
          continue;
        }
        if (held.units > 0 && now < held.expires_at_ms) {
          --held.units;
          ++admitted_per_window[now / window_ms];
          continue;
        }
        held.units = 0;  // expired: stranded until its window ends
        if (check(limiter, rule, key, now).allowed) ++admitted_per_window[now / window_ms];
        Lease lease;
        REQUIRE(limiter.lend(rule, key, static_cast<int64_t>(random.next() % 64), 1 + static_cast<int64_t>(random.next() % 2'000), now, &lease) == Status::kOk);
        held.units = lease.units;
        held.expires_at_ms = lease.expires_at_ms;
        REQUIRE((lease.units == 0 || lease.expires_at_ms <= (now / window_ms + 1) * window_ms));
      }
      for (const auto& [window, admitted] : admitted_per_window) {
        INFO("seed " << seed << " window " << window << " limit " << limit);
        REQUIRE(admitted <= limit);
      }
    }
  }
}

// The same for the buckets and GCRA, judged on their own bound over every span. Isolates use their
// units at random times within the lease, the latest right before it ends.
TEST_CASE("direct and leased admissions keep a bucket's bound on every span") {
  for (const Algorithm algorithm : {Algorithm::kTokenBucket, Algorithm::kLeakyBucket, Algorithm::kGcra}) {
    int64_t lent_total = 0;
    for (uint64_t seed = 1; seed <= 30; ++seed) {
      test::Random random(seed);
      Limiter limiter(SipHashKey{seed, 11});
      const int64_t limit = 1 + static_cast<int64_t>(random.next() % 60);
      const int64_t window_ms = 100 + static_cast<int64_t>(random.next() % 2'000);
      RuleConfig config;
      config.algorithm = algorithm;
      config.limit = limit;
      config.window_ms = window_ms;
      config.burst = limit + static_cast<int64_t>(random.next() % (2 * limit + 1));
      uint32_t rule = 0;
      REQUIRE(limiter.add_rule(config, 64, &rule, nullptr) == Status::kOk);
      const uint64_t key = hash_of(limiter, "shared");
      struct Held {
        int64_t units = 0;
        int64_t expires_at_ms = 0;
      };
      std::vector<Held> isolates(4);
      std::vector<int64_t> admitted;
      int64_t now = static_cast<int64_t>(random.next() % 10'000);
      for (int step = 0; step < 1'500; ++step) {
        now += static_cast<int64_t>(random.next() % 5);
        Held& held = isolates[random.next() % isolates.size()];
        if (held.units > 0 && now < held.expires_at_ms) {
          --held.units;
          // Used now, or (a third of the time) as late as the lease allows: the worst case.
          admitted.push_back(random.next() % 3 == 0 ? held.expires_at_ms - 1 : now);
          continue;
        }
        held.units = 0;
        if (check(limiter, rule, key, now).allowed) admitted.push_back(now);
        Lease lease;
        REQUIRE(limiter.lend(rule, key, static_cast<int64_t>(random.next() % 32), 1 + static_cast<int64_t>(random.next() % 400), now, &lease) == Status::kOk);
        held.units = lease.units;
        held.expires_at_ms = lease.expires_at_ms;
        lent_total += lease.units;
      }
      require_bucket_bound(admitted, config.burst, limit, window_ms, seed);
    }
    INFO("algorithm " << static_cast<int>(algorithm));
    CHECK(lent_total > 1'000);  // the leases were real
  }
}
