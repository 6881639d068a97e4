#include <catch2/catch.hpp>

#include <string>

#include "sluice/limiter.hpp"

using namespace sluice;

TEST_CASE("the seeds' example: 5 per 60 s, fixed window") {
  Limiter limiter(SipHashKey{1, 2});
  uint32_t rule = 0;
  REQUIRE(limiter.add_rule(RuleConfig{Algorithm::kFixedWindow, 5, 60000, 0}, 100, &rule, nullptr) == Status::kOk);
  const std::string key = "203.0.113.7";
  const Check check{rule, reinterpret_cast<const uint8_t*>(key.data()), static_cast<uint32_t>(key.size()), 1};
  Decision per[1];
  Outcome outcome;
  // Requests 1-5 at t = 0, 1, 2, 3, 4 s of a window starting at 0.
  for (int i = 0; i < 5; ++i) {
    REQUIRE(limiter.check(&check, 1, 1000 * i, per, &outcome) == Status::kOk);
    CHECK(outcome.decision.allowed);
    CHECK(outcome.decision.remaining == 4 - i);
    CHECK(outcome.decision.retry_after_ms == 0);
  }
  REQUIRE(limiter.check(&check, 1, 10000, per, &outcome) == Status::kOk);
  CHECK_FALSE(outcome.decision.allowed);
  CHECK(outcome.decision.retry_after_ms == 50000);
  REQUIRE(limiter.check(&check, 1, 20000, per, &outcome) == Status::kOk);
  CHECK_FALSE(outcome.decision.allowed);
  CHECK(outcome.decision.retry_after_ms == 40000);
  REQUIRE(limiter.check(&check, 1, 60000, per, &outcome) == Status::kOk);
  CHECK(outcome.decision.allowed);
  CHECK(outcome.decision.remaining == 4);
}
