// libFuzzer target over the C ABI of sluice.wasm (wasm-bindings/sluice_abi.h), compiled natively with
// AddressSanitizer and UndefinedBehaviorSanitizer. Each input is a limiter's whole life: a seed, up to
// three rules (small tables, so that keys are evicted and rebuilt from the eviction summary), then a
// sequence of checks, peeks, multi-checks, resets, exports, imports and leases. Besides the sanitizers it
// checks, and aborts on, the invariants the docs promise (docs/core.md):
//   - exactness bounds on the core's clock: what a key was admitted never exceeds its algorithm's bound
//     (evictions included), checked while the calls' time has not gone backwards; units lent count as
//     admitted when the lease is taken or just before it ends (the isolate may use them any time),
//     less those given back at once (give_back takes back exactly those from a sliding log);
//   - atomic denial: a denied multi-check charges nothing (rules that count denied requests aside);
//   - peek = check: a peek decides exactly as the check that follows it;
//   - retry-after admits: a denied request is admitted retry_after_ms later, and not 1 ms before;
//   - corrupted imports are refused: a changed header or length always, and any other change is either
//     refused or imported exactly as written;
//   - the secret scan (sluice_scan_*, the gateway's masking) misses nothing: every input is read a
//     second time as secrets and a text full of their fragments in mixed spellings, with tables built
//     as worker/gateway/redact.js builds them, and the scan's candidates must include every position
//     where a naive matcher (every position, every secret, every start in it) finds 12 characters of
//     a secret in a row, or a whole secret, each character as it is or in an escape the masker reads
//     (the sparse scan when every secret has 7 bytes or more, the dense one otherwise);
//   - the replay's Logpush reader (sluice_logpush_*) says of a line only what JSON.parse would: lines of
//     the input and a realistic Logpush line edited by it (JSON's tokens, the input's bytes, cuts) are
//     read as one batch, and a line called "not JSON" is one nlohmann::json refuses (RFC 8259, as
//     JSON.parse reads ASCII text), a record or no-record line an object it accepts, a record's fields
//     those of its parse (the last duplicate key), its numbers the doubles strtod makes, and every id of
//     the string table names the bytes it stands for, across inputs.
// Run by scripts/fuzz.sh (part of npm test, bounded in time); seeds in fuzz/corpus.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <string>

#include "../wasm-bindings/sluice_abi.h"
#include "sluice/logpush_scan.hpp"
#include "sluice/rule.hpp"
#include "sluice/secret_scan.hpp"

extern "C" uint8_t* sluice_fuzz_io(void);
extern "C" uint8_t* sluice_fuzz_state(void);
extern "C" void sluice_fuzz_teardown(void);
extern "C" sluice::SecretScanTables* sluice_fuzz_scan_tables_new(uint32_t pair_count);
extern "C" uint8_t* sluice_fuzz_scan_reserve(uint32_t length);
extern "C" uint32_t* sluice_fuzz_scan_positions(void);
extern "C" int32_t sluice_fuzz_scan(const sluice::SecretScanTables* tables, uint32_t length);
extern "C" int32_t sluice_fuzz_scan_tables_add_run(sluice::SecretScanTables* tables, uint32_t length, uint32_t min_bytes, uint32_t escapable);
extern "C" uint8_t* sluice_fuzz_logpush_bytes(void);
extern "C" int32_t* sluice_fuzz_logpush_starts(void);
extern "C" int32_t* sluice_fuzz_logpush_ends(void);
extern "C" sluice::LogpushSpans* sluice_fuzz_logpush_spans(void);
extern "C" sluice::LogpushHeader* sluice_fuzz_logpush_headers(void);
extern "C" sluice::LogpushFresh* sluice_fuzz_logpush_fresh(void);
extern "C" uint32_t sluice_fuzz_logpush_fresh_count(void);

namespace {

constexpr int kKeys = 24;
constexpr int kStatusInvalidState = 7;
constexpr int kStatusNotFound = 8;

#define INVARIANT(condition, ...)                                  \
  do {                                                             \
    if (!(condition)) {                                            \
      std::fprintf(stderr, "invariant broken: %s: ", #condition);  \
      std::fprintf(stderr, __VA_ARGS__);                           \
      std::fprintf(stderr, "\n");                                  \
      std::abort();                                                \
    }                                                              \
  } while (0)

struct Rule {
  uint32_t id;
  uint32_t algorithm;  // 0..5
  bool count_denied;
  int64_t limit;
  int64_t window_ms;
  int64_t burst;  // capacity for the buckets
  int64_t block_ms;  // 0: throttles; else a key that exceeds the rule is blocked (sluice/block.hpp)
};

struct Decision {
  int allowed;
  double limit, remaining, reset_ms, retry_after_ms;
  bool operator==(const Decision& o) const {
    return allowed == o.allowed && limit == o.limit && remaining == o.remaining && reset_ms == o.reset_ms &&
           retry_after_ms == o.retry_after_ms;
  }
};

double f64_at(uint32_t offset) {
  double v;
  std::memcpy(&v, sluice_fuzz_io() + offset, 8);
  return v;
}

Decision decision_at(uint32_t offset) {
  return {f64_at(offset) == 1 ? 1 : 0, f64_at(offset + 8), f64_at(offset + 16), f64_at(offset + 24), f64_at(offset + 32)};
}

void key_bytes(int key, uint8_t* out, uint32_t* length) {
  *length = static_cast<uint32_t>(std::snprintf(reinterpret_cast<char*>(out), 16, "k%d", key));
}

void write_key0(int key, uint32_t* length) { key_bytes(key, sluice_fuzz_io(), length); }

int32_t check_one(const Rule& r, int key, uint32_t cost, double now, bool charge, Decision* d) {
  uint32_t length = 0;
  write_key0(key, &length);
  const int32_t result = sluice_check_one(r.id, length, cost, now, charge ? SLUICE_CHECK_CHARGE : 0);
  if (result >= 0) *d = decision_at(SLUICE_IO_OUTCOME_OFFSET);
  return result;
}

// The exported bytes of a key, or empty when it holds no state.
std::vector<uint8_t> exported(const Rule& r, int key) {
  uint32_t length = 0;
  write_key0(key, &length);
  const int32_t n = sluice_export_state(r.id, length);
  if (n == -kStatusNotFound) return {};
  INVARIANT(n > 0, "export failed with %d", n);
  return std::vector<uint8_t>(sluice_fuzz_state(), sluice_fuzz_state() + n);
}

int32_t import(const Rule& r, int key, const std::vector<uint8_t>& bytes) {
  uint32_t length = 0;
  write_key0(key, &length);
  // Bytes past the state area are not written (the ABI refuses a length above it without reading).
  const size_t fits = bytes.size() < sluice_state_buffer_bytes() ? bytes.size() : sluice_state_buffer_bytes();
  if (fits != 0) std::memcpy(sluice_fuzz_state(), bytes.data(), fits);
  return sluice_import_state(r.id, length, static_cast<uint32_t>(bytes.size()));
}

// What a key was admitted, on the core's clock.
struct Admitted {
  int64_t at;
  int64_t cost;
};

void check_bounds(const Rule& r, std::vector<Admitted> admitted) {
  // Lent units may be recorded later than admissions after them: judge the admissions in time order.
  std::stable_sort(admitted.begin(), admitted.end(), [](const Admitted& x, const Admitted& y) { return x.at < y.at; });
  const int64_t w = r.window_ms;
  if (r.algorithm == 0) {  // fixed window: at most limit per aligned window
    std::map<int64_t, int64_t> per_window;
    for (const Admitted& a : admitted) {
      const int64_t in = per_window[a.at / w] += a.cost;
      INVARIANT(in <= r.limit, "fixed window: %lld admitted in window %lld, limit %lld", (long long)in,
                (long long)(a.at / w), (long long)r.limit);
    }
    return;
  }
  for (size_t i = 0; i < admitted.size(); ++i) {
    int64_t sum = 0;
    for (size_t j = i; j < admitted.size(); ++j) {
      sum += admitted[j].cost;
      const int64_t span = admitted[j].at - admitted[i].at;
      if (r.algorithm == 1) {  // sliding log: at most limit in any (t - W, t]
        if (span < w) INVARIANT(sum <= r.limit, "sliding log: %lld in %lld ms", (long long)sum, (long long)span);
      } else if (r.algorithm == 2) {  // sliding counter: below 2 x limit in any window of W
        if (span < w) INVARIANT(sum < 2 * r.limit, "sliding counter: %lld in %lld ms", (long long)sum, (long long)span);
      } else {  // buckets and GCRA: at most burst + floor(span * limit / W) in any interval of `span`
        const int64_t bound = r.burst + span * r.limit / w;
        INVARIANT(sum <= bound, "bucket %u: %lld in %lld ms, bound %lld", r.algorithm, (long long)sum,
                  (long long)span, (long long)bound);
      }
    }
  }
}

// ---- The secret scan ----

constexpr size_t kFragmentBytes = 12;  // redact.js's FRAGMENT_BYTES

using Bytes = std::vector<uint8_t>;

void append(Bytes& out, const char* text) {
  while (*text != 0) out.push_back(static_cast<uint8_t>(*text++));
}

// Character `c` spelled one of the ways redact.js's matcher reads (as it is, or an escape), chosen by
// `how`. Bytes of 0x80 and above are matched as they are or as %XX only.
void spell(Bytes& out, uint8_t c, uint8_t how) {
  char buffer[16];
  const uint8_t kind = c >= 0x80 ? how % 3 : how % 9;
  switch (kind) {
    case 0: out.push_back(c); return;
    case 1: std::snprintf(buffer, sizeof buffer, "%%%02X", c); break;
    case 2: std::snprintf(buffer, sizeof buffer, "%%%02x", c); break;
    case 3: std::snprintf(buffer, sizeof buffer, "\\u%04x", c); break;
    case 4: std::snprintf(buffer, sizeof buffer, "\\u%04X", c); break;
    case 5: std::snprintf(buffer, sizeof buffer, "\\x%02x", c); break;
    case 6: std::snprintf(buffer, sizeof buffer, "&#%u;", c); break;
    case 7: std::snprintf(buffer, sizeof buffer, "&#x%X;", c); break;
    default:
      if (c == ' ') std::snprintf(buffer, sizeof buffer, "+");
      else if (c == '/' || c == '"' || c == '\\') std::snprintf(buffer, sizeof buffer, "\\%c", c);
      else std::snprintf(buffer, sizeof buffer, "%c", c);
  }
  append(out, buffer);
}

int hex_value(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
  return -1;
}

// The escape at text[at]: sets *value and returns its length, or 0 (the naive reading: %XX, +,
// \uXXXX, \xXX, \/ \" \\, &#D; and &#xH; of 1 to 6 digits).
size_t escape_at(const Bytes& text, size_t at, int* value) {
  const size_t n = text.size();
  auto hex = [&](size_t from, size_t count) {
    if (from + count > n) return -1;
    int v = 0;
    for (size_t i = 0; i < count; ++i) {
      const int d = hex_value(text[from + i]);
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    return v;
  };
  const uint8_t c = text[at];
  if (c == '+') return *value = ' ', 1;
  if (c == '%') return (*value = hex(at + 1, 2)) >= 0 ? 3 : 0;
  if (c == '\\' && at + 1 < n) {
    const uint8_t next = text[at + 1];
    if (next == 'u') return (*value = hex(at + 2, 4)) >= 0 ? 6 : 0;
    if (next == 'x') return (*value = hex(at + 2, 2)) >= 0 ? 4 : 0;
    if (next == '/' || next == '"' || next == '\\') return *value = next, 2;
    return 0;
  }
  if (c == '&' && at + 1 < n && text[at + 1] == '#') {
    const bool is_hex = at + 2 < n && (text[at + 2] | 0x20) == 'x';
    size_t i = at + (is_hex ? 3 : 2);
    int v = 0;
    size_t digits = 0;
    for (; i < n && digits <= 6; ++i, ++digits) {
      const int d = is_hex ? hex_value(text[i]) : (text[i] >= '0' && text[i] <= '9' ? text[i] - '0' : -1);
      if (d < 0) break;
      v = v * (is_hex ? 16 : 10) + d;
    }
    if (digits == 0 || digits > 6 || i >= n || text[i] != ';') return 0;
    return *value = v, i + 1 - at;
  }
  return 0;
}

// Whether text[at...] spells secret[i...] for `need` characters (each as it is, or an escape of it;
// both readings are tried where both fit).
bool spells(const Bytes& text, size_t at, const Bytes& secret, size_t i, size_t need) {
  if (need == 0) return true;
  if (at >= text.size() || i >= secret.size()) return false;
  const uint8_t want = secret[i];
  if (text[at] == want && spells(text, at + 1, secret, i + 1, need - 1)) return true;
  int value = -1;
  const size_t length = escape_at(text, at, &value);
  if (length == 0 || value != want) return false;
  if (want >= 0x80 && text[at] != '%') return false;
  return spells(text, at + length, secret, i + 1, need - 1);
}

// The tables redact.js's scanInput builds for `secrets` (its base64 needles aside), in the scan's layout.
sluice::SecretScanTables* scan_tables(const std::vector<Bytes>& secrets) {
  std::map<uint32_t, std::array<uint32_t, 8>> thirds;
  for (const Bytes& b : secrets) {
    if (b.size() <= kFragmentBytes) continue;
    for (size_t from = 0; from + kFragmentBytes <= b.size(); ++from) {
      thirds[(static_cast<uint32_t>(b[from]) << 8) | b[from + 1]][b[from + 2] >> 5] |= 1u << (b[from + 2] & 31);
    }
  }
  sluice::SecretScanTables* t = sluice_fuzz_scan_tables_new(static_cast<uint32_t>(thirds.size()));
  INVARIANT(t != nullptr, "no memory for %zu pairs", thirds.size());
  auto* sets = reinterpret_cast<sluice::ThirdSet*>(t + 1);
  uint32_t index = 0;
  for (const auto& [pair, words] : thirds) {
    t->pair_index[pair] = static_cast<uint16_t>(++index);
    t->pair_bits[pair >> 5] |= 1u << (pair & 31);
    for (int w = 0; w < 8; ++w) sets[index - 1].words[w] = words[w];
  }
  for (const Bytes& b : secrets) {
    if (b.size() <= kFragmentBytes) t->raw_start[b[0]] = 1;
    t->escape_value_start[b[0]] = 1;
    if (b.size() <= kFragmentBytes) continue;
    t->has_fragments = 1;
    for (size_t from = 0; from + kFragmentBytes <= b.size(); ++from) {
      t->fragment_first[b[from]] = 1;
      t->escape_value_start[b[from]] = 1;
    }
  }
  // The sparse scan's runs (every secret: 12 of its bytes, or all when it is shorter), added through
  // the export, which reads them from the scan area. A secret of 6 bytes or fewer keeps the dense scan.
  for (const Bytes& b : secrets) {
    uint8_t* area = sluice_fuzz_scan_reserve(static_cast<uint32_t>(b.size()));
    INVARIANT(area != nullptr, "no memory for a run of %zu bytes", b.size());
    std::memcpy(area, b.data(), b.size());
    const uint32_t min_bytes = static_cast<uint32_t>(std::min(b.size(), kFragmentBytes));
    INVARIANT(sluice_fuzz_scan_tables_add_run(t, static_cast<uint32_t>(b.size()), min_bytes, 1) == 0, "add_run refused %zu bytes", b.size());
  }
  sluice::prepare_secret_scan(*t);
  return t;
}

void check_secret_scan(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::vector<Bytes> secrets(in.ConsumeIntegralInRange<size_t>(1, 3));
  for (Bytes& secret : secrets) {
    const size_t length = in.ConsumeIntegralInRange<size_t>(1, 40);
    for (size_t i = 0; i < length; ++i) secret.push_back(in.ConsumeIntegral<uint8_t>());
  }
  // The text: pieces of the input's bytes as they are, and runs of a secret in mixed spellings.
  Bytes text;
  while (text.size() < 4000 && in.remaining_bytes() > 0) {
    if (in.ConsumeBool()) {
      const size_t count = in.ConsumeIntegralInRange<size_t>(1, 16);
      for (size_t i = 0; i < count && in.remaining_bytes() > 0; ++i) text.push_back(in.ConsumeIntegral<uint8_t>());
    } else {
      const Bytes& secret = secrets[in.ConsumeIntegralInRange<size_t>(0, secrets.size() - 1)];
      const size_t from = in.ConsumeIntegralInRange<size_t>(0, secret.size() - 1);
      const size_t to = in.ConsumeIntegralInRange<size_t>(from + 1, secret.size());
      for (size_t i = from; i < to; ++i) spell(text, secret[i], in.ConsumeIntegral<uint8_t>());
    }
  }
  if (text.empty()) return;
  sluice::SecretScanTables* tables = scan_tables(secrets);
  uint8_t* area = sluice_fuzz_scan_reserve(static_cast<uint32_t>(text.size()));
  INVARIANT(area != nullptr, "no memory to scan %zu bytes", text.size());
  std::memcpy(area, text.data(), text.size());
  const int32_t count = sluice_fuzz_scan(tables, static_cast<uint32_t>(text.size()));
  INVARIANT(count >= 0 && static_cast<size_t>(count) <= text.size(), "scan returned %d for %zu bytes", count, text.size());
  const uint32_t* positions = sluice_fuzz_scan_positions();
  std::vector<bool> candidate(text.size(), false);
  for (int32_t k = 0; k < count; ++k) {
    INVARIANT(positions[k] < text.size() && (k == 0 || positions[k] > positions[k - 1]), "positions out of order at %d", k);
    candidate[positions[k]] = true;
  }
  for (size_t at = 0; at < text.size(); ++at) {
    if (candidate[at]) continue;
    for (size_t s = 0; s < secrets.size(); ++s) {
      const Bytes& secret = secrets[s];
      INVARIANT(!spells(text, at, secret, 0, secret.size()), "secret %zu (%zu bytes) at %zu is no candidate", s, secret.size(), at);
      if (secret.size() <= kFragmentBytes) continue;
      for (size_t from = 0; from + kFragmentBytes <= secret.size(); ++from) {
        INVARIANT(!spells(text, at, secret, from, kFragmentBytes), "12 bytes of secret %zu from its byte %zu at %zu are no candidate", s, from, at);
      }
    }
  }
  std::free(tables);
}

// ---- The replay's Logpush reader ----

const char kLogpushTemplate[] =
    R"x({"ClientIP":"198.51.100.7","ClientRequestHost":"shop.example","ClientRequestMethod":"GET","ClientRequestURI":"/api/items/1?page=2",)x"
    R"x("ClientRequestUserAgent":"Mozilla/5.0 (X11; Linux x86_64)","EdgeResponseStatus":200,"EdgeStartTimestamp":1764460800123456789,)x"
    R"x("RequestHeaders":{"authorization":"Bearer tok","x-api-key":"k1"}})x";
const char* const kJsonTokens[] = {
    "\"", "\\", "{", "}", "[", "]", ":", ",", " ", "\t", "\r", "0", "-", ".", "e", "E+", "1e400", "-0", "1.5", "true", "null",
    "\\u0041", "\\ud800", "\\n", "\x7f", "\x01", "\xc3\xa9", "\xff", "\"ClientIP\":\"x\",", "\"ClientRequestURI\":\"/d\",",
    "\"ClientRequestPath\":\"/p\",", "\"EdgeStartTimestamp\":", "\"EdgeResponseStatus\":", "\"ClientRequestMethod\":\"POST\",",
    "\"RequestHeaders\":{\"A\":\"b\",\"a\":\"c\"},", "\"RequestHeaders\":{\"n\":1,\"v\":\"w\"},", "\"JA4\":\"t\",",
    "\"2026-11-30T00:00:00Z\"", "1795996915.306", "18446744073709551616", "9007199254740993",
};

std::string span(const std::string& line, int32_t start, int32_t end) {
  return line.substr(static_cast<size_t>(start), static_cast<size_t>(end - start));
}

// The double JSON.parse makes of a JSON number nlohmann parsed (its integers are exact, its floats strtod's).
double json_number(const nlohmann::json& j) {
  if (j.is_number_unsigned()) return static_cast<double>(j.get<uint64_t>());
  if (j.is_number_integer()) return static_cast<double>(j.get<int64_t>());
  return j.get<double>();
}

// The string table's strings as the JavaScript reader keeps them, across inputs (the module's table is too).
std::vector<std::string>& logpush_mirror() {
  static std::vector<std::string> mirror(sluice::LogpushStrings::kSlots);
  return mirror;
}

void check_logpush_scan(const uint8_t* data, size_t size) {
  std::vector<std::string> lines;
  // The input's own lines.
  for (size_t from = 0; from <= size && lines.size() < 8;) {
    const auto* newline = static_cast<const uint8_t*>(std::memchr(data + from, '\n', size - from));
    const size_t end = newline == nullptr ? size : static_cast<size_t>(newline - data);
    lines.emplace_back(reinterpret_cast<const char*>(data + from), end - from);
    from = end + 1;
  }
  // A realistic line, edited: tokens of JSON's, bytes of the input, cuts.
  FuzzedDataProvider in(data, size);
  for (int n = 0; n < 6 && in.remaining_bytes() > 0; ++n) {
    std::string line = kLogpushTemplate;
    const int edits = in.ConsumeIntegralInRange(0, 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = in.ConsumeIntegralInRange<size_t>(0, line.size());
      switch (in.ConsumeIntegralInRange(0, 3)) {
        case 0:
          line.insert(at, kJsonTokens[in.ConsumeIntegralInRange<size_t>(0, sizeof(kJsonTokens) / sizeof(kJsonTokens[0]) - 1)]);
          break;
        case 1:
          line.insert(at, in.ConsumeBytesAsString(in.ConsumeIntegralInRange<size_t>(1, 4)));
          break;
        case 2:
          line.erase(at, in.ConsumeIntegralInRange<size_t>(1, 8));
          break;
        default:
          if (at < line.size()) line[at] = static_cast<char>(in.ConsumeIntegral<uint8_t>());
      }
    }
    for (char& c : line) {
      if (c == '\n') c = ' ';
    }
    lines.push_back(line);
  }
  std::string batch;
  std::vector<int32_t> starts;
  std::vector<int32_t> ends;
  for (const std::string& line : lines) {
    starts.push_back(static_cast<int32_t>(batch.size()));
    batch += line;
    ends.push_back(static_cast<int32_t>(batch.size()));
    batch += '\n';
  }
  const auto count = static_cast<uint32_t>(lines.size());
  INVARIANT(sluice_logpush_reserve(static_cast<uint32_t>(batch.size()), count) == 1, "no memory for %u lines", count);
  std::memcpy(sluice_fuzz_logpush_bytes(), batch.data(), batch.size());
  std::memcpy(sluice_fuzz_logpush_starts(), starts.data(), count * sizeof(int32_t));
  std::memcpy(sluice_fuzz_logpush_ends(), ends.data(), count * sizeof(int32_t));
  const int32_t headers_written = sluice_logpush_scan(count);
  INVARIANT(headers_written >= 0, "scan refused %u lines", count);
  std::vector<std::string>& mirror = logpush_mirror();
  const sluice::LogpushFresh* fresh = sluice_fuzz_logpush_fresh();
  for (uint32_t k = 0; k < sluice_fuzz_logpush_fresh_count(); ++k) {
    INVARIANT(fresh[k].slot >= 0 && static_cast<uint32_t>(fresh[k].slot) < sluice::LogpushStrings::kSlots, "fresh slot %d", fresh[k].slot);
    mirror[static_cast<size_t>(fresh[k].slot)] = span(batch, fresh[k].start, fresh[k].end);
  }
  const sluice::LogpushSpans* spans = sluice_fuzz_logpush_spans();
  const sluice::LogpushHeader* headers = sluice_fuzz_logpush_headers();
  for (uint32_t i = 0; i < count; ++i) {
    const std::string& line = lines[i];
    const sluice::LogpushSpans& s = spans[i];
    const auto kind = static_cast<sluice::LogpushLine>(s.kind);
    // nlohmann refuses a number beyond the doubles ("number overflow") and a lone surrogate escaped
    // (\ud800), which JSON.parse makes Infinity and a lone UTF-16 unit: such a line is left to
    // test/js/replay-logpush-batch.test.js, which asks JSON.parse itself.
    bool accepted = true;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& error) {
      if (std::strstr(error.what(), "number overflow") != nullptr || std::strstr(error.what(), "surrogate") != nullptr) continue;
      accepted = false;
    }
    size_t first = 0;
    while (first < line.size() && (line[first] == ' ' || line[first] == '\t' || line[first] == '\r')) ++first;
    switch (kind) {
      case sluice::LogpushLine::kBlank:
        for (const char c : line) INVARIANT(c == ' ' || (c >= '\t' && c <= '\r'), "line %u called blank", i);
        break;
      case sluice::LogpushLine::kNotObject:
        INVARIANT(first == line.size() || line[first] != '{', "line %u begins with an object", i);
        break;
      case sluice::LogpushLine::kNotJson:
        INVARIANT(!accepted, "line %u called not JSON is JSON: %s", i, line.c_str());
        break;
      case sluice::LogpushLine::kNoRecord:
      case sluice::LogpushLine::kRecord:
        INVARIANT(accepted && line[first] == '{', "line %u called an object is none: %s", i, line.c_str());
        break;
      case sluice::LogpushLine::kFallback:
        break;
      default:
        INVARIANT(false, "line %u has verdict %d", i, s.kind);
    }
    if (kind != sluice::LogpushLine::kRecord) continue;
    for (const char c : line) INVARIANT(static_cast<uint8_t>(c) < 0x80, "a record of line %u has a byte above 0x7F", i);
    const auto is = [&j, &batch](const char* key, int32_t start, int32_t end) {
      return j.contains(key) && j[key].is_string() && j[key].get<std::string>() == span(batch, start, end);
    };
    INVARIANT(is("ClientIP", s.ip_start, s.ip_end), "line %u: address", i);
    INVARIANT(is("ClientRequestMethod", s.method_start, s.method_end), "line %u: method", i);
    INVARIANT(is("ClientRequestURI", s.uri_start, s.uri_end) ||
                  (!(j.contains("ClientRequestURI") && j["ClientRequestURI"].is_string()) && is("ClientRequestPath", s.uri_start, s.uri_end)),
              "line %u: URI", i);
    INVARIANT(s.host_start < 0 ? !(j.contains("ClientRequestHost") && j["ClientRequestHost"].is_string())
                               : is("ClientRequestHost", s.host_start, s.host_end),
              "line %u: host", i);
    const nlohmann::json& time = j["EdgeStartTimestamp"];
    if (s.time_form == sluice::kLogpushString) INVARIANT(is("EdgeStartTimestamp", s.time_start, s.time_end), "line %u: time string", i);
    else if (s.time_form == sluice::kLogpushNumber) INVARIANT(time.is_number() && json_number(time) == s.time, "line %u: time %.17g", i, s.time);
    else INVARIANT(time.is_number() && s.time_start >= 0, "line %u: time text", i);
    const bool has_status = j.contains("EdgeResponseStatus") && j["EdgeResponseStatus"].is_number();
    if (s.status_start < 0) {
      const double want = has_status ? json_number(j["EdgeResponseStatus"]) : 0;
      INVARIANT(s.status == (std::isfinite(want) && std::trunc(want) == want ? want : 0), "line %u: status %.17g", i, s.status);
    } else {
      INVARIANT(has_status, "line %u: status text", i);
    }
    const bool has_headers = j.contains("RequestHeaders") && j["RequestHeaders"].is_object();
    size_t string_headers = 0;
    if (has_headers) {
      for (const auto& member : j["RequestHeaders"].items()) string_headers += member.value().is_string() ? 1 : 0;
    }
    INVARIANT(static_cast<size_t>(s.header_count) == string_headers, "line %u: %d headers, %zu in the parse", i, s.header_count, string_headers);
    for (int32_t k = 0; k < s.header_count; ++k) {
      const sluice::LogpushHeader& h = headers[s.header_first + k];
      const std::string name = span(batch, h.name_start, h.name_end);
      INVARIANT(j["RequestHeaders"][name].get<std::string>() == span(batch, h.value_start, h.value_end), "line %u: header %s", i, name.c_str());
      if (h.name_id > 0) INVARIANT(mirror[static_cast<size_t>(h.name_id - 1)] == name, "line %u: header name id %d", i, h.name_id);
    }
    if (s.method_id > 0) INVARIANT(mirror[static_cast<size_t>(s.method_id - 1)] == span(batch, s.method_start, s.method_end), "line %u: method id", i);
    if (s.host_id > 0) INVARIANT(mirror[static_cast<size_t>(s.host_id - 1)] == span(batch, s.host_start, s.host_end), "line %u: host id", i);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_secret_scan(data, size);
  check_logpush_scan(data, size);
  FuzzedDataProvider in(data, size);
  sluice_fuzz_teardown();
  sluice_init(in.ConsumeIntegral<uint32_t>(), in.ConsumeIntegral<uint32_t>(), 7, 9);

  std::vector<Rule> rules;
  const int rule_count = in.ConsumeIntegralInRange(1, 3);
  for (int i = 0; i < rule_count; ++i) {
    Rule r{};
    r.algorithm = in.ConsumeIntegralInRange<uint32_t>(0, 5);
    r.count_denied = r.algorithm == 2 && in.ConsumeBool();
    r.limit = in.ConsumeIntegralInRange<int64_t>(1, 12);
    r.window_ms = in.ConsumeIntegralInRange<int64_t>(1, 4000);
    const bool bucket = r.algorithm >= 3;
    r.burst = bucket ? in.ConsumeIntegralInRange<int64_t>(0, 16) : 0;
    const uint32_t capacity = in.ConsumeIntegralInRange<uint32_t>(1, 40);
    r.block_ms = !r.count_denied && in.ConsumeIntegralInRange(0, 2) == 0 ? in.ConsumeIntegralInRange<int64_t>(1, 3 * r.window_ms) : 0;
    const int32_t id = sluice_add_rule(r.algorithm | (r.count_denied ? SLUICE_RULE_COUNT_DENIED : 0u),
                                       static_cast<double>(r.limit), static_cast<double>(r.window_ms),
                                       static_cast<double>(r.burst), capacity, static_cast<double>(r.block_ms));
    INVARIANT(id >= 0, "a valid rule was refused: %d", id);
    r.id = static_cast<uint32_t>(id);
    if (r.burst == 0) r.burst = r.limit;
    rules.push_back(r);
  }

  // Admissions per (rule, key) on the core's clock; bounds are checked while time has not gone back.
  std::map<std::pair<uint32_t, int>, std::vector<Admitted>> admitted;
  std::map<std::pair<uint32_t, int>, int64_t> key_clock;
  int64_t now = 1'700'000'000'000 + in.ConsumeIntegralInRange<int64_t>(0, 1'000'000);
  // One input in four lets time step back (then the bounds, promised on the core's clock, are not checked).
  const bool backwards = in.ConsumeIntegralInRange(0, 3) == 0;
  bool went_back = false;
  const auto record = [&](const Rule& r, int key, int64_t cost) {
    int64_t& clock = key_clock[{r.id, key}];
    clock = clock > now ? clock : now;
    admitted[{r.id, key}].push_back({clock, cost});
  };

  while (in.remaining_bytes() > 0) {
    const int op = in.ConsumeIntegralInRange(0, 10);
    // Time moves on by 0 .. 2 windows of the first rule, or (rarely) steps back.
    if (backwards && in.ConsumeIntegralInRange(0, 15) == 0) {
      now -= in.ConsumeIntegralInRange<int64_t>(1, 3000);
      went_back = true;
    } else {
      now += in.ConsumeIntegralInRange<int64_t>(0, 2 * rules[0].window_ms);
    }
    const Rule& r = rules[in.ConsumeIntegralInRange<size_t>(0, rules.size() - 1)];
    const int key = in.ConsumeIntegralInRange(0, kKeys - 1);
    const uint32_t cost = in.ConsumeIntegralInRange<uint32_t>(1, static_cast<uint32_t>(r.burst + 1));
    const double t = static_cast<double>(now);

    if (op <= 4) {
      // peek = check, then retry-after admits (and not a millisecond sooner).
      Decision peeked{}, checked{};
      INVARIANT(check_one(r, key, cost, t, false, &peeked) >= 0, "peek failed");
      const std::vector<uint8_t> before = exported(r, key);
      INVARIANT(check_one(r, key, cost, t, true, &checked) >= 0, "check failed");
      INVARIANT(peeked == checked, "peek and check disagree (rule %u key %d cost %u)", r.id, key, cost);
      if (checked.allowed) {
        record(r, key, cost);
        continue;
      }
      if (!r.count_denied && (r.block_ms == 0 || checked.retry_after_ms < 0)) {
        INVARIANT(exported(r, key) == before, "a denied check changed its key");
      }
      if (checked.retry_after_ms < 0 || r.count_denied) continue;
      if (r.block_ms != 0) {
        // Blocked: every request is denied until retry_after_ms, which is at least block_ms, and the key
        // then starts afresh at its full quota.
        Decision one{}, fresh{};
        // A block this denial started (the key held no blocked form, whose first word is negative).
        int64_t first_word = 0;
        if (before.size() >= 16) std::memcpy(&first_word, before.data() + 8, 8);
        // A key not in its table (no exported state) may start blocked from the eviction summary, until
        // the end of a block folded into its cells: only a key held unblocked starts a block here.
        if (!before.empty() && first_word >= 0) {
          INVARIANT(checked.retry_after_ms >= static_cast<double>(r.block_ms), "a block of %g ms, block_ms %lld",
                    checked.retry_after_ms, (long long)r.block_ms);
        }
        // Asked at the block's end, which only times the ABI accepts can be: an imported blocked form may
        // end past kMaxTimeMs (valid_blocked_state allows any exact integer), and is then denied until then.
        if (t + checked.retry_after_ms <= static_cast<double>(sluice::kMaxTimeMs)) {
          INVARIANT(check_one(r, key, 1, t + checked.retry_after_ms - 1, false, &one) >= 0, "peek failed");
          INVARIANT(!one.allowed && one.retry_after_ms == 1, "a blocked key admitted 1 ms before its block ended");
          INVARIANT(check_one(r, key, 1, t + checked.retry_after_ms, false, &fresh) >= 0, "peek failed");
          INVARIANT(fresh.allowed && fresh.remaining == static_cast<double>(r.burst - 1),
                    "a key is not at full quota when its block ends");
        }
      }
      INVARIANT(checked.retry_after_ms > 0, "denied with retry_after 0");
      // Only a time the ABI accepts can be asked (see the block's end above).
      if (t + checked.retry_after_ms > static_cast<double>(sluice::kMaxTimeMs)) continue;
      Decision later{}, sooner{};
      INVARIANT(check_one(r, key, cost, t + checked.retry_after_ms, false, &later) >= 0, "peek failed");
      INVARIANT(later.allowed, "not admitted retry_after_ms (%g) later", checked.retry_after_ms);
      INVARIANT(check_one(r, key, cost, t + checked.retry_after_ms - 1, false, &sooner) >= 0, "peek failed");
      INVARIANT(!sooner.allowed, "admitted 1 ms before retry_after_ms (%g)", checked.retry_after_ms);
    } else if (op <= 6) {
      // A multi-check: all or nothing.
      const uint32_t count = in.ConsumeIntegralInRange<uint32_t>(2, 4);
      struct Item {
        const Rule* rule;
        int key;
        uint32_t cost;
      };
      std::vector<Item> items;
      std::vector<std::vector<uint8_t>> before;
      uint8_t* io = sluice_fuzz_io();
      for (uint32_t i = 0; i < count; ++i) {
        const Rule& ri = rules[in.ConsumeIntegralInRange<size_t>(0, rules.size() - 1)];
        const int ki = in.ConsumeIntegralInRange(0, kKeys - 1);
        const uint32_t ci = in.ConsumeIntegralInRange<uint32_t>(1, static_cast<uint32_t>(ri.burst));
        items.push_back({&ri, ki, ci});
      }
      for (const Item& item : items) before.push_back(exported(*item.rule, item.key));
      for (uint32_t i = 0; i < count; ++i) {
        uint32_t length = 0;
        key_bytes(items[i].key, io + SLUICE_KEY_STRIDE * i, &length);
        const uint32_t words[4] = {items[i].rule->id, SLUICE_KEY_STRIDE * i, length, items[i].cost};
        std::memcpy(io + SLUICE_IO_CHECKS_OFFSET + 16 * i, words, 16);
      }
      const int32_t result = sluice_check(count, t, SLUICE_CHECK_CHARGE);
      INVARIANT(result == 0, "multi-check failed with %d", result);
      const Decision outcome = decision_at(SLUICE_IO_OUTCOME_OFFSET);
      if (outcome.allowed) {
        // Checks of the same rule and key are one request of their summed cost.
        std::map<std::pair<uint32_t, int>, std::pair<const Rule*, int64_t>> charged;
        for (const Item& item : items) {
          auto& entry = charged[{item.rule->id, item.key}];
          entry.first = item.rule;
          entry.second += item.cost;
        }
        for (const auto& [id_key, rule_cost] : charged) record(*rule_cost.first, id_key.second, rule_cost.second);
      } else {
        for (size_t i = 0; i < items.size(); ++i) {
          if (items[i].rule->count_denied) continue;
          // A blocking rule's own denial blocks its key (checked as the single check's is, above).
          const Decision own = decision_at(SLUICE_IO_DECISIONS_OFFSET + 40 * static_cast<uint32_t>(i));
          if (items[i].rule->block_ms != 0 && !own.allowed && own.retry_after_ms > 0) {
            // Only a time the ABI accepts can be asked (an imported block may end past kMaxTimeMs).
            if (t + own.retry_after_ms - 1 > static_cast<double>(sluice::kMaxTimeMs)) continue;
            Decision blocked{};
            INVARIANT(check_one(*items[i].rule, items[i].key, 1, t + own.retry_after_ms - 1, false, &blocked) >= 0, "peek failed");
            INVARIANT(!blocked.allowed, "a blocking rule's denial in a multi-check did not block check %zu", i);
            continue;
          }
          INVARIANT(exported(*items[i].rule, items[i].key) == before[i], "a denied multi-check charged check %zu", i);
        }
      }
    } else if (op == 7) {
      // Export, corrupt, import.
      std::vector<uint8_t> bytes = exported(r, key);
      if (bytes.empty()) continue;
      const int other = in.ConsumeIntegralInRange(0, kKeys - 1);
      const int how = in.ConsumeIntegralInRange(0, 3);
      std::vector<uint8_t> bad = bytes;
      bool must_refuse = false;
      if (how == 0) {
        bad[in.ConsumeIntegralInRange<size_t>(0, 7)] ^= static_cast<uint8_t>(in.ConsumeIntegralInRange(1, 255));
        must_refuse = true;
      } else if (how == 1) {
        bad.resize(in.ConsumeIntegralInRange<size_t>(0, bytes.size() - 1));
        must_refuse = true;
      } else if (how == 2) {
        bad.push_back(in.ConsumeIntegral<uint8_t>());
        must_refuse = true;
      } else {
        bad[in.ConsumeIntegralInRange<size_t>(8, bad.size() - 1)] ^= static_cast<uint8_t>(in.ConsumeIntegralInRange(1, 255));
      }
      const std::vector<uint8_t> had = exported(r, other);
      const int32_t status = import(r, other, bad);
      if (must_refuse) INVARIANT(status == -kStatusInvalidState, "a corrupted header or length was imported (%d)", status);
      if (status == 0) {
        INVARIANT(exported(r, other) == bad, "an import was not kept as written");
        admitted.erase({r.id, other});  // another history now: bounds no longer apply to this key
        key_clock.erase({r.id, other});
      } else {
        INVARIANT(status == -kStatusInvalidState, "import failed with %d", status);
        INVARIANT(exported(r, other) == had, "a refused import changed the key");
      }
    } else if (op == 8) {
      uint32_t length = 0;
      write_key0(key, &length);
      INVARIANT(sluice_reset(r.id, length) == 0, "reset failed");
      Decision fresh{};
      INVARIANT(check_one(r, key, 1, t, false, &fresh) >= 0, "peek failed");
      INVARIANT(fresh.allowed && fresh.remaining == static_cast<double>(r.burst - 1), "a reset key is not at full quota");
      admitted.erase({r.id, key});
      key_clock.erase({r.id, key});
    } else if (op == 10) {
      // A lease: its units are admissions, used at the worst time the lease allows.
      uint32_t length = 0;
      write_key0(key, &length);
      const uint32_t wanted = in.ConsumeIntegralInRange<uint32_t>(0, 20);
      const double lease_ms = static_cast<double>(in.ConsumeIntegralInRange<int64_t>(1, 2 * r.window_ms));
      // Near a window's end a window rule may lend from the next window (usable from its start).
      const double ahead_ms = static_cast<double>(in.ConsumeIntegralInRange<int64_t>(0, 2 * r.window_ms));
      const int32_t units = sluice_lend(r.id, length, wanted, lease_ms, t, ahead_ms);
      if (r.block_ms != 0) {
        INVARIANT(units == -10, "a blocking rule lent (%d)", units);  // kInvalidArgument: it does not lend
        continue;
      }
      INVARIANT(units >= 0 && units <= static_cast<int32_t>(wanted), "lend returned %d for %u wanted", units, wanted);
      if (units == 0) continue;
      const int64_t expires = static_cast<int64_t>(f64_at(SLUICE_IO_OUTCOME_OFFSET + 8));
      const int64_t starts = static_cast<int64_t>(f64_at(SLUICE_IO_OUTCOME_OFFSET + 24));
      const int64_t next_window = (now / r.window_ms + 1) * r.window_ms;
      const bool windowed = r.algorithm == 0 || r.algorithm == 2;
      INVARIANT(starts == now || (windowed && starts == next_window && next_window - now <= static_cast<int64_t>(ahead_ms)),
                "a lease lent at %lld starts at %lld", (long long)now, (long long)starts);
      INVARIANT(expires > starts && expires <= starts + static_cast<int64_t>(lease_ms), "a lease ends at %lld", (long long)expires);
      // The sliding log's lease starts now and lasts at most a quarter window.
      if (r.algorithm == 1) {
        const int64_t longest = std::min(static_cast<int64_t>(lease_ms), r.window_ms / 4);
        INVARIANT(expires == now + longest, "a sliding log's lease ends at %lld, not %lld", (long long)expires,
                  (long long)(now + longest));
      }
      // Some units come back unused at once: the log takes back exactly those, the windows at most those.
      const uint32_t unused = in.ConsumeIntegralInRange<uint32_t>(0, static_cast<uint32_t>(units));
      write_key0(key, &length);
      const int32_t returned = sluice_give_back(r.id, length, unused, static_cast<double>(expires));
      INVARIANT(returned >= 0 && returned <= static_cast<int32_t>(unused), "give_back returned %d of %u", returned, unused);
      if (r.algorithm == 1) INVARIANT(returned == static_cast<int32_t>(unused), "the log took back %d of %u", returned, unused);
      if (units == returned) continue;
      const bool late = in.ConsumeBool();
      int64_t& clock = key_clock[{r.id, key}];
      clock = clock > now ? clock : now;
      admitted[{r.id, key}].push_back({late ? expires - 1 : std::max(clock, starts), units - returned});
    } else {
      INVARIANT(sluice_stats(r.id) == 0, "stats failed");
      const double keys = f64_at(SLUICE_IO_OUTCOME_OFFSET), slots = f64_at(SLUICE_IO_OUTCOME_OFFSET + 8);
      INVARIANT(keys <= slots, "more keys than slots");
    }
  }
  if (!went_back) {
    for (const Rule& r : rules) {
      for (int key = 0; key < kKeys; ++key) {
        const auto found = admitted.find({r.id, key});
        if (found != admitted.end()) check_bounds(r, found->second);
      }
    }
  }
  return 0;
}
