// Runs every shared vector of test/vectors/ (format: test/vectors/README.md) against the native core.
// test/js/core-vectors.test.js runs the same files against sluice.wasm, so the two provably agree.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

using nlohmann::json;
using namespace sluice;
using namespace sluice::test;

std::vector<std::string> vector_files() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(SLUICE_VECTORS_DIR)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Algorithm algorithm_named(const std::string& name) {
  for (const Algorithm a : kAllAlgorithms) {
    if (name == name_of(a)) return a;
  }
  FAIL("unknown algorithm " << name);
  return Algorithm::kFixedWindow;
}

std::string retry_text(int64_t retry_after_ms) {
  return retry_after_ms == kNever ? "\"never\"" : std::to_string(retry_after_ms);
}

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

// Mismatches collects what a step got wrong, as "field: expected X, got Y".
class Mismatches {
 public:
  template <class T>
  void compare(const char* field, const T& expected, const T& got) {
    if (expected == got) return;
    std::ostringstream line;
    line << std::boolalpha << field << ": expected " << expected << ", got " << got;
    lines_.push_back(line.str());
  }
  void add(std::string line) { lines_.push_back(std::move(line)); }
  bool empty() const { return lines_.empty(); }
  std::string text() const {
    std::string out;
    for (const auto& line : lines_) out += "\n    " + line;
    return out;
  }

 private:
  std::vector<std::string> lines_;
};

// Compares a decision with the expectation [allowed, remaining, reset, retryAfter] or with a step's fields.
void compare_decision(Mismatches& m, const std::string& what, const Decision& d, bool allowed, int64_t remaining,
                      int64_t reset, const json& retry) {
  m.compare((what + "allowed").c_str(), allowed, d.allowed);
  m.compare((what + "remaining").c_str(), remaining, d.remaining);
  m.compare((what + "reset").c_str(), reset, d.reset_ms);
  m.compare((what + "retryAfter").c_str(), retry.dump(), retry_text(d.retry_after_ms));
}

class VectorRunner {
 public:
  VectorRunner(const json& vector) : vector_(vector), harness_(std::make_unique<Harness>()) {
    for (const json& rule : vector.at("rules")) {
      harness_->add(algorithm_named(rule.at("algorithm")), rule.at("limit"), rule.at("windowMs"), rule.value("burst", 0),
                    rule.at("keyCapacity"), rule.value("blockMs", 0));
    }
  }

  // run performs one step and returns what it got wrong.
  Mismatches run(const json& step) {
    Mismatches m;
    const std::string op = step.value("op", "check");
    if (op == "check" || op == "peek") {
      decide(step, op == "check", m);
    } else if (op == "reset") {
      const std::string key = key_of(step);
      const Status status = harness_->limiter.reset(step.at("rule"), bytes_of(key), static_cast<uint32_t>(key.size()));
      m.compare("status", std::string(step.value("status", "OK")), std::string(name_of(status)));
    } else if (op == "export") {
      export_state(step, m);
    } else if (op == "import") {
      import_state(step, m);
    } else {
      m.add("unknown op " + op);
    }
    return m;
  }

 private:
  std::string key_of(const json& step) const {
    if (step.contains("key")) return step.at("key");
    return vector_.at("key");
  }

  void decide(const json& step, bool charge, Mismatches& m) {
    std::vector<std::string> keys;
    std::vector<std::pair<uint32_t, int64_t>> rule_and_cost;
    if (step.contains("checks")) {
      for (const json& c : step.at("checks")) {
        rule_and_cost.emplace_back(c.at(0), c.at(2));
        keys.push_back(c.at(1));
      }
    } else {
      rule_and_cost.emplace_back(step.value("rule", 0), step.at("cost"));
      keys.push_back(key_of(step));
    }
    std::vector<Check> checks;
    for (size_t i = 0; i < keys.size(); ++i) checks.push_back(check_of(rule_and_cost[i].first, keys[i], rule_and_cost[i].second));
    std::vector<Decision> per(checks.size());
    Outcome outcome;
    const auto count = static_cast<uint32_t>(checks.size());
    const int64_t now = step.at("now");
    const Status status = charge ? harness_->limiter.check(checks.data(), count, now, per.data(), &outcome)
                                 : harness_->limiter.peek(checks.data(), count, now, per.data(), &outcome);
    m.compare("status", std::string("OK"), std::string(name_of(status)));
    if (status != Status::kOk) return;
    compare_decision(m, "", outcome.decision, step.at("allowed"), step.at("remaining"), step.at("reset"),
                     step.at("retryAfter"));
    if (step.contains("limit")) m.compare("limit", step.at("limit").get<int64_t>(), outcome.decision.limit);
    if (step.contains("decidingCheck")) {
      m.compare("decidingCheck", step.at("decidingCheck").get<int32_t>(), outcome.deciding_check);
    }
    if (step.contains("perCheck")) {
      const json& expected = step.at("perCheck");
      m.compare("perCheck count", expected.size(), per.size());
      for (size_t i = 0; i < std::min(expected.size(), per.size()); ++i) {
        const json& e = expected.at(i);
        compare_decision(m, "perCheck[" + std::to_string(i) + "].", per[i], e.at(0), e.at(1), e.at(2), e.at(3));
      }
    }
  }

  void export_state(const json& step, Mismatches& m) {
    const auto bytes = harness_->exported(step.at("rule"), key_of(step));
    const json& length = step.at("length");
    if (length.is_null()) {
      if (bytes) m.add("expected no state, got " + std::to_string(bytes->size()) + " bytes");
      return;
    }
    if (!bytes) {
      m.add("expected " + length.dump() + " bytes of state, got none");
      return;
    }
    m.compare("length", length.get<size_t>(), bytes->size());
    if (bytes->size() >= 2) {
      m.compare("format byte", 1, static_cast<int>((*bytes)[0]));
      m.compare("algorithm byte", static_cast<int>(vector_algorithm(step.at("rule"))), static_cast<int>((*bytes)[1]));
    }
    if (step.contains("words")) {
      const json& words = step.at("words");
      for (size_t i = 0; i < words.size() && 16 + 8 * i <= bytes->size(); ++i) {
        m.compare(("words[" + std::to_string(i) + "]").c_str(), words.at(i).get<int64_t>(), read_i64(*bytes, 8 + 8 * i));
      }
    }
    if (step.contains("as")) saved_[step.at("as")] = *bytes;
  }

  void import_state(const json& step, Mismatches& m) {
    std::vector<uint8_t> bytes = step.contains("from") ? saved_.at(step.at("from")) : from_hex(step.at("hex"));
    if (step.contains("truncate")) bytes.resize(step.at("truncate").get<size_t>());
    if (step.contains("setWords")) {
      const json& words = step.at("setWords");
      for (size_t i = 0; i < words.size(); ++i) {
        if (16 + 8 * i > bytes.size()) bytes.resize(16 + 8 * i);
        write_i64(bytes, 8 + 8 * i, words.at(i));
      }
    }
    const Status status = harness_->import(step.at("rule"), key_of(step), bytes);
    m.compare("status", std::string(step.value("status", "OK")), std::string(name_of(status)));
  }

  Algorithm vector_algorithm(size_t rule) const { return algorithm_named(vector_.at("rules").at(rule).at("algorithm")); }

  const json& vector_;
  std::unique_ptr<Harness> harness_;
  std::map<std::string, std::vector<uint8_t>> saved_;
};

}  // namespace

TEST_CASE("every shared vector decides exactly as hand-computed", "[vectors]") {
  const std::vector<std::string> files = vector_files();
  REQUIRE(files.size() >= 9);
  for (const std::string& file : files) {
    std::ifstream in(file);
    const json document = json::parse(in);
    const std::string name = std::filesystem::path(file).filename().string();
    REQUIRE(!document.at("vectors").empty());
    for (const json& vector : document.at("vectors")) {
      VectorRunner runner(vector);
      const json& steps = vector.at("steps");
      for (size_t i = 0; i < steps.size(); ++i) {
        const Mismatches m = runner.run(steps.at(i));
        if (!m.empty()) {
          // The first wrong step is reported; later ones would only repeat its consequences.
          FAIL_CHECK(name << ": \"" << vector.at("name").get<std::string>() << "\", step " << i << ": "
                          << steps.at(i).dump() << m.text());
          break;
        }
      }
    }
  }
}
