// Lending ahead (lease.hpp, "lent ahead"): near the end of window w, a fixed window or a sliding counter
// lends units charged to window w + 1, usable only from w + 1's start, so that a warm key's isolate holds
// units when its window starts. What is lent ahead plus everything else never exceeds the rule: the
// fixed window's limit in every window, the sliding counter's own estimate at every admission.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sluice/algorithms/window_ahead.hpp"
#include "sluice/limiter.hpp"
#include "support.hpp"

using namespace sluice;

namespace {

const std::string kKey = "shared";

uint64_t hash_of(const Limiter& limiter, const std::string& key) {
  return limiter.key_hash(reinterpret_cast<const uint8_t*>(key.data()), static_cast<uint32_t>(key.size()));
}

uint32_t add(Limiter& limiter, Algorithm algorithm, int64_t limit, int64_t window_ms, uint32_t key_capacity = 64) {
  RuleConfig config;
  config.algorithm = algorithm;
  config.limit = limit;
  config.window_ms = window_ms;
  uint32_t id = 0;
  REQUIRE(limiter.add_rule(config, key_capacity, &id, nullptr) == Status::kOk);
  return id;
}

Decision check(Limiter& limiter, uint32_t rule, uint64_t hash, int64_t now) {
  Decision d;
  REQUIRE(limiter.check_one(rule, hash, 1, now, true, &d) == Status::kOk);
  return d;
}

std::vector<uint8_t> exported(Limiter& limiter, uint32_t rule) {
  std::vector<uint8_t> out(Limiter::kStateHeaderBytes);
  uint32_t written = 0;
  REQUIRE(limiter.export_state(rule, reinterpret_cast<const uint8_t*>(kKey.data()), static_cast<uint32_t>(kKey.size()),
                               out.data(), static_cast<uint32_t>(out.size()), &written) == Status::kOk);
  return out;
}

Status imported(Limiter& limiter, uint32_t rule, const std::vector<uint8_t>& bytes) {
  return limiter.import_state(rule, reinterpret_cast<const uint8_t*>(kKey.data()), static_cast<uint32_t>(kKey.size()),
                              bytes.data(), static_cast<uint32_t>(bytes.size()));
}

// The fixed window's bound: at most `limit` admissions in every aligned window.
void require_fixed_window_bound(const std::vector<int64_t>& admitted, int64_t limit, int64_t window_ms, uint64_t seed) {
  std::map<int64_t, int64_t> per_window;
  for (const int64_t t : admitted) ++per_window[t / window_ms];
  for (const auto& [window, count] : per_window) {
    INFO("seed " << seed << " window " << window << " admitted " << count << " limit " << limit);
    REQUIRE(count <= limit);
  }
}

// The sliding counter's own rule, at every admission's time t in window w: what window w - 1 admitted,
// weighted by the share of it still inside (t - W, t], plus what w admitted up to t, is at most `limit`.
void require_counter_rule(std::vector<int64_t> admitted, int64_t limit, int64_t window_ms, uint64_t seed) {
  std::sort(admitted.begin(), admitted.end());
  std::map<int64_t, int64_t> per_window;
  for (const int64_t t : admitted) ++per_window[t / window_ms];
  for (size_t i = 0; i < admitted.size(); ++i) {
    const int64_t t = admitted[i];
    const int64_t window = t / window_ms;
    const int64_t elapsed = t - window * window_ms;
    // Everything admitted in w at or before t (ties included: they share the instant).
    const auto first_in_window = std::lower_bound(admitted.begin(), admitted.end(), window * window_ms);
    const auto after_t = std::upper_bound(admitted.begin(), admitted.end(), t);
    const int64_t current = after_t - first_in_window;
    const int64_t previous = per_window.count(window - 1) != 0 ? per_window[window - 1] : 0;
    const int64_t weighted = previous * (window_ms - elapsed) + current * window_ms;
    INFO("seed " << seed << " at " << t << ": previous " << previous << " current " << current << " limit " << limit);
    REQUIRE(weighted <= limit * window_ms);
  }
}

bool is_evicted(Limiter& limiter, uint32_t rule) {
  uint8_t out[Limiter::kStateHeaderBytes];
  uint32_t written = 0;
  return limiter.export_state(rule, reinterpret_cast<const uint8_t*>(kKey.data()), static_cast<uint32_t>(kKey.size()), out,
                              sizeof(out), &written) == Status::kNotFound;
}

enum class Copying { kNone, kExportImport, kEviction };

}  // namespace

TEST_CASE("a fixed window lends its next window ahead near its end, usable from that window's start", "[lease][ahead]") {
  Limiter limiter(SipHashKey{1, 2});
  const uint32_t rule = add(limiter, Algorithm::kFixedWindow, 100, 60'000);
  const uint64_t key = hash_of(limiter, kKey);
  Lease lease;
  // 2 s before window 0 ends, with 1 s ahead: from window 0, until its end.
  REQUIRE(limiter.lend(rule, key, 40, 5'000, 58'000, &lease, 1'000) == Status::kOk);
  CHECK(lease.units == 25);
  CHECK(lease.starts_at_ms == 58'000);
  CHECK(lease.expires_at_ms == 60'000);
  // 0.5 s before it ends: from window 1, for the lease's length from its start.
  REQUIRE(limiter.lend(rule, key, 40, 5'000, 59'500, &lease, 1'000) == Status::kOk);
  CHECK(lease.units == 25);
  CHECK(lease.starts_at_ms == 60'000);
  CHECK(lease.expires_at_ms == 65'000);
  CHECK(lease.remaining == 75);  // what window 1 has left
  // Window 0 keeps its own count (25 lent from it): windows are separate.
  CHECK(check(limiter, rule, key, 59'600).remaining == 74);
  // Another lend ahead takes a quarter of what window 1 has left.
  REQUIRE(limiter.lend(rule, key, 40, 5'000, 59'700, &lease, 1'000) == Status::kOk);
  CHECK(lease.units == 18);
  // Given back before window 1 is charged anything: off what is ahead.
  int64_t returned = -1;
  REQUIRE(limiter.give_back(rule, key, 8, 65'000, &returned) == Status::kOk);
  CHECK(returned == 8);
  // In window 1 the units lent ahead count from its start: 25 + 18 - 8 = 35 of 100.
  CHECK(check(limiter, rule, key, 60'001).remaining == 64);
  // Given back in window 1, now counted in it.
  REQUIRE(limiter.give_back(rule, key, 10, 65'000, &returned) == Status::kOk);
  CHECK(returned == 10);
  CHECK(check(limiter, rule, key, 60'002).remaining == 73);
  // What is lent ahead delays retries and the reset: a request of 80 does not fit beside the 25 lent
  // into window 1, so it is admitted at window 2's start, not 1's; one of 75 at 1's.
  Decision d;
  Limiter fresh(SipHashKey{1, 2});
  const uint32_t r = add(fresh, Algorithm::kFixedWindow, 100, 60'000);
  REQUIRE(fresh.lend(r, key, 40, 5'000, 59'500, &lease, 1'000) == Status::kOk);
  REQUIRE(lease.units == 25);
  REQUIRE(fresh.check_one(r, key, 100, 59'600, true, &d) == Status::kOk);
  REQUIRE(d.allowed);
  REQUIRE(fresh.check_one(r, key, 80, 59'600, false, &d) == Status::kOk);
  CHECK_FALSE(d.allowed);
  CHECK(d.retry_after_ms == 120'000 - 59'600);
  CHECK(d.reset_ms == 120'000 - 59'600);
  REQUIRE(fresh.check_one(r, key, 75, 59'600, false, &d) == Status::kOk);
  CHECK(d.retry_after_ms == 60'000 - 59'600);
  // A sliding log and a bucket lend nothing ahead, whatever ahead_ms: their leases start at once.
  const uint32_t log = add(limiter, Algorithm::kSlidingLog, 100, 60'000);
  REQUIRE(check(limiter, log, key, 59'000).allowed);
  REQUIRE(limiter.lend(log, key, 40, 5'000, 59'500, &lease, 1'000) == Status::kOk);
  CHECK(lease.units > 0);
  CHECK(lease.starts_at_ms == 59'500);
  const uint32_t bucket = add(limiter, Algorithm::kTokenBucket, 100, 60'000);
  REQUIRE(limiter.lend(bucket, key, 10, 5'000, 59'500, &lease, 1'000) == Status::kOk);
  CHECK(lease.units > 0);
  CHECK(lease.starts_at_ms == 59'500);
  // Without ahead_ms nothing is lent ahead: from window 1, until its end.
  REQUIRE(limiter.lend(rule, key, 4, 5'000, 119'900, &lease) == Status::kOk);
  CHECK(lease.starts_at_ms == 119'900);
  CHECK(lease.expires_at_ms == 120'000);
}

TEST_CASE("a sliding counter lends ahead at most what its next window's start can take, and keeps room for it", "[lease][ahead]") {
  Limiter limiter(SipHashKey{1, 2});
  const uint32_t rule = add(limiter, Algorithm::kSlidingCounter, 40, 1'000);
  const uint64_t key = hash_of(limiter, kKey);
  for (int i = 0; i < 20; ++i) REQUIRE(check(limiter, rule, key, 100).allowed);
  Lease lease;
  // At window 1's start window 0's 20 weigh in whole: 20 left there, a quarter lent.
  REQUIRE(limiter.lend(rule, key, 100, 300, 900, &lease, 200) == Status::kOk);
  CHECK(lease.units == 5);
  CHECK(lease.starts_at_ms == 1'000);
  CHECK(lease.expires_at_ms == 1'300);
  CHECK(lease.remaining == 15);
  // Window 0 keeps room for them: 20 + 15 more, not 20 more.
  Decision d;
  REQUIRE(limiter.check_one(rule, key, 1, 950, false, &d) == Status::kOk);
  CHECK(d.remaining == 14);
  int admitted = 0;
  while (check(limiter, rule, key, 950).allowed) ++admitted;
  CHECK(admitted == 15);
  // At window 1's start: 35 previous in whole plus 5 ahead: nothing left; half a window later 17.5 + 5.
  REQUIRE(limiter.check_one(rule, key, 1, 1'000, false, &d) == Status::kOk);
  CHECK_FALSE(d.allowed);
  REQUIRE(limiter.check_one(rule, key, 1, 1'500, false, &d) == Status::kOk);
  CHECK(d.remaining == 16);
  // With count_denied nothing is lent ahead (a denial could grow the window's count past the room).
  Limiter counting(SipHashKey{1, 2});
  RuleConfig config;
  config.algorithm = Algorithm::kSlidingCounter;
  config.limit = 40;
  config.window_ms = 1'000;
  config.count_denied = true;
  uint32_t counting_rule = 0;
  REQUIRE(counting.add_rule(config, 64, &counting_rule, nullptr) == Status::kOk);
  REQUIRE(counting.lend(counting_rule, key, 100, 300, 900, &lease, 200) == Status::kOk);
  CHECK(lease.units == 0);
}

TEST_CASE("units lent ahead survive export and import, and the eviction summary", "[lease][ahead]") {
  for (const Algorithm algorithm : {Algorithm::kFixedWindow, Algorithm::kSlidingCounter}) {
    INFO("algorithm " << static_cast<int>(algorithm));
    Limiter limiter(SipHashKey{3, 4});
    limiter.set_table_growth(1, 0);
    const uint32_t rule = add(limiter, algorithm, 40, 1'000, 1);  // one slot: the next key evicts this one
    const uint64_t key = hash_of(limiter, kKey);
    Lease lease;
    REQUIRE(limiter.lend(rule, key, 100, 500, 900, &lease, 200) == Status::kOk);
    REQUIRE(lease.units == 10);
    const std::vector<uint8_t> bytes = exported(limiter, rule);
    Limiter copy(SipHashKey{3, 4});
    const uint32_t copy_rule = add(copy, algorithm, 40, 1'000);
    REQUIRE(imported(copy, copy_rule, bytes) == Status::kOk);
    // An exported state with more lent ahead than the limit is refused.
    std::vector<uint8_t> corrupt = bytes;
    corrupt[13] = static_cast<uint8_t>(corrupt[13] | 0x08);  // bit 43 + 64 units ahead: 74 > 40
    corrupt[14] = static_cast<uint8_t>(corrupt[14] | 0x01);
    CHECK(imported(copy, copy_rule, corrupt) == Status::kInvalidState);
    // Busier keys take the table's slots (8) until the shared key, the least used, is folded into the
    // summary, ahead units included.
    for (int other = 0; other < 64 && !is_evicted(limiter, rule); ++other) {
      Decision d;
      REQUIRE(limiter.check_one(rule, hash_of(limiter, "other" + std::to_string(other)), 15, 950, true, &d) == Status::kOk);
    }
    REQUIRE(is_evicted(limiter, rule));
    // In window 1 more keys come and go: the summary folds their states (of window 1) over the shared
    // key's (of window 0, with 10 ahead), which must become window 1's count, not be lost.
    for (int other = 64; other < 600; ++other) {
      Decision d;
      REQUIRE(limiter.check_one(rule, hash_of(limiter, "other" + std::to_string(other)), 5, 1'000, true, &d) == Status::kOk);
    }
    Decision d;
    REQUIRE(copy.check_one(copy_rule, key, 1, 1'001, false, &d) == Status::kOk);
    CHECK(d.remaining == 29);  // the 10 lent ahead count in window 1
    // The summary's start is at least as restrictive (other keys share its cells).
    REQUIRE(limiter.check_one(rule, key, 1, 1'001, false, &d) == Status::kOk);
    CHECK(d.remaining <= 29);
  }
}

// Four isolates share one key: each decides from its leases while they last (a lease lent ahead only
// from its start) and otherwise asks the object (a direct check, then a lease, often with ahead_ms).
// Leases are given back at random; the key's state moves to a new limiter (export/import) or is evicted
// into the summary. Each unit lent is used at any time its lease allows (its start, its last
// millisecond, or between): the fixed window never admits more than its limit in a window, the sliding
// counter never past its own estimate.
TEST_CASE("direct, leased and lent-ahead admissions never exceed a window rule", "[lease][ahead][ahead-property]") {
  for (const Algorithm algorithm : {Algorithm::kFixedWindow, Algorithm::kSlidingCounter}) {
    for (const Copying copying : {Copying::kNone, Copying::kExportImport, Copying::kEviction}) {
      int64_t lent_ahead_total = 0;
      int64_t given_back_ahead = 0;
      int64_t evicted = 0;
      for (uint64_t seed = 1; seed <= 40; ++seed) {
        test::Random random(seed * 11 + static_cast<uint64_t>(copying));
        const int64_t limit = random.between(1, 150);
        const int64_t window_ms = random.between(100, 1'500);
        const uint32_t capacity = copying == Copying::kEviction ? 2 : 64;
        auto limiter = std::make_unique<Limiter>(SipHashKey{seed, 17});
        if (copying == Copying::kEviction) limiter->set_table_growth(1, 0);
        uint32_t rule = add(*limiter, algorithm, limit, window_ms, capacity);
        const uint64_t key = hash_of(*limiter, kKey);
        struct Held {
          int64_t units = 0;
          int64_t start = 0;
          int64_t expires_at_ms = 0;
        };
        std::vector<Held> isolates(8);  // two leases per isolate: its current one and one lent ahead
        std::vector<int64_t> admitted;
        int64_t now = random.between(0, 10'000);
        for (int step = 0; step < 3'000; ++step) {
          // Mostly a few ms; now and then a window or two passes with nothing charged.
          now += random.percent(2) ? random.between(window_ms / 2, 2 * window_ms) : random.between(0, 8);
          if (copying == Copying::kExportImport && step % 200 == 199) {
            const std::vector<uint8_t> bytes = exported(*limiter, rule);
            limiter = std::make_unique<Limiter>(SipHashKey{seed, 17});
            rule = add(*limiter, algorithm, limit, window_ms, capacity);
            REQUIRE(imported(*limiter, rule, bytes) == Status::kOk);
          }
          if (copying == Copying::kEviction && random.percent(5)) {
            // Busier keys take the slots (the table evicts the least used); they lend ahead too, so the
            // summary folds units lent ahead.
            for (int other = 0; other < 12; ++other) {
              const uint64_t filler = hash_of(*limiter, "filler" + std::to_string(random.between(0, 49)));
              Decision ignored;
              REQUIRE(limiter->check_one(rule, filler, std::max<int64_t>(1, limit / 2), now, true, &ignored) == Status::kOk);
              Lease lent;
              REQUIRE(limiter->lend(rule, filler, 8, window_ms, now, &lent, window_ms / 2) == Status::kOk);
            }
            evicted += is_evicted(*limiter, rule) ? 1 : 0;
          }
          Held& held = isolates[random.next() % isolates.size()];
          if (held.units > 0 && random.percent(3)) {
            int64_t returned = 0;
            REQUIRE(limiter->give_back(rule, key, held.units, held.expires_at_ms, &returned) == Status::kOk);
            REQUIRE(returned >= 0);
            REQUIRE(returned <= held.units);
            if (held.start > now) given_back_ahead += returned;
            held.units = 0;
            continue;
          }
          if (held.units > 0 && now < held.expires_at_ms) {
            // Used at any time the lease allows (never before its start).
            --held.units;
            const int64_t last = held.expires_at_ms - 1;
            const int64_t how = random.between(0, 2);
            admitted.push_back(how == 0 ? held.start : how == 1 ? last : random.between(held.start, last));
            continue;
          }
          held.units = 0;  // expired: stranded until its window ends
          if (check(*limiter, rule, key, now).allowed) admitted.push_back(now);
          Lease lease;
          const int64_t ahead_ms = random.percent(60) ? random.between(0, window_ms) : 0;
          REQUIRE(limiter->lend(rule, key, random.between(0, 40), random.between(1, 2 * window_ms), now, &lease, ahead_ms) == Status::kOk);
          if (lease.units == 0) continue;
          const int64_t next_window = (now / window_ms + 1) * window_ms;
          if (lease.starts_at_ms != now) {
            REQUIRE(lease.starts_at_ms == next_window);
            REQUIRE(next_window - now <= ahead_ms);
            REQUIRE(lease.expires_at_ms <= next_window + window_ms);
            lent_ahead_total += lease.units;
          } else {
            REQUIRE(lease.expires_at_ms <= next_window);
          }
          REQUIRE(lease.expires_at_ms > lease.starts_at_ms);
          held = Held{lease.units, lease.starts_at_ms, lease.expires_at_ms};
        }
        if (algorithm == Algorithm::kFixedWindow) {
          require_fixed_window_bound(admitted, limit, window_ms, seed);
        } else {
          require_counter_rule(admitted, limit, window_ms, seed);
        }
      }
      INFO("algorithm " << static_cast<int>(algorithm) << " copying " << static_cast<int>(copying) << " lent ahead "
                        << lent_ahead_total << " given back ahead " << given_back_ahead << " evicted " << evicted);
      CHECK(lent_ahead_total > 1'000);  // the leases ahead were real
      CHECK(given_back_ahead > 0);
      if (copying == Copying::kEviction) CHECK(evicted > 100);
    }
  }
}
