// A native driver for profiling the core without the wasm boundary (bench/native/profile.sh runs it
// under callgrind or perf). It replays the bench's workloads against sluice::Limiter:
//   driver <hot|uniform|zipf> <keys> <decisions> [algorithm 0-5]
// and prints nanoseconds per decision (a rough figure: the bench's own numbers come from workerd).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sluice/limiter.hpp"

namespace {

// The same keys as bench/worker/workload.js: IPv4 addresses 10.x.y.z.
std::string key_of(uint32_t i) {
  return "10." + std::to_string((i >> 16) & 255) + "." + std::to_string((i >> 8) & 255) + "." +
         std::to_string(i & 255);
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<uint32_t> arrival_order(const char* distribution, uint32_t keys, size_t length) {
  std::vector<uint32_t> order(length);
  uint64_t seed = 0x5eed;
  if (std::strcmp(distribution, "hot") == 0) return order;
  if (std::strcmp(distribution, "uniform") == 0) {
    for (auto& o : order) o = static_cast<uint32_t>(splitmix(seed) % keys);
    return order;
  }
  std::vector<double> cumulative(keys);
  double total = 0;
  for (uint32_t r = 0; r < keys; ++r) cumulative[r] = total += 1.0 / (r + 1);
  for (auto& o : order) {
    const double u = static_cast<double>(splitmix(seed) >> 11) / 9007199254740992.0 * total;
    uint32_t lo = 0, hi = keys - 1;
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (cumulative[mid] < u) lo = mid + 1; else hi = mid;
    }
    o = static_cast<uint32_t>((uint64_t{lo} * 7919) % keys);
  }
  return order;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s <hot|uniform|zipf> <keys> <decisions> [algorithm 0-5]\n", argv[0]);
    return 2;
  }
  const char* distribution = argv[1];
  const uint32_t key_count = static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  const uint64_t decisions = std::strtoull(argv[3], nullptr, 10);
  const int algorithm = argc > 4 ? std::atoi(argv[4]) : 0;

  sluice::Limiter limiter(sluice::SipHashKey{0x0123456789abcdefULL, 0xfedcba9876543210ULL});
  sluice::RuleConfig config;
  config.algorithm = static_cast<sluice::Algorithm>(algorithm);
  config.limit = algorithm == 1 ? 10 : 1'000'000'000;
  config.window_ms = 3'600'000;
  uint32_t rule = 0;
  const char* field = nullptr;
  if (limiter.add_rule(config, key_count, &rule, &field) != sluice::Status::kOk) {
    std::fprintf(stderr, "add_rule failed (%s)\n", field ? field : "?");
    return 1;
  }

  std::vector<std::string> keys(key_count);
  for (uint32_t i = 0; i < key_count; ++i) keys[i] = key_of(i);
  const std::vector<uint32_t> order = arrival_order(distribution, key_count, size_t{1} << 20);
  const int64_t now = 1'700'000'000'000;
  sluice::Decision per_check[1];
  sluice::Outcome outcome;
  // The hot key's hash is known, as the wasm ABI knows it when the loader says the key did not change.
  const bool hot = std::strcmp(distribution, "hot") == 0;
  const uint64_t hot_hash = limiter.key_hash(reinterpret_cast<const uint8_t*>(keys[0].data()), static_cast<uint32_t>(keys[0].size()));
  auto decide = [&](const std::string& key) {
    sluice::Check check{rule, reinterpret_cast<const uint8_t*>(key.data()), static_cast<uint32_t>(key.size()), 1};
    check.has_hash = hot;
    check.hash = hot_hash;
    limiter.check(&check, 1, now, per_check, &outcome);
    return outcome.decision.allowed;
  };
  for (const auto& key : keys) decide(key);  // the keys exist before timing

  uint64_t admitted = 0;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < decisions; ++i) admitted += decide(keys[order[i & (order.size() - 1)]]) ? 1 : 0;
  const auto ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  sluice::TableStats stats;
  limiter.stats(rule, &stats);
  std::printf("%s keys=%u decisions=%llu admitted=%llu ns/decision=%.1f held=%u slots=%u bytes=%llu evictions=%llu\n",
              distribution, key_count, static_cast<unsigned long long>(decisions),
              static_cast<unsigned long long>(admitted), ns / static_cast<double>(decisions), stats.keys,
              stats.slots, static_cast<unsigned long long>(stats.memory_bytes),
              static_cast<unsigned long long>(stats.evictions));
  return 0;
}
