// The replay's Logpush reader (sluice/logpush_scan.hpp): each verdict, the spans a record is made of,
// the numbers it converts (and the ones it leaves to JavaScript), duplicate keys, and the string
// table's ids across batches. test/js/replay-logpush-batch.test.js compares it with JSON.parse and
// parseLogpushLine through the wasm module, line by line.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sluice/logpush_scan.hpp"

namespace {

using sluice::LogpushHeader;
using sluice::LogpushLine;
using sluice::LogpushSpans;

struct Scanned {
  std::string line;
  LogpushSpans spans{};
  std::vector<LogpushHeader> headers = std::vector<LogpushHeader>(sluice::kLogpushMaxHeaders);
  LogpushLine kind = LogpushLine::kBlank;

  std::string text(int32_t start, int32_t end) const { return start < 0 ? "<none>" : line.substr(static_cast<size_t>(start), static_cast<size_t>(end - start)); }
};

Scanned scan(const std::string& line) {
  Scanned s;
  s.line = line;
  s.kind = sluice::scan_logpush_line(reinterpret_cast<const uint8_t*>(s.line.data()), 0, static_cast<int32_t>(s.line.size()), s.spans,
                                     s.headers.data(), static_cast<uint32_t>(s.headers.size()));
  return s;
}

const std::string kRecord =
    R"({"ClientIP":"198.51.100.7","ClientRequestHost":"shop.example","ClientRequestMethod":"GET","ClientRequestURI":"/api/items/1?page=2",)"
    R"x("ClientRequestUserAgent":"Mozilla/5.0 (X11; Linux x86_64)","EdgeResponseStatus":200,"EdgeStartTimestamp":1764460800123456789,)x"
    R"("RequestHeaders":{"Authorization":"Bearer tok","x-n":5}})";

}  // namespace

TEST_CASE("logpush scan: a realistic line is a record, its fields where they lie") {
  const Scanned s = scan(kRecord);
  REQUIRE(s.kind == LogpushLine::kRecord);
  CHECK(s.text(s.spans.ip_start, s.spans.ip_end) == "198.51.100.7");
  CHECK(s.text(s.spans.host_start, s.spans.host_end) == "shop.example");
  CHECK(s.text(s.spans.method_start, s.spans.method_end) == "GET");
  CHECK(s.text(s.spans.uri_start, s.spans.uri_end) == "/api/items/1?page=2");
  CHECK(s.spans.time_form == sluice::kLogpushNumber);
  CHECK(s.spans.time == 1764460800123456789.0);
  CHECK(s.spans.status == 200.0);
  CHECK(s.spans.status_start == -1);
  // Only string-valued headers.
  REQUIRE(s.spans.header_count == 1);
  CHECK(s.text(s.headers[0].name_start, s.headers[0].name_end) == "Authorization");
  CHECK(s.text(s.headers[0].value_start, s.headers[0].value_end) == "Bearer tok");
}

TEST_CASE("logpush scan: blank, not an object, not JSON, no record") {
  struct Row {
    const char* line;
    LogpushLine kind;
  };
  const Row rows[] = {
      {"", LogpushLine::kBlank},
      {" \t\r\v\f", LogpushLine::kBlank},
      {"\v{}", LogpushLine::kNotObject},  // trim's white space, not JSON's
      {"[1]", LogpushLine::kNotObject},
      {"null", LogpushLine::kNotObject},
      {"x", LogpushLine::kNotObject},
      {"{", LogpushLine::kNotJson},
      {"{}x", LogpushLine::kNotJson},
      {"{},", LogpushLine::kNotJson},
      {R"({"a":01})", LogpushLine::kNotJson},
      {R"({"a":1.})", LogpushLine::kNotJson},
      {R"({"a":-})", LogpushLine::kNotJson},
      {R"({"a":1e})", LogpushLine::kNotJson},
      {R"({"a":tru})", LogpushLine::kNotJson},
      {R"({"a":[1,]})", LogpushLine::kNotJson},
      {R"({"a":"\x"})", LogpushLine::kNotJson},
      {R"({"a":"\u12G4"})", LogpushLine::kNotJson},
      {"{\"a\":\"\x01\"}", LogpushLine::kNotJson},
      {R"({"a":1,})", LogpushLine::kNotJson},
      {"{}", LogpushLine::kNoRecord},
      {R"({"a":[{"b":null}],"c":"\u0000\ud800"})", LogpushLine::kNoRecord},
      {R"({"ClientIP":"","ClientRequestMethod":"GET","ClientRequestURI":"/","EdgeStartTimestamp":1})", LogpushLine::kNoRecord},
      {R"({"ClientIP":"a","ClientRequestMethod":"get","ClientRequestURI":"/","EdgeStartTimestamp":1})", LogpushLine::kNoRecord},
      {R"({"ClientIP":"a","ClientRequestMethod":"GETGETGETGETGETGE","ClientRequestURI":"/","EdgeStartTimestamp":1})", LogpushLine::kNoRecord},
      {R"({"ClientIP":"a","ClientRequestMethod":"GET","ClientRequestURI":"x","EdgeStartTimestamp":1})", LogpushLine::kNoRecord},
      {R"({"ClientIP":"a","ClientRequestMethod":"GET","ClientRequestURI":"/","EdgeStartTimestamp":null})", LogpushLine::kNoRecord},
      {R"({"ClientIP":"a","ClientRequestMethod":"GET","ClientRequestURI":"/","EdgeStartTimestamp":1})", LogpushLine::kRecord},
  };
  for (const Row& row : rows) {
    INFO(row.line);
    CHECK(scan(row.line).kind == row.kind);
  }
}

TEST_CASE("logpush scan: what it does not answer for falls back") {
  const char* lines[] = {
      "\xc2\xa0",                                   // Unicode white space: blank to String.prototype.trim
      "{\"a\":\"\xc3\xa9\"}",                       // UTF-8 in a string
      R"({"Client\u0049P":"a"})",                   // an escaped key may spell a field
      R"({"ClientIP":"\u0061","ClientRequestMethod":"GET","ClientRequestURI":"/","EdgeStartTimestamp":1})",
      R"({"ClientCountry":"us"})",                  // request.cf fields
      R"({"JA4":"x"})",
      R"({"RequestHeaders":{"a":"x","A":"y"}})",   // names that collide ignoring case
      R"({"RequestHeaders":{"1":"x"}})",           // an array index, ordered first by Object.entries
      R"({"RequestHeaders":{"a":"\n"}})",          // an escaped value
  };
  for (const char* line : lines) {
    INFO(line);
    CHECK(scan(line).kind == LogpushLine::kFallback);
  }
  // Deeper than 64 containers.
  const std::string deep = R"({"a":)" + std::string(64, '[') + std::string(64, ']') + "}";
  CHECK(scan(deep).kind == LogpushLine::kFallback);
  const std::string shallow = R"({"a":)" + std::string(63, '[') + std::string(63, ']') + "}";
  CHECK(scan(shallow).kind == LogpushLine::kNoRecord);
  // A byte above 0x7F outside a string is a character JSON.parse refuses, once a line has begun.
  CHECK(scan("{\xff}").kind == LogpushLine::kNotJson);
  // An escape in a value nobody reads is only checked.
  CHECK(scan(R"({"ClientIP":"a","ClientRequestMethod":"GET","ClientRequestURI":"/","EdgeStartTimestamp":1,"UA":"\"\ud800"})").kind ==
        LogpushLine::kRecord);
}

TEST_CASE("logpush scan: the last of duplicate keys counts, as in JSON.parse") {
  const Scanned s = scan(R"({"ClientIP":"first","ClientRequestMethod":"GET","ClientRequestURI":"/a","ClientRequestURI":7,)"
                         R"("ClientRequestPath":"/p","EdgeStartTimestamp":1,"ClientIP":"last","EdgeResponseStatus":404,)"
                         R"("EdgeResponseStatus":"404","RequestHeaders":{"a":"x"},"RequestHeaders":null})");
  REQUIRE(s.kind == LogpushLine::kRecord);
  CHECK(s.text(s.spans.ip_start, s.spans.ip_end) == "last");
  CHECK(s.text(s.spans.uri_start, s.spans.uri_end) == "/p");  // the last URI is no string: the path
  CHECK(s.spans.status == 0.0);                                // the last status is a string
  CHECK(s.spans.header_count == 0);                            // the last headers are null
  const Scanned t = scan(R"({"ClientIP":"x","ClientRequestMethod":"POST","ClientRequestURI":7,"ClientRequestURI":"/u","EdgeStartTimestamp":1})");
  REQUIRE(t.kind == LogpushLine::kRecord);
  CHECK(t.text(t.spans.uri_start, t.spans.uri_end) == "/u");
}

TEST_CASE("logpush scan: numbers converted with one rounding, the rest left to JavaScript as text") {
  const auto with_time = [](const std::string& number) {
    return scan(R"({"ClientIP":"a","ClientRequestMethod":"GET","ClientRequestURI":"/","EdgeResponseStatus":)" + number +
                R"(,"EdgeStartTimestamp":)" + number + "}");
  };
  struct Row {
    const char* number;
    double value;  // when converted here
    bool converted;
    double status;
  };
  const Row rows[] = {
      {"0", 0.0, true, 0.0},
      {"1795996915.306", 1795996915.306, true, 0.0},
      {"200.0", 200.0, true, 200.0},
      {"2e2", 200.0, true, 200.0},
      {"2E+2", 200.0, true, 200.0},
      {"20000e-2", 200.0, true, 200.0},
      {"9007199254740993", 9007199254740992.0, true, 9007199254740992.0},  // 2^53 + 1 rounds to even
      {"18446744073709551615", 0, false, 0},                              // 20 digits: JavaScript's
      {"1764460800123456789", 1764460800123456789.0, true, 1764460800123456789.0},
      {"1e23", 0, false, 0},                                              // 10^23 is not exact
      {"2e400", 0, false, 0},
      {"1.00000000000000000001", 0, false, 0},
  };
  for (const Row& row : rows) {
    INFO(row.number);
    const Scanned s = with_time(row.number);
    REQUIRE(s.kind == LogpushLine::kRecord);
    if (row.converted) {
      CHECK(s.spans.time_form == sluice::kLogpushNumber);
      CHECK(s.spans.time == row.value);
      CHECK(s.spans.status == row.status);
      CHECK(s.spans.status_start == -1);
    } else {
      CHECK(s.spans.time_form == sluice::kLogpushNumberText);
      CHECK(s.text(s.spans.time_start, s.spans.time_end) == row.number);
      CHECK(s.text(s.spans.status_start, s.spans.status_end) == row.number);
    }
  }
  const Scanned negative_zero = with_time("-0");
  CHECK(negative_zero.spans.time == 0.0);
  CHECK(std::signbit(negative_zero.spans.time));
  CHECK(std::signbit(negative_zero.spans.status));
  CHECK(with_time("1.5").spans.status == 0.0);  // not an integer
  const Scanned string_time = scan(R"({"ClientIP":"a","ClientRequestMethod":"GET","ClientRequestURI":"/","EdgeStartTimestamp":"2026-11-30T00:00:00Z"})");
  CHECK(string_time.spans.time_form == sluice::kLogpushString);
  CHECK(string_time.text(string_time.spans.time_start, string_time.spans.time_end) == "2026-11-30T00:00:00Z");
}

TEST_CASE("logpush scan: the string table gives repeated strings one id, and never renames one within a batch") {
  auto strings = std::make_unique<sluice::LogpushStrings>();
  std::vector<std::string> mirror(sluice::LogpushStrings::kSlots);
  std::string batch;
  std::vector<int32_t> starts;
  std::vector<int32_t> ends;
  for (int i = 0; i < 300; i++) {
    const std::string line = R"({"ClientIP":"a","ClientRequestHost":"host)" + std::to_string(i % 150) +
                             R"(","ClientRequestMethod":"GET","ClientRequestURI":"/","EdgeStartTimestamp":1,"RequestHeaders":{"h)" +
                             std::to_string(i % 7) + R"(":"v"}})";
    starts.push_back(static_cast<int32_t>(batch.size()));
    batch += line;
    ends.push_back(static_cast<int32_t>(batch.size()));
    batch += '\n';
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(batch.data());
  uint32_t first_fresh = 0;
  size_t kept_hosts = 0;
  for (int round = 0; round < 3; round++) {
    std::vector<LogpushSpans> out(starts.size());
    std::vector<LogpushHeader> headers(starts.size() * 4);
    std::vector<sluice::LogpushFresh> fresh_items(starts.size() * 12);
    sluice::LogpushFreshList fresh{fresh_items.data(), static_cast<uint32_t>(fresh_items.size()), 0};
    sluice::scan_logpush_lines(bytes, starts.data(), ends.data(), static_cast<uint32_t>(starts.size()), out.data(), headers.data(),
                               static_cast<uint32_t>(headers.size()), strings.get(), &fresh);
    // The first batch makes each distinct string once (a string whose slot another one took in the
    // same batch is not kept); the same batch again makes none but those.
    if (round == 0) {
      CHECK(fresh.count <= 150 + 1 + 7);
      CHECK(fresh.count >= 150);
      first_fresh = fresh.count;
    } else {
      CHECK(fresh.count <= 150 + 1 + 7 - first_fresh);
    }
    for (uint32_t k = 0; k < fresh.count; k++) mirror[static_cast<size_t>(fresh_items[k].slot)] = batch.substr(static_cast<size_t>(fresh_items[k].start), static_cast<size_t>(fresh_items[k].end - fresh_items[k].start));
    for (size_t i = 0; i < starts.size(); i++) {
      const LogpushSpans& s = out[i];
      REQUIRE(s.kind == static_cast<int32_t>(LogpushLine::kRecord));
      CHECK(s.ip_id == 0);  // addresses are not kept
      // An id, when given, names the bytes it stands for.
      if (s.host_id > 0) {
        CHECK(mirror[static_cast<size_t>(s.host_id - 1)] == batch.substr(static_cast<size_t>(s.host_start), static_cast<size_t>(s.host_end - s.host_start)));
        kept_hosts++;
      }
      REQUIRE(s.method_id > 0);
      CHECK(mirror[static_cast<size_t>(s.method_id - 1)] == "GET");
      const LogpushHeader& h = headers[static_cast<size_t>(s.header_first)];
      if (h.name_id > 0) CHECK(mirror[static_cast<size_t>(h.name_id - 1)] == batch.substr(static_cast<size_t>(h.name_start), static_cast<size_t>(h.name_end - h.name_start)));
    }
  }
  CHECK(kept_hosts >= 3 * 290);
}
