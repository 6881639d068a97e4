// Leases of a sliding-window log (sliding_log::lend / give_back, lease.hpp): lent units are entries at
// the lease's end, marked as lent, so that direct and leased admissions together never exceed the
// limit in any window (t - window_ms, t], whenever in its lease an isolate uses a unit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/eviction_summary.hpp"
#include "sluice/limiter.hpp"
#include "support.hpp"

using namespace sluice;

namespace {

uint64_t hash_of(const Limiter& limiter, const std::string& key) {
  return limiter.key_hash(reinterpret_cast<const uint8_t*>(key.data()), static_cast<uint32_t>(key.size()));
}

uint32_t add_log(Limiter& limiter, int64_t limit, int64_t window_ms, uint32_t key_capacity = 64) {
  RuleConfig config;
  config.algorithm = Algorithm::kSlidingLog;
  config.limit = limit;
  config.window_ms = window_ms;
  uint32_t id = 0;
  REQUIRE(limiter.add_rule(config, key_capacity, &id, nullptr) == Status::kOk);
  return id;
}

bool admits(Limiter& limiter, uint32_t rule, uint64_t hash, int64_t now) {
  Decision d;
  REQUIRE(limiter.check_one(rule, hash, 1, now, true, &d) == Status::kOk);
  return d.allowed;
}

int admitted_of(Limiter& limiter, uint32_t rule, uint64_t hash, int64_t now, int tries) {
  int admitted = 0;
  for (int i = 0; i < tries; ++i) admitted += admits(limiter, rule, hash, now) ? 1 : 0;
  return admitted;
}

const std::string kKey = "shared";

std::vector<uint8_t> exported(Limiter& limiter, uint32_t rule) {
  uint32_t bytes = 0;
  REQUIRE(limiter.exported_state_bytes(rule, &bytes) == Status::kOk);
  std::vector<uint8_t> out(bytes);
  uint32_t written = 0;
  REQUIRE(limiter.export_state(rule, reinterpret_cast<const uint8_t*>(kKey.data()), static_cast<uint32_t>(kKey.size()),
                               out.data(), bytes, &written) == Status::kOk);
  out.resize(written);
  return out;
}

Status imported(Limiter& limiter, uint32_t rule, const std::vector<uint8_t>& bytes) {
  return limiter.import_state(rule, reinterpret_cast<const uint8_t*>(kKey.data()), static_cast<uint32_t>(kKey.size()),
                              bytes.data(), static_cast<uint32_t>(bytes.size()));
}

// The most admissions in any window (t - window_ms, t]: the worst window ends at an admission.
int64_t most_in_a_window(std::vector<int64_t> times, int64_t window_ms, int64_t* worst_end) {
  std::sort(times.begin(), times.end());
  int64_t most = 0;
  size_t first = 0;
  for (size_t last = 0; last < times.size(); ++last) {
    while (times[first] <= times[last] - window_ms) ++first;
    if (static_cast<int64_t>(last - first + 1) > most) {
      most = static_cast<int64_t>(last - first + 1);
      *worst_end = times[last];
    }
  }
  return most;
}

bool is_evicted(Limiter& limiter, uint32_t rule) {
  uint8_t out[Limiter::kStateHeaderBytes + 8 * 128];
  uint32_t written = 0;
  return limiter.export_state(rule, reinterpret_cast<const uint8_t*>(kKey.data()), static_cast<uint32_t>(kKey.size()), out,
                              sizeof(out), &written) == Status::kNotFound;
}

enum class Copying { kNone, kExportImport, kEviction };

}  // namespace

// Four isolates share one key: each uses its lease's units at random times within the lease (often
// at its very start or its last millisecond), and otherwise asks the object (a direct check, then a
// lease). Leases are given back at random, and time steps back a little now and then. The oracle is
// the admissions themselves, direct ones at the time the log records them (the call's time, or the
// key's newest direct admission if time ran backwards), lent ones when used.
TEST_CASE("direct and leased admissions never exceed a sliding log's limit in any window", "[lease][log]") {
  for (const Copying copying : {Copying::kNone, Copying::kExportImport, Copying::kEviction}) {
    int64_t lent_total = 0;
    int64_t given_back_total = 0;
    int64_t evicted = 0;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      test::Random random(seed * 7 + static_cast<uint64_t>(copying));
      const int64_t limit = random.between(1, 120);
      const int64_t window_ms = random.between(100, 2'000);
      // A small table (8 slots) for many keys: the shared key is evicted and rebuilt from the summary often.
      const uint32_t capacity = copying == Copying::kEviction ? 2 : 64;
      auto limiter = std::make_unique<Limiter>(SipHashKey{seed, 13});
      // The eviction case is about eviction: its table stays small (no growth).
      if (copying == Copying::kEviction) limiter->set_table_growth(1, 0);
      uint32_t rule = add_log(*limiter, limit, window_ms, capacity);
      const uint64_t key = hash_of(*limiter, kKey);
      struct Held {
        int64_t units = 0;
        int64_t start = 0;
        int64_t expires_at_ms = 0;
      };
      std::vector<Held> isolates(4);
      std::vector<int64_t> admitted;
      int64_t now = random.between(0, 10'000);
      int64_t newest_direct = -1;
      // The eviction summary judges what is live at the eviction's time (docs/core.md), a limit of the
      // summary, not of leases: after an eviction, time does not step back before it.
      int64_t floor = 0;
      for (int step = 0; step < 3'000; ++step) {
        now = random.percent(4) ? std::max(floor, now - random.between(1, window_ms / 8)) : now + random.between(0, 6);
        if (copying == Copying::kExportImport && step % 200 == 199) {
          // The object restarts: its key state moves, as bytes, into a new limiter.
          const std::vector<uint8_t> bytes = exported(*limiter, rule);
          limiter = std::make_unique<Limiter>(SipHashKey{seed, 13});
          rule = add_log(*limiter, limit, window_ms, capacity);
          REQUIRE(imported(*limiter, rule, bytes) == Status::kOk);
          REQUIRE(exported(*limiter, rule) == bytes);
        }
        if (copying == Copying::kEviction && random.percent(3)) {
          // Busier keys take the slots (the table evicts the least used); they lend too, so the
          // summary folds leases' ends.
          for (int other = 0; other < 24; ++other) {
            const uint64_t filler = hash_of(*limiter, "filler" + std::to_string(random.between(0, 99)));
            Decision ignored;
            REQUIRE(limiter->check_one(rule, filler, std::max<int64_t>(1, limit * 3 / 4), now, true, &ignored) == Status::kOk);
            Lease lent;
            REQUIRE(limiter->lend(rule, filler, 8, window_ms, now, &lent) == Status::kOk);
          }
          evicted += is_evicted(*limiter, rule) ? 1 : 0;
          floor = std::max(floor, now);
        }
        Held& held = isolates[random.next() % isolates.size()];
        if (held.units > 0 && random.percent(4)) {
          int64_t returned = 0;
          REQUIRE(limiter->give_back(rule, key, held.units, held.expires_at_ms, &returned) == Status::kOk);
          REQUIRE(returned >= 0);
          REQUIRE(returned <= held.units);
          given_back_total += returned;
          held.units = 0;
          continue;
        }
        if (held.units > 0 && now < held.expires_at_ms) {
          --held.units;
          const int64_t last = held.expires_at_ms - 1;
          const int64_t how = random.between(0, 2);
          admitted.push_back(how == 0 ? held.start : how == 1 ? last : random.between(held.start, last));
          continue;
        }
        held.units = 0;  // expired: stranded until its lease's end leaves the window
        if (admits(*limiter, rule, key, now)) {
          newest_direct = std::max(newest_direct, now);
          admitted.push_back(newest_direct);
        }
        Lease lease;
        REQUIRE(limiter->lend(rule, key, random.between(0, 64), random.between(1, 2 * window_ms), now, &lease) == Status::kOk);
        REQUIRE(lease.units >= 0);
        if (lease.units == 0) continue;
        REQUIRE(now >= newest_direct);
        REQUIRE(lease.expires_at_ms > now);
        REQUIRE(lease.expires_at_ms <= now + window_ms / kLogLeaseShareOfWindow);
        held = Held{lease.units, now, lease.expires_at_ms};
        lent_total += lease.units;
      }
      int64_t worst_end = 0;
      const int64_t most = most_in_a_window(admitted, window_ms, &worst_end);
      INFO("copying " << static_cast<int>(copying) << " seed " << seed << " limit " << limit << " window_ms " << window_ms
                      << ": " << most << " admitted in the window ending at " << worst_end);
      REQUIRE(most <= limit);
    }
    INFO("copying " << static_cast<int>(copying) << " lent " << lent_total << " given back " << given_back_total);
    CHECK(lent_total > 1'000);  // the leases were real
    CHECK(given_back_total > 100);
    if (copying == Copying::kEviction) CHECK(evicted > 100);
  }
}

TEST_CASE("a sliding log takes back exactly the unused units of a lease's end, which are admitted again", "[lease][log]") {
  Limiter limiter(SipHashKey{1, 2});
  const uint32_t rule = add_log(limiter, 40, 1'000);
  const uint64_t key = hash_of(limiter, "k");
  Lease lease;
  REQUIRE(limiter.lend(rule, key, 100, 500, 0, &lease) == Status::kOk);
  CHECK(lease.units == 0);  // no direct admission yet: the first request goes to the object
  REQUIRE(admits(limiter, rule, key, 0));
  REQUIRE(limiter.lend(rule, key, 100, 5'000, 100, &lease) == Status::kOk);
  CHECK(lease.units == 9);            // (40 - 1) / kLendShare
  CHECK(lease.expires_at_ms == 350);  // the lease capped at a quarter window
  CHECK(lease.remaining == 30);
  Lease second;
  REQUIRE(limiter.lend(rule, key, 100, 250, 100, &second) == Status::kOk);
  CHECK(second.units == 7);  // (40 - 1 - 9) / kLendShare
  CHECK(second.expires_at_ms == 350);
  int64_t returned = -1;
  REQUIRE(limiter.give_back(rule, key, 4, 350, &returned) == Status::kOk);
  CHECK(returned == 4);
  REQUIRE(limiter.give_back(rule, key, 3, 351, &returned) == Status::kOk);
  CHECK(returned == 0);  // no lease ends then
  REQUIRE(limiter.give_back(rule, key, 100, 350, &returned) == Status::kOk);
  CHECK(returned == 12);  // leases with the same end are interchangeable: 9 + 7 - 4
  REQUIRE(limiter.give_back(rule, key, 1, 350, &returned) == Status::kOk);
  CHECK(returned == 0);
  // Every returned unit is admitted again: 39 left beside the direct admission at 0.
  CHECK(admitted_of(limiter, rule, key, 200, 50) == 39);
  // A direct admission is never taken back as lent.
  REQUIRE(limiter.give_back(rule, key, 1, 200, &returned) == Status::kOk);
  CHECK(returned == 0);
}

TEST_CASE("a direct admission before a lease's end goes before it, and decisions count the lease", "[lease][log]") {
  Limiter limiter(SipHashKey{1, 2});
  const uint32_t rule = add_log(limiter, 10, 1'000);
  const uint64_t key = hash_of(limiter, "k");
  REQUIRE(admits(limiter, rule, key, 0));
  Lease lease;
  REQUIRE(limiter.lend(rule, key, 100, 250, 0, &lease) == Status::kOk);
  CHECK(lease.units == 2);  // (10 - 1) / kLendShare, recorded at 250
  Decision d;
  REQUIRE(limiter.check_one(rule, key, 1, 100, true, &d) == Status::kOk);
  CHECK(d.allowed);
  CHECK(d.remaining == 6);
  CHECK(d.reset_ms == 250 + 1'000 - 100);  // full again once the lease's end leaves the window
  CHECK(admitted_of(limiter, rule, key, 100, 10) == 6);
  REQUIRE(limiter.check_one(rule, key, 1, 100, true, &d) == Status::kOk);
  CHECK_FALSE(d.allowed);
  CHECK(d.retry_after_ms == 1'000 - 100);  // when the entry at 0 leaves
  // At 1 200 the entries at 0 and 100 have left; the lease's 2 (at 250) have not: 8 admitted.
  CHECK(admitted_of(limiter, rule, key, 1'200, 10) == 8);
}

// The attack a lease's end invites: read as a direct entry, an entry in the future becomes the key's
// clock and expires older entries early. Copies of the key must keep it marked, or read every entry
// as late as the newest.
TEST_CASE("a lease's end copied out of a sliding log never expires older entries early", "[lease][log]") {
  // 4 admitted at 10, 1 lent at 800 until 1 050: at 900 the window (-100, 900] holds 4, and the
  // lent unit may be used in it: 5 more, no more.
  const auto prepare = [](Limiter& limiter, uint32_t rule, uint64_t key) {
    for (int i = 0; i < 4; ++i) REQUIRE(admits(limiter, rule, key, 10));
    Lease lease;
    REQUIRE(limiter.lend(rule, key, 100, 250, 800, &lease) == Status::kOk);
    REQUIRE(lease.units == 1);
    REQUIRE(lease.expires_at_ms == 1'050);
  };
  SECTION("export and import") {
    Limiter from(SipHashKey{1, 2});
    const uint32_t rule = add_log(from, 10, 1'000);
    prepare(from, rule, hash_of(from, kKey));
    const std::vector<uint8_t> bytes = exported(from, rule);
    Limiter to(SipHashKey{1, 2});
    const uint32_t copy = add_log(to, 10, 1'000);
    REQUIRE(imported(to, copy, bytes) == Status::kOk);
    CHECK(admitted_of(to, copy, hash_of(to, kKey), 900, 10) == 5);
    // The lent unit is still taken back after the copy.
    int64_t returned = 0;
    REQUIRE(to.give_back(copy, hash_of(to, kKey), 1, 1'050, &returned) == Status::kOk);
    CHECK(returned == 1);
  }
  SECTION("a state of lent entries only is refused: they would have no clock") {
    Limiter from(SipHashKey{1, 2});
    const uint32_t rule = add_log(from, 10, 1'000);
    prepare(from, rule, hash_of(from, kKey));
    std::vector<uint8_t> bytes = exported(from, rule);
    // Keep only the last entry (the lent one): count 1, the header's b.
    std::vector<uint8_t> lent_only(bytes.begin(), bytes.begin() + Limiter::kStateHeaderBytes);
    lent_only.insert(lent_only.end(), bytes.end() - 8, bytes.end());
    const int64_t one = 1;
    std::memcpy(lent_only.data() + 16, &one, 8);
    Limiter to(SipHashKey{1, 2});
    const uint32_t copy = add_log(to, 10, 1'000);
    CHECK(imported(to, copy, lent_only) == Status::kInvalidState);
  }
  SECTION("eviction and the summary") {
    Limiter limiter(SipHashKey{1, 2});
    limiter.set_table_growth(1, 0);
    const uint32_t rule = add_log(limiter, 10, 1'000, 1);  // one slot: the next key evicts this one
    const uint64_t key = hash_of(limiter, kKey);
    prepare(limiter, rule, key);
    // Busier keys take the table's slots (8) until this one, the least used, is evicted.
    for (int other = 0; other < 64 && !is_evicted(limiter, rule); ++other) {
      Decision d;
      REQUIRE(limiter.check_one(rule, hash_of(limiter, "other" + std::to_string(other)), 8, 850, true, &d) == Status::kOk);
    }
    REQUIRE(is_evicted(limiter, rule));
    CHECK(admitted_of(limiter, rule, key, 900, 10) <= 5);
    // The lent unit, used as late as 1 049, and the admissions at 900 share the window ending at
    // 1 850 (and so do those at 10 and at 900, ending at 909): at most 10 - 1 - 5 more then.
    CHECK(admitted_of(limiter, rule, key, 1'850, 10) <= 4);
  }
}

// Two evicted keys whose summaries share cells: one holds entries at 1 100 (live until 2 100), the
// other a unit lent at 2 000 until 2 250. At 2 000 the first still counts: the lease's end, a quarter
// window past the clock, must not make the summary judge it gone.
TEST_CASE("the eviction summary does not judge a log's entries gone by a lease's end", "[lease][log]") {
  Rule rule;
  RuleConfig config;
  config.algorithm = Algorithm::kSlidingLog;
  config.limit = 10;
  config.window_ms = 1'000;
  REQUIRE(make_rule(config, &rule, nullptr) == Status::kOk);
  EvictionSummary summary;
  REQUIRE(summary.init(16) == Status::kOk);
  const uint64_t hash = 0x1234'5678'9abc'def0ULL;  // the same hash: the same cells in every row
  summary.fold(rule, hash, KeyState{1'100, 6});
  summary.fold(rule, hash, KeyState{2'250, 1});
  KeyState start;
  REQUIRE(summary.start_for(rule, hash, &start));
  CHECK(start.a == 2'250);
  CHECK(start.b == 6);
}
