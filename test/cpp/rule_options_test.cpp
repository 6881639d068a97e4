// Issue 11 §4 and §5: rules whose reported times could pass 2^53 are refused, naming the field; the
// sliding counter's count_denied option counts denied requests too.
#include <string>

#include "support.hpp"

namespace {

using namespace sluice;
using namespace sluice::test;

constexpr int64_t kNow = 1'700'000'000'000;

Status make(const RuleConfig& config, const char** field) {
  Rule rule;
  return make_rule(config, &rule, field);
}

uint32_t add_counter(Harness& h, int64_t limit, int64_t window_ms, bool count_denied) {
  uint32_t id = 0;
  RuleConfig config{Algorithm::kSlidingCounter, limit, window_ms, 0, count_denied};
  REQUIRE(h.limiter.add_rule(config, 100, &id, nullptr) == Status::kOk);
  return id;
}

}  // namespace

TEST_CASE("a bucket whose delays could pass 2^53 ms is refused, naming burst", "[rule]") {
  for (const Algorithm algorithm : {Algorithm::kTokenBucket, Algorithm::kLeakyBucket, Algorithm::kGcra}) {
    INFO(name_of(algorithm));
    const char* field = nullptr;
    // One token per 2^36 ms, 2^25 of them: emptying the bucket takes 2^61 ms.
    CHECK(make(RuleConfig{algorithm, 1, int64_t{1} << 36, int64_t{1} << 25}, &field) == Status::kInvalidRule);
    CHECK(std::string(field == nullptr ? "" : field) == "burst");
    // 2^16 of them: 2^52 ms, exact.
    CHECK(make(RuleConfig{algorithm, 1, int64_t{1} << 36, int64_t{1} << 16}, &field) == Status::kOk);
  }
}

TEST_CASE("the longest delay an accepted rule reports is an exact double", "[rule]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kTokenBucket, 1, int64_t{1} << 36, int64_t{1} << 16);
  const Decision d = h.check(rule, "k", int64_t{1} << 16, kNow);
  REQUIRE(d.allowed);
  CHECK(d.reset_ms <= int64_t{1} << 53);
  CHECK(static_cast<int64_t>(static_cast<double>(d.reset_ms)) == d.reset_ms);
}

TEST_CASE("count_denied is a sliding-counter option: other algorithms refuse it, naming it", "[rule]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    const char* field = nullptr;
    const Status status = make(RuleConfig{algorithm, 10, 1000, 0, true}, &field);
    if (algorithm == Algorithm::kSlidingCounter) {
      CHECK(status == Status::kOk);
    } else {
      CHECK(status == Status::kInvalidRule);
      CHECK(std::string(field == nullptr ? "" : field) == "count_denied");
    }
  }
}

TEST_CASE("count_denied: a client that keeps sending while limited stays limited", "[rule]") {
  Harness h;
  const uint32_t admitted_only = add_counter(h, 10, 1000, false);
  const uint32_t all_requests = add_counter(h, 10, 1000, true);
  const int64_t start = 1000 * 1000;  // a window boundary
  // 100 requests in the first window: 10 admitted by both.
  int admitted[2] = {0, 0};
  for (int i = 0; i < 100; ++i) {
    admitted[0] += h.check(admitted_only, "c", 1, start + i).allowed ? 1 : 0;
    admitted[1] += h.check(all_requests, "c", 1, start + i).allowed ? 1 : 0;
  }
  CHECK(admitted[0] == 10);
  CHECK(admitted[1] == 10);
  // Half-way through the next window: the plain counter weighs 10 admitted at half (5), and admits;
  // counting all 100 weighs 50, and denies until 91 % of the window has passed.
  CHECK(h.check(admitted_only, "c", 1, start + 1500).allowed);
  const Decision limited = h.peek(all_requests, "c", 1, start + 1500);
  CHECK_FALSE(limited.allowed);
  CHECK(limited.retry_after_ms == 1910 - 1500);
  CHECK(h.peek(all_requests, "c", 1, start + 1910).allowed);
  CHECK_FALSE(h.peek(all_requests, "c", 1, start + 1909).allowed);
  // A denied request counts: after it, the same time no longer admits.
  CHECK_FALSE(h.check(all_requests, "c", 1, start + 1909).allowed);
  CHECK_FALSE(h.peek(all_requests, "c", 1, start + 1910).allowed);
}

TEST_CASE("count_denied states travel only between rules of the same kind", "[rule]") {
  Harness h;
  const uint32_t plain = add_counter(h, 10, 1000, false);
  const uint32_t counting = add_counter(h, 10, 1000, true);
  const uint32_t counting_too = add_counter(h, 10, 1000, true);
  for (int i = 0; i < 30; ++i) h.check(counting, "c", 1, kNow);
  const auto bytes = h.exported(counting, "c");
  REQUIRE(bytes.has_value());
  CHECK(h.import(plain, "c", *bytes) == Status::kInvalidState);
  REQUIRE(h.import(counting_too, "c", *bytes) == Status::kOk);
  CHECK(h.exported(counting_too, "c") == bytes);
  h.check(plain, "p", 1, kNow);
  CHECK(h.import(counting, "p", *h.exported(plain, "p")) == Status::kInvalidState);
}
