// The concurrency rule: acquire, release and renew for named holders, leases that expire, time that
// runs backwards, state bytes, and a property test that no stream of operations ever has more than
// `limit` units live at once.
#include <algorithm>
#include <map>
#include <sstream>

#include "support.hpp"

namespace {

using namespace sluice;
using namespace sluice::test;
using Op = concurrency::Op;

constexpr int64_t t0 = 1'700'000'000'000;

// Conn is a Harness with one concurrency rule and one-call operations that REQUIRE kOk.
struct Conn {
  explicit Conn(int64_t max, int64_t lease_ms, uint32_t key_capacity = 100)
      : rule(h.add(Algorithm::kConcurrency, max, lease_ms, 0, key_capacity)) {}

  Decision op(Op what, std::string_view key, uint32_t holder, int64_t now, int64_t cost = 1) {
    Decision d;
    const Status status = h.limiter.concurrency(rule, h.limiter.key_hash(bytes_of(key), static_cast<uint32_t>(key.size())),
                                                what, holder, cost, now, &d);
    if (status != Status::kOk) FAIL("concurrency: " << name_of(status));
    return d;
  }
  Decision acquire(uint32_t holder, int64_t now, int64_t cost = 1) { return op(Op::kAcquire, "k", holder, now, cost); }
  Decision release(uint32_t holder, int64_t now) { return op(Op::kRelease, "k", holder, now); }
  Decision renew(uint32_t holder, int64_t now) { return op(Op::kRenew, "k", holder, now); }

  Harness h;
  uint32_t rule;
};

// One row of a scenario table: operation, holder, time offset, cost, then what it must report.
struct Step {
  Op op;
  uint32_t holder;
  int64_t at;
  int64_t cost;
  bool allowed;
  int64_t remaining;
  int64_t retry_after_ms;
};

void run_table(Conn& c, std::initializer_list<Step> steps) {
  int index = 0;
  for (const Step& s : steps) {
    INFO("step " << index);
    const Decision d = c.op(s.op, "k", s.holder, t0 + s.at, s.cost);
    CHECK(d.allowed == s.allowed);
    CHECK(d.remaining == s.remaining);
    CHECK(d.retry_after_ms == s.retry_after_ms);
    ++index;
  }
}

TEST_CASE("concurrency: acquire up to max, release frees a slot, never below zero", "[concurrency]") {
  Conn c(2, 10'000);
  run_table(c, {
      //  op            holder  at    cost  allowed remaining retry
      {Op::kAcquire,      1,    0,     1,   true,    1,        0},
      {Op::kAcquire,      2,    5,     1,   true,    0,        0},
      {Op::kAcquire,      3,   10,     1,   false,   0,   9'990},  // full: holder 1's lease runs out at 10 000
      {Op::kRelease,      1,   20,     1,   true,    1,        0},
      {Op::kAcquire,      3,   30,     1,   true,    0,        0},
      {Op::kRelease,      1,   40,     1,   false,   0,        0},  // already released: nothing freed
      {Op::kRelease,     99,   50,     1,   false,   0,        0},  // never acquired: nothing freed
      {Op::kRelease,      2,   60,     1,   true,    1,        0},
      {Op::kRelease,      3,   70,     1,   true,    2,        0},
      {Op::kRelease,      3,   80,     1,   false,   2,        0},  // never below zero
      {Op::kAcquire,      4,   90,     2,   true,    0,        0},
      {Op::kAcquire,      5,  100,     3,   false,   0,       -1},  // more than max can ever hold: never
  });
}

TEST_CASE("concurrency: a holder that never releases expires after the lease", "[concurrency]") {
  Conn c(1, 1'000);
  run_table(c, {
      {Op::kAcquire, 1,     0, 1, true,  0,   0},
      {Op::kAcquire, 2,   999, 1, false, 0,   1},
      {Op::kAcquire, 2, 1'000, 1, true,  0,   0},   // holder 1 vanished; its lease ran out
      {Op::kRenew,   1, 1'001, 1, false, 0,   0},   // too late: the slot is holder 2's now
      {Op::kRelease, 1, 1'002, 1, false, 0,   0},   // and releasing it frees nothing of holder 2's
      {Op::kAcquire, 3, 1'003, 1, false, 0, 997},
  });
}

TEST_CASE("concurrency: renewing restarts that holder's lease only", "[concurrency]") {
  Conn c(2, 1'000);
  run_table(c, {
      {Op::kAcquire, 1,     0, 1, true,  1,   0},
      {Op::kAcquire, 2,   100, 1, true,  0,   0},
      {Op::kRenew,   2,   900, 1, true,  0,   0},   // holder 2 renews; holder 1 does not
      {Op::kAcquire, 3,   999, 1, false, 0,   1},   // holder 1's lease is the oldest
      {Op::kAcquire, 3, 1'000, 1, true,  0,   0},   // holder 1 expired; holder 2 still holds
      {Op::kAcquire, 4, 1'500, 1, false, 0, 400},   // holder 2's renewed lease runs to 1 900
      {Op::kRenew,   2, 1'800, 1, true,  0,   0},
      {Op::kAcquire, 4, 1'999, 1, false, 0, 1},     // holder 3 (acquired at 1 000) goes first
  });
}

TEST_CASE("concurrency: a holder's units of cost > 1 are released and renewed together", "[concurrency]") {
  Conn c(5, 1'000);
  run_table(c, {
      {Op::kAcquire, 7,   0, 3, true, 2, 0},
      {Op::kAcquire, 8,  10, 2, true, 0, 0},
      {Op::kRenew,   7, 500, 1, true, 0, 0},
      {Op::kRelease, 7, 600, 1, true, 3, 0},
      {Op::kRelease, 8, 700, 1, true, 5, 0},
  });
}

TEST_CASE("concurrency: time running backwards neither revives nor shortens a lease", "[concurrency]") {
  Conn c(1, 1'000);
  run_table(c, {
      {Op::kAcquire, 1, 5'000, 1, true,  0, 0},
      {Op::kAcquire, 2, 4'000, 1, false, 0, 2'000},  // judged at 5 000: free at 6 000, 2 000 after this now
      {Op::kRenew,   1, 3'000, 1, true,  0, 0},      // renewed at 5 000, not at 3 000
      {Op::kAcquire, 2, 5'999, 1, false, 0, 1},
      {Op::kAcquire, 2, 6'000, 1, true,  0, 0},
  });
  // Once a later time has been seen, an earlier one cannot bring back a lease that ran out.
  Conn d(1, 1'000);
  CHECK(d.acquire(1, t0).allowed);
  CHECK(d.acquire(2, t0 + 2'000).allowed);
  CHECK_FALSE(d.acquire(3, t0).allowed);
}

TEST_CASE("concurrency: release and renew of a key never seen change nothing", "[concurrency]") {
  Conn c(3, 1'000);
  CHECK_FALSE(c.release(1, t0).allowed);
  CHECK_FALSE(c.renew(1, t0).allowed);
  CHECK(c.release(1, t0).remaining == 3);
  CHECK_FALSE(c.h.exported(c.rule, "k").has_value());  // took no slot
}

TEST_CASE("concurrency: only a concurrency rule takes the operations, and costs and ops are checked", "[concurrency]") {
  Harness h;
  const uint32_t window = h.add(Algorithm::kFixedWindow, 5, 1'000);
  const uint32_t conn = h.add(Algorithm::kConcurrency, 5, 1'000);
  Decision d;
  CHECK(h.limiter.concurrency(window, 1, Op::kAcquire, 1, 1, t0, &d) == Status::kInvalidArgument);
  CHECK(h.limiter.concurrency(conn, 1, Op::kAcquire, 1, 0, t0, &d) == Status::kInvalidCost);
  CHECK(h.limiter.concurrency(conn, 1, static_cast<Op>(3), 1, 1, t0, &d) == Status::kInvalidArgument);
  CHECK(h.limiter.concurrency(conn, 1, Op::kAcquire, 1, 1, -1, &d) == Status::kInvalidArgument);
  CHECK(h.limiter.concurrency(99, 1, Op::kAcquire, 1, 1, t0, &d) == Status::kUnknownRule);
}

TEST_CASE("concurrency: rule bounds name their field", "[concurrency]") {
  Harness h;
  uint32_t id = 0;
  const char* field = nullptr;
  CHECK(h.limiter.add_rule({Algorithm::kConcurrency, concurrency::kMaxConcurrency + 1, 1'000, 0}, 10, &id, &field) ==
        Status::kInvalidRule);
  CHECK(std::string(field) == "limit");
  CHECK(h.limiter.add_rule({Algorithm::kConcurrency, 5, concurrency::kMaxLeaseMs + 1, 0}, 10, &id, &field) ==
        Status::kInvalidRule);
  CHECK(std::string(field) == "window_ms");
  CHECK(h.limiter.add_rule({Algorithm::kConcurrency, 5, 1'000, 2}, 10, &id, &field) == Status::kInvalidRule);
  CHECK(std::string(field) == "burst");
}

TEST_CASE("concurrency: a plain check acquires for the anonymous holder, whose units only expire", "[concurrency]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kConcurrency, 2, 1'000);
  CHECK(h.check(rule, "k", 1, t0).allowed);
  CHECK(h.check(rule, "k", 1, t0 + 1).allowed);
  CHECK_FALSE(h.check(rule, "k", 1, t0 + 2).allowed);
  CHECK(h.peek(rule, "k", 1, t0 + 1'000).allowed);
}

TEST_CASE("concurrency: state bytes carry holders and leases to another limiter", "[concurrency]") {
  Conn a(3, 1'000);
  a.acquire(1, t0);
  a.acquire(2, t0 + 100, 2);
  a.renew(1, t0 + 500);
  const auto bytes = a.h.exported(a.rule, "k");
  REQUIRE(bytes.has_value());
  CHECK(bytes->size() == Limiter::kStateHeaderBytes + 16 * 3);
  Conn b(3, 1'000);
  REQUIRE(b.h.import(b.rule, "k", *bytes) == Status::kOk);
  CHECK_FALSE(b.acquire(3, t0 + 600).allowed);            // full in the importer too
  CHECK(b.release(2, t0 + 600).remaining == 2);            // holder 2's two units, by name
  CHECK(b.acquire(3, t0 + 1'099).allowed);
  CHECK_FALSE(b.acquire(4, t0 + 1'099, 2).allowed);        // holder 1 (renewed at 500) and 3 hold 2 of 3
  CHECK(b.acquire(4, t0 + 1'500, 2).allowed);              // holder 1's renewed lease ran out at 1 500
  // Export drops leases that ran out before the latest time, and the bytes round-trip unchanged.
  const auto again = b.h.exported(b.rule, "k");
  REQUIRE(again.has_value());
  Conn c(3, 1'000);
  REQUIRE(c.h.import(c.rule, "k", *again) == Status::kOk);
  CHECK(c.h.exported(c.rule, "k") == again);
}

TEST_CASE("concurrency: malformed state bytes are refused", "[concurrency]") {
  Conn a(3, 1'000);
  a.acquire(1, t0);
  a.acquire(2, t0 + 10);
  const auto good = *a.h.exported(a.rule, "k");
  Conn b(3, 1'000);
  auto unsorted = good;
  write_i64(unsorted, 24, t0 + 20);  // entry 0 after entry 1
  CHECK(b.h.import(b.rule, "k", unsorted) == Status::kInvalidState);
  auto stale = good;
  write_i64(stale, 8, t0 + 5'000);  // latest far past the entries' leases
  CHECK(b.h.import(b.rule, "k", stale) == Status::kInvalidState);
  auto too_many = good;
  write_i64(too_many, 16, 4);
  CHECK(b.h.import(b.rule, "k", too_many) == Status::kInvalidState);
  auto wide_holder = good;
  write_i64(wide_holder, 32, int64_t{1} << 32);
  CHECK(b.h.import(b.rule, "k", wide_holder) == Status::kInvalidState);
  Conn other(4, 1'000);  // another limit: another signature
  CHECK(other.h.import(other.rule, "k", good) == Status::kInvalidState);
}

TEST_CASE("concurrency: offsets are rebased across long runs of time", "[concurrency]") {
  Conn c(2, concurrency::kMaxLeaseMs);
  int64_t now = t0;
  for (int i = 0; i < 8; ++i) {
    REQUIRE(c.acquire(1, now).allowed);
    REQUIRE(c.renew(1, now + (int64_t{1} << 30)).allowed);
    REQUIRE(c.release(1, now + (int64_t{1} << 31)).allowed);
    now += int64_t{3} << 30;
  }
  CHECK(c.acquire(2, now).remaining == 1);
}

// Property: under any stream of acquires, releases, renewals and vanishing holders, with time that
// sometimes runs backwards, the units live at once never exceed the limit, and the core agrees with a
// model that keeps each holder's lease on its own. The core judges at the latest time an operation
// changed the key (a denied acquisition changes nothing), so the model keeps that time too.
TEST_CASE("concurrency property: never more than max live holders", "[concurrency][property]") {
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    Random random(seed);
    const int64_t max = random.between(1, 8);
    const int64_t lease = random.between(1, 5'000);
    Conn c(max, lease);
    struct Lease {
      int64_t units;
      int64_t since;  // the last acquire or renew
    };
    std::map<uint32_t, Lease> model;
    bool touched = false;  // the key has a slot: release and renew then move its latest time
    int64_t latest = 0;
    int64_t now = t0;
    const auto live_at = [&](int64_t at) {
      int64_t units = 0;
      for (const auto& [holder, l] : model) units += l.since > at - lease ? l.units : 0;
      return units;
    };
    const auto is_live = [&](uint32_t holder, int64_t at) {
      const auto it = model.find(holder);
      return it != model.end() && it->second.since > at - lease;
    };
    for (int step = 0; step < 300; ++step) {
      now = random.percent(10) ? now - random.between(0, lease) : now + random.between(0, lease / 3 + 1);
      const int64_t at = std::max(now, latest);
      INFO("seed " << seed << " max " << max << " lease " << lease << " step " << step);
      const int64_t live = live_at(at);
      REQUIRE(live <= max);
      const auto holder = static_cast<uint32_t>(random.between(1, 10));
      const auto choice = random.between(0, 9);
      if (choice < 5) {
        const int64_t cost = random.between(1, max + 1);
        const Decision d = c.acquire(holder, now, cost);
        REQUIRE(d.allowed == (live + cost <= max));
        if (d.allowed) {
          // The model keeps one time per holder, so the core is told to renew the holder's older units too.
          model[holder].units = (is_live(holder, at) ? model[holder].units : 0) + cost;
          model[holder].since = at;
          REQUIRE(c.renew(holder, now).allowed);
          touched = true;
          latest = at;
        }
      } else if (choice < 8) {
        const Decision d = c.release(holder, now);
        REQUIRE(d.allowed == is_live(holder, at));
        model.erase(holder);
        if (touched) latest = at;
      } else {
        const Decision d = c.renew(holder, now);
        REQUIRE(d.allowed == is_live(holder, at));
        if (d.allowed) model[holder].since = at;
        if (touched) latest = at;
      }
      const int64_t after = live_at(std::max(now, latest));
      REQUIRE(after <= max);
      // A peek for one more unit agrees with the model's count.
      const Decision peek = c.h.peek(c.rule, "k", 1, now);
      REQUIRE(peek.allowed == (after < max));
      REQUIRE(peek.remaining == (after < max ? max - after - 1 : 0));
    }
  }
}

}  // namespace
