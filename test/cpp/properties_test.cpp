// Property tests: thousands of seeded random request streams (random costs, random gaps, some time running
// backwards) against the bounds each algorithm promises, against each other, and against their own
// retry_after_ms. A failure names the seed, the rule and the step, so it reproduces exactly.
//
// "When" an admitted request happened is its effective time: the later of its own `now` and the previous
// admitted request's effective time. That is the clock the algorithms keep (time running backwards is
// judged at the latest charge), so every bound below is stated on it; for streams whose time never runs
// backwards it is simply `now`.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

using namespace sluice;
using namespace sluice::test;

struct Request {
  int64_t now;
  int64_t cost;
};

struct Admitted {
  int64_t at;  // effective time
  int64_t cost;
};

int64_t capacity_of(const RuleConfig& rule) {
  return is_bucket(rule.algorithm) && rule.burst != 0 ? rule.burst : rule.limit;
}

std::string describe(const RuleConfig& rule, uint64_t seed) {
  std::ostringstream out;
  out << name_of(rule.algorithm) << " limit " << rule.limit << " window_ms " << rule.window_ms << " burst "
      << rule.burst << " (stream seed " << seed << ")";
  return out.str();
}

RuleConfig random_rule(Random& random, Algorithm algorithm) {
  static constexpr int64_t kWindows[] = {1, 7, 100, 1000, 60000};
  RuleConfig rule;
  rule.algorithm = algorithm;
  rule.limit = random.between(1, 12);
  rule.window_ms = random.percent(50) ? kWindows[random.between(0, 4)] : random.between(1, 5000);
  if (is_bucket(algorithm) && random.percent(50)) rule.burst = random.between(1, 20);
  return rule;
}

// random_stream mixes bursts at one instant, gaps around the rate, whole windows of silence and (when
// `backwards`) steps back in time, with costs of 1, up to the capacity and just above it.
std::vector<Request> random_stream(Random& random, const RuleConfig& rule, bool backwards, size_t length) {
  const int64_t capacity = capacity_of(rule);
  const int64_t spacing = std::max<int64_t>(1, rule.window_ms / rule.limit);
  std::vector<Request> stream;
  int64_t now = random.between(0, 2'000'000'000'000);
  for (size_t i = 0; i < length; ++i) {
    const int64_t roll = random.between(0, 99);
    if (roll < 20) {
      // the same instant
    } else if (roll < 60) {
      now += random.between(0, 2 * spacing);
    } else if (roll < 75) {
      now += random.between(0, rule.window_ms);
    } else if (roll < 85) {
      now += random.between(rule.window_ms, 3 * rule.window_ms);
    } else if (backwards) {
      now = std::max<int64_t>(0, now - random.between(1, rule.window_ms + 1));
    } else {
      now += 1;
    }
    const int64_t cost_roll = random.between(0, 99);
    const int64_t cost = cost_roll < 70 ? 1 : cost_roll < 92 ? random.between(1, capacity) : capacity + random.between(1, 2);
    stream.push_back({now, cost});
  }
  return stream;
}

// run_stream checks one key through `stream` and verifies what holds for every algorithm: sane decisions,
// kNever exactly when the cost exceeds the capacity, denials that change no state, and an honest
// retry_after_ms (admitted exactly that much later, denied 1 ms earlier). Returns what was admitted.
std::vector<Admitted> run_stream(const RuleConfig& rule, const std::vector<Request>& stream, uint64_t seed) {
  Harness h;
  const uint32_t id = h.add(rule.algorithm, rule.limit, rule.window_ms, rule.burst, 4);
  const int64_t capacity = capacity_of(rule);
  const std::string key = "client";
  std::vector<Admitted> admitted;
  int64_t clock = 0;
  for (size_t step = 0; step < stream.size(); ++step) {
    const Request& r = stream[step];
    const auto before = h.exported(id, key);
    const Decision d = h.check(id, key, r.cost, r.now);
    const auto context = [&] {
      std::ostringstream out;
      out << describe(rule, seed) << ", step " << step << ": now " << r.now << " cost " << r.cost << " -> "
          << Catch::StringMaker<Decision>::convert(d) << ": ";
      return out.str();
    };
    const bool sane = d.limit == capacity && d.remaining >= 0 && d.remaining <= capacity && d.reset_ms >= 0 &&
                      (d.allowed ? d.retry_after_ms == 0 : d.retry_after_ms == kNever || d.retry_after_ms > 0) &&
                      ((d.retry_after_ms == kNever) == (r.cost > capacity));
    if (!sane) FAIL(context() << "an insane decision");
    if (d.allowed) {
      clock = std::max(clock, r.now);
      admitted.push_back({clock, r.cost});
      continue;
    }
    if (h.exported(id, key) != before) FAIL(context() << "a denied request changed the key's state");
    if (d.retry_after_ms == kNever) continue;
    const Decision later = h.peek(id, key, r.cost, r.now + d.retry_after_ms);
    if (!later.allowed) {
      FAIL(context() << "not admitted retry_after_ms later: " << Catch::StringMaker<Decision>::convert(later));
    }
    const Decision earlier = h.peek(id, key, r.cost, r.now + d.retry_after_ms - 1);
    if (earlier.allowed) FAIL(context() << "already admitted 1 ms before retry_after_ms");
    if (h.exported(id, key) != before) FAIL(context() << "a peek changed the key's state");
  }
  return admitted;
}

// The most admitted in any window (t - window_ms, t]; `admitted` is in effective-time order.
int64_t most_in_any_window(const std::vector<Admitted>& admitted, int64_t window_ms) {
  int64_t most = 0;
  int64_t sum = 0;
  size_t first = 0;
  for (const Admitted& a : admitted) {
    sum += a.cost;
    while (admitted[first].at <= a.at - window_ms) sum -= admitted[first++].cost;
    most = std::max(most, sum);
  }
  return most;
}

constexpr int kStreams = 700;
constexpr size_t kStreamLength = 160;

}  // namespace

// A window here is (t - window_ms, t]: an entry leaves it exactly window_ms after it was made.
// (No square bracket in the name: catch_discover_tests passes names through a CMake list.)
TEST_CASE("sliding log never admits more than limit in any window of window_ms", "[properties]") {
  Random random(1);
  for (int s = 0; s < kStreams; ++s) {
    const uint64_t seed = random.next();
    Random stream_random(seed);
    const RuleConfig rule = random_rule(stream_random, Algorithm::kSlidingLog);
    const auto admitted = run_stream(rule, random_stream(stream_random, rule, true, kStreamLength), seed);
    INFO(describe(rule, seed));
    REQUIRE(most_in_any_window(admitted, rule.window_ms) <= rule.limit);
  }
}

TEST_CASE("fixed window never admits more than limit in any aligned window", "[properties]") {
  Random random(2);
  for (int s = 0; s < kStreams; ++s) {
    const uint64_t seed = random.next();
    Random stream_random(seed);
    const RuleConfig rule = random_rule(stream_random, Algorithm::kFixedWindow);
    const auto admitted = run_stream(rule, random_stream(stream_random, rule, true, kStreamLength), seed);
    INFO(describe(rule, seed));
    int64_t window = -1;
    int64_t in_window = 0;
    for (const Admitted& a : admitted) {
      if (a.at / rule.window_ms != window) {
        window = a.at / rule.window_ms;
        in_window = 0;
      }
      in_window += a.cost;
      REQUIRE(in_window <= rule.limit);
    }
  }
}

TEST_CASE("token bucket, leaky bucket and GCRA never admit more than burst + floor(t * limit / window) in any interval of length t",
          "[properties]") {
  Random random(3);
  for (const Algorithm algorithm : {Algorithm::kTokenBucket, Algorithm::kLeakyBucket, Algorithm::kGcra}) {
    for (int s = 0; s < kStreams; ++s) {
      const uint64_t seed = random.next();
      Random stream_random(seed);
      const RuleConfig rule = random_rule(stream_random, algorithm);
      const auto admitted = run_stream(rule, random_stream(stream_random, rule, true, kStreamLength), seed);
      INFO(describe(rule, seed));
      const int64_t burst = capacity_of(rule);
      for (size_t i = 0; i < admitted.size(); ++i) {
        int64_t sum = 0;
        for (size_t j = i; j < admitted.size(); ++j) {
          sum += admitted[j].cost;
          const __int128 length = admitted[j].at - admitted[i].at;
          const __int128 bound = burst + length * rule.limit / rule.window_ms;
          if (sum > bound) {
            FAIL("admitted " << sum << " in [" << admitted[i].at << ", " << admitted[j].at << "], bound "
                             << static_cast<int64_t>(bound));
          }
        }
      }
    }
  }
}

TEST_CASE("token bucket, leaky bucket and GCRA make identical decisions while time runs forwards", "[properties]") {
  Random random(4);
  for (int s = 0; s < 2 * kStreams; ++s) {
    const uint64_t seed = random.next();
    Random stream_random(seed);
    RuleConfig rule = random_rule(stream_random, Algorithm::kTokenBucket);
    // Some rates that are not whole milliseconds per token, whatever random_rule drew.
    if (stream_random.percent(30)) rule.window_ms = stream_random.between(1, 100) * 7 + 3;
    const auto stream = random_stream(stream_random, rule, false, kStreamLength);
    Harness h;
    const uint32_t token = h.add(Algorithm::kTokenBucket, rule.limit, rule.window_ms, rule.burst);
    const uint32_t leaky = h.add(Algorithm::kLeakyBucket, rule.limit, rule.window_ms, rule.burst);
    const uint32_t gcra = h.add(Algorithm::kGcra, rule.limit, rule.window_ms, rule.burst);
    for (size_t step = 0; step < stream.size(); ++step) {
      const Request& r = stream[step];
      const Decision t = h.check(token, "k", r.cost, r.now);
      const Decision l = h.check(leaky, "k", r.cost, r.now);
      const Decision g = h.check(gcra, "k", r.cost, r.now);
      if (!(t == l && t == g)) {
        FAIL(describe(rule, seed) << ", step " << step << ": now " << r.now << " cost " << r.cost
                                  << "\n  token bucket " << Catch::StringMaker<Decision>::convert(t)
                                  << "\n  leaky bucket " << Catch::StringMaker<Decision>::convert(l)
                                  << "\n  gcra         " << Catch::StringMaker<Decision>::convert(g));
      }
    }
  }
}

// The bound: a window (t - W, t] overlaps two aligned windows, k - 1 and k, and reaches `elapsed` ms into k,
// with elapsed < W. What k admits by then is at most limit - previous * (W - elapsed) / W, and what lies in
// the part of k - 1 inside the window is at most previous, so the window holds at most
// limit + previous * elapsed / W <= limit + limit * (W - 1) / W < 2 * limit.
TEST_CASE("sliding-window counter admits fewer than 2 * limit in any window of length W", "[properties][report]") {
  Random random(5);
  double worst_ratio = 0;
  std::string worst_rule;
  for (int s = 0; s < 2 * kStreams; ++s) {
    const uint64_t seed = random.next();
    Random stream_random(seed);
    const RuleConfig rule = random_rule(stream_random, Algorithm::kSlidingCounter);
    const auto admitted = run_stream(rule, random_stream(stream_random, rule, true, kStreamLength), seed);
    INFO(describe(rule, seed));
    const int64_t most = most_in_any_window(admitted, rule.window_ms);
    REQUIRE(most < 2 * rule.limit);
    const double ratio = static_cast<double>(most) / static_cast<double>(rule.limit);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst_rule = describe(rule, seed) + ": " + std::to_string(most) + " in one window";
    }
  }
  WARN("sliding-window counter, random streams: worst over-admission " << worst_ratio << " x limit (" << worst_rule
                                                                       << ")");

  // The adversary: the whole limit in the last millisecond of a window, then a request every millisecond
  // of the next window. The window ending 2 ms before the next one begins holds the most.
  for (const auto& [limit, window_ms] : {std::pair<int64_t, int64_t>{10, 1000}, {100, 1000}, {1000, 60000}, {5, 60000}}) {
    Harness h;
    const uint32_t id = h.add(Algorithm::kSlidingCounter, limit, window_ms);
    std::vector<Admitted> admitted;
    const int64_t start = window_ms - 1;
    REQUIRE(h.check(id, "k", limit, start).allowed);
    admitted.push_back({start, limit});
    for (int64_t t = window_ms; t < 2 * window_ms; ++t) {
      while (h.check(id, "k", 1, t).allowed) admitted.push_back({t, 1});
    }
    const int64_t most = most_in_any_window(admitted, window_ms);
    INFO("limit " << limit << " window_ms " << window_ms);
    REQUIRE(most < 2 * limit);
    WARN("sliding-window counter, limit " << limit << " per " << window_ms << " ms, limit at the end of a window then a "
                                          << "request every ms: " << most << " in one window = "
                                          << static_cast<double>(most) / static_cast<double>(limit) << " x limit");
  }
}
