// The Logpush line reader (sluice/logpush_scan.hpp): one pass over a line checks it against JSON's
// grammar and notes where the values of the fields a record needs lie, the last of each name.
#include "sluice/logpush_scan.hpp"

#include <cmath>
#include <cstring>
#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace sluice {
namespace {

constexpr int kMaxDepth = 64;

// What went wrong in a scan: the line is not JSON, or this reader does not answer for it.
enum Stop : int32_t { kGo = 0, kInvalid = 1, kUnsure = 2 };

// The top-level fields a record reads, and the ones that send the line to JSON.parse.
enum Field : int32_t { kTime, kIp, kHost, kMethod, kUri, kPath, kStatus, kHeaders, kFieldCount, kUnread, kEdge };

enum Kind : uint8_t { kAbsent, kString, kEscapedString, kNumber, kOther, kObject };

struct Value {
  Kind kind = kAbsent;
  int32_t start = 0;  // a string's bytes between its quotes; a number's bytes
  int32_t end = 0;
};

// Byte classes inside a string: 0 plain, 1 the closing quote, 2 an escape, 3 a control byte (JSON
// refuses it), 4 a byte above 0x7F (UTF-8, whose text JavaScript decodes: the line falls back).
struct StringClasses {
  uint8_t of[256] = {};
  constexpr StringClasses() {
    for (int c = 0; c < 32; c++) of[c] = 3;
    of[static_cast<uint8_t>('"')] = 1;
    of[static_cast<uint8_t>('\\')] = 2;
    for (int c = 128; c < 256; c++) of[c] = 4;
  }
};
constexpr StringClasses kInString;

// Whether any of the 8 bytes of `x` is not plain inside a string (a quote, a backslash, a control
// byte, a byte above 0x7F): the classic "has a zero byte" test, ((v - 0x01..) & ~v & 0x80..), on x
// xor'ed with the quote and the backslash, and on x less 0x20 for the control bytes.
constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHighs = 0x8080808080808080ull;
inline bool any_special(uint64_t x) {
  const uint64_t quote = x ^ (kOnes * '"');
  const uint64_t backslash = x ^ (kOnes * '\\');
  return (((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | ((x - kOnes * 0x20) & ~x) | x) & kHighs;
}

constexpr bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
constexpr bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
constexpr bool is_json_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
// String.prototype.trim's white space among ASCII bytes.
constexpr bool is_trim_space(uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Whether a[0, n) and b[0, n) are the same bytes: 8 at a time, the last 8 overlapping (the libc
// memcmp in the module goes a byte at a time, and keys are compared on every line).
inline bool same_bytes(const uint8_t* a, const uint8_t* b, uint32_t n) {
  if (n < 8) {
    for (uint32_t i = 0; i < n; i++) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  uint64_t x;
  uint64_t y;
  for (uint32_t i = 0; i + 8 < n; i += 8) {
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    if (x != y) return false;
  }
  std::memcpy(&x, a + n - 8, 8);
  std::memcpy(&y, b + n - 8, 8);
  return x == y;
}

struct Name {
  const char* text;
  int32_t length;
  Field field;
};
constexpr int32_t length_of(const char* text) {
  int32_t n = 0;
  while (text[n] != '\0') ++n;
  return n;
}
constexpr Name name(const char* text, Field field) { return {text, length_of(text), field}; }
constexpr Name kNames[] = {
    name("EdgeStartTimestamp", kTime),  name("ClientIP", kIp),           name("ClientRequestHost", kHost),
    name("ClientRequestMethod", kMethod), name("ClientRequestURI", kUri), name("ClientRequestPath", kPath),
    name("EdgeResponseStatus", kStatus), name("RequestHeaders", kHeaders), name("ClientCountry", kEdge),
    name("ClientASN", kEdge),           name("EdgeColoCode", kEdge),     name("ClientRegionCode", kEdge),
    name("BotScore", kEdge),            name("VerifiedBot", kEdge),      name("JA3Hash", kEdge),
    name("JA4", kEdge),
};

// The names of each length, at most two (kNames by length: index + 1, 0 for none).
struct NamesByLength {
  uint8_t first[20] = {};
  uint8_t second[20] = {};
  constexpr NamesByLength() {
    for (uint8_t k = 0; k < sizeof(kNames) / sizeof(kNames[0]); k++) {
      auto& slot = first[kNames[k].length] == 0 ? first[kNames[k].length] : second[kNames[k].length];
      slot = static_cast<uint8_t>(k + 1);
    }
  }
};
constexpr NamesByLength kByLength;

// Which field an unescaped top-level key names.
Field field_of(const uint8_t* b, int32_t start, int32_t end) {
  const int32_t length = end - start;
  if (length >= 20) return kUnread;
  const uint8_t candidates[2] = {kByLength.first[length], kByLength.second[length]};
  for (const uint8_t k : candidates) {
    if (k == 0) return kUnread;
    const Name& n = kNames[k - 1];
    if (same_bytes(b + start, reinterpret_cast<const uint8_t*>(n.text), static_cast<uint32_t>(length))) return n.field;
  }
  return kUnread;
}

uint8_t lower(uint8_t c) { return c >= 'A' && c <= 'Z' ? static_cast<uint8_t>(c + 32) : c; }

class LineScanner {
 public:
  LineScanner(const uint8_t* bytes, int32_t start, int32_t end) : b_(bytes), i_(start), end_(end) {}

  // Scans the object whose "{" is at the current position, then what follows it.
  Stop top() {
    ++i_;
    space();
    if (at('}')) {
      ++i_;
      return trailing();
    }
    for (;;) {
      if (!at('"')) return kInvalid;
      const int32_t name_start = ++i_;
      bool escaped = false;
      if (const Stop s = string(escaped); s != kGo) return s;
      // An escaped key could spell a field's name: JSON.parse reads that line.
      if (escaped) return kUnsure;
      const Field field = field_of(b_, name_start, i_ - 1);
      if (field == kEdge) return kUnsure;
      space();
      if (!at(':')) return kInvalid;
      ++i_;
      space();
      if (i_ >= end_) return kInvalid;
      if (field == kUnread) {
        if (const Stop s = value(1); s != kGo) return s;
      } else if (const Stop s = field_value(field); s != kGo) {
        return s;
      }
      space();
      if (at('}')) {
        ++i_;
        return trailing();
      }
      if (!at(',')) return kInvalid;
      ++i_;
      space();
    }
  }

  const Value& field(Field f) const { return fields_[f]; }
  uint32_t header_count() const { return header_count_; }
  const LogpushHeader& header(uint32_t k) const { return headers_[k]; }
  bool header_is_string(uint32_t k) const { return header_string_[k]; }

 private:
  bool at(uint8_t c) const { return i_ < end_ && b_[i_] == c; }

  void space() {
    while (i_ < end_ && is_json_space(b_[i_])) ++i_;
  }

  // After the top-level object: only white space.
  Stop trailing() {
    space();
    return i_ == end_ ? kGo : kInvalid;
  }

  // The string whose opening quote is just before the current position; leaves the position after
  // its closing quote. `escaped` says whether it held an escape.
  Stop string(bool& escaped) {
    for (;;) {
      // Sixteen (wasm SIMD) or eight bytes at a time while none of them ends the run of plain bytes
      // (nearly all of a line).
      int32_t i = i_;
#ifdef __wasm_simd128__
      while (end_ - i >= 16) {
        const v128_t x = wasm_v128_load(b_ + i);
        // Signed, below 0x20 is a control byte or a byte above 0x7F.
        const v128_t stop = wasm_v128_or(wasm_v128_or(wasm_i8x16_eq(x, wasm_i8x16_splat('"')), wasm_i8x16_eq(x, wasm_i8x16_splat('\\'))),
                                         wasm_i8x16_lt(x, wasm_i8x16_splat(0x20)));
        if (wasm_v128_any_true(stop)) {
          i += __builtin_ctz(static_cast<uint32_t>(wasm_i8x16_bitmask(stop)));
          break;
        }
        i += 16;
      }
#endif
      while (end_ - i >= 8) {
        uint64_t x;
        std::memcpy(&x, b_ + i, 8);
        if (any_special(x)) break;
        i += 8;
      }
      uint8_t cls = 0;
      while (i < end_ && (cls = kInString.of[b_[i]]) == 0) ++i;
      i_ = i;
      if (i_ >= end_) return kInvalid;
      if (cls == 1) {
        ++i_;
        return kGo;
      }
      if (cls == 3) return kInvalid;
      if (cls == 4) return kUnsure;
      escaped = true;
      if (i_ + 1 >= end_) return kInvalid;
      const uint8_t e = b_[i_ + 1];
      if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
        i_ += 2;
      } else if (e == 'u') {
        if (i_ + 5 >= end_ || !is_hex(b_[i_ + 2]) || !is_hex(b_[i_ + 3]) || !is_hex(b_[i_ + 4]) || !is_hex(b_[i_ + 5])) return kInvalid;
        i_ += 6;
      } else {
        return kInvalid;
      }
    }
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  Stop number() {
    if (at('-')) ++i_;
    if (at('0')) {
      ++i_;
    } else if (i_ < end_ && is_digit(b_[i_])) {
      while (i_ < end_ && is_digit(b_[i_])) ++i_;
    } else {
      return kInvalid;
    }
    if (at('.')) {
      ++i_;
      if (!(i_ < end_ && is_digit(b_[i_]))) return kInvalid;
      while (i_ < end_ && is_digit(b_[i_])) ++i_;
    }
    if (at('e') || at('E')) {
      ++i_;
      if (at('+') || at('-')) ++i_;
      if (!(i_ < end_ && is_digit(b_[i_]))) return kInvalid;
      while (i_ < end_ && is_digit(b_[i_])) ++i_;
    }
    return kGo;
  }

  Stop literal(const char* word) {
    const auto length = static_cast<int32_t>(std::strlen(word));
    if (end_ - i_ < length || std::memcmp(b_ + i_, word, static_cast<size_t>(length)) != 0) return kInvalid;
    i_ += length;
    return kGo;
  }

  // Any JSON value at the current position (no white space before it), inside `depth` containers.
  Stop value(int depth) {
    if (i_ >= end_) return kInvalid;
    switch (b_[i_]) {
      case '"': {
        ++i_;
        bool escaped = false;
        return string(escaped);
      }
      case '{':
      case '[':
        return container(depth);
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return number();
    }
  }

  // An object or an array nobody reads: only its grammar matters.
  Stop container(int depth) {
    if (depth >= kMaxDepth) return kUnsure;
    const bool object = b_[i_] == '{';
    const uint8_t close = object ? '}' : ']';
    ++i_;
    space();
    if (at(close)) {
      ++i_;
      return kGo;
    }
    for (;;) {
      if (object) {
        if (!at('"')) return kInvalid;
        ++i_;
        bool escaped = false;
        if (const Stop s = string(escaped); s != kGo) return s;
        space();
        if (!at(':')) return kInvalid;
        ++i_;
        space();
      }
      if (const Stop s = value(depth + 1); s != kGo) return s;
      space();
      if (at(close)) {
        ++i_;
        return kGo;
      }
      if (!at(',')) return kInvalid;
      ++i_;
      space();
    }
  }

  // The value of a field the record reads: its kind and bytes noted (the last one of a name counts).
  Stop field_value(Field field) {
    Value& v = fields_[field];
    const int32_t start = i_;
    const uint8_t c = b_[i_];
    if (c == '"') {
      ++i_;
      bool escaped = false;
      if (const Stop s = string(escaped); s != kGo) return s;
      v = {escaped ? kEscapedString : kString, start + 1, i_ - 1};
      // Its text would have to be unescaped: JSON.parse reads the line (RequestHeaders and the status
      // only ask whether it is a string).
      if (escaped && field != kHeaders && field != kStatus) return kUnsure;
      if (field == kHeaders) header_count_ = 0;
      return kGo;
    }
    if (c == '-' || is_digit(c)) {
      if (const Stop s = number(); s != kGo) return s;
      v = {kNumber, start, i_};
      if (field == kHeaders) header_count_ = 0;
      return kGo;
    }
    if (c == '{' && field == kHeaders) {
      v = {kObject, start, start};
      return headers();
    }
    if (const Stop s = value(1); s != kGo) return s;
    v = {kOther, start, i_};
    if (field == kHeaders) header_count_ = 0;
    return kGo;
  }

  // RequestHeaders' object: each member noted (name, and value when a string). A name with an escape
  // or beginning with a digit (an array index, which Object.entries would order first), a string value
  // with an escape, two names equal ignoring case (which one wins depends on order and kind), or more
  // than kLogpushMaxHeaders members: JSON.parse reads the line.
  Stop headers() {
    header_count_ = 0;
    ++i_;
    space();
    if (at('}')) {
      ++i_;
      return kGo;
    }
    for (;;) {
      if (!at('"')) return kInvalid;
      const int32_t name_start = ++i_;
      bool escaped = false;
      if (const Stop s = string(escaped); s != kGo) return s;
      const int32_t name_end = i_ - 1;
      space();
      if (!at(':')) return kInvalid;
      ++i_;
      space();
      if (i_ >= end_) return kInvalid;
      const int32_t value_start = i_;
      bool is_string = false;
      bool value_escaped = false;
      if (b_[i_] == '"') {
        ++i_;
        if (const Stop s = string(value_escaped); s != kGo) return s;
        is_string = true;
      } else if (const Stop s = value(2); s != kGo) {
        return s;
      }
      if (escaped || value_escaped || header_count_ == kLogpushMaxHeaders || (name_end > name_start && is_digit(b_[name_start]))) return kUnsure;
      for (uint32_t k = 0; k < header_count_; k++) {
        const LogpushHeader& h = headers_[k];
        if (h.name_end - h.name_start != name_end - name_start) continue;
        int32_t j = 0;
        while (j < name_end - name_start && lower(b_[h.name_start + j]) == lower(b_[name_start + j])) ++j;
        if (j == name_end - name_start) return kUnsure;
      }
      headers_[header_count_] = {name_start, name_end, value_start + 1, i_ - 1, 0, 0};
      header_string_[header_count_] = is_string;
      ++header_count_;
      space();
      if (at('}')) {
        ++i_;
        return kGo;
      }
      if (!at(',')) return kInvalid;
      ++i_;
      space();
    }
  }

  const uint8_t* b_;
  int32_t i_;
  int32_t end_;
  Value fields_[kFieldCount];
  // Written before read (header_count_ says how many): no need to clear them for every line.
  LogpushHeader headers_[kLogpushMaxHeaders];
  bool header_string_[kLogpushMaxHeaders];
  uint32_t header_count_ = 0;
};

// The double JSON.parse makes of a number's bytes (grammar already checked), when it can be had with
// one correctly rounded operation: an integer of up to 19 digits is exact in 64 bits and rounded once by
// the conversion; otherwise digits m (up to 2^53, exact as a double) and a power of ten p (up to 22,
// exact too) give m * 10^p or m / 10^p, rounded once (Clinger's fast path). False for anything else:
// JavaScript's Number() reads those bytes (a library's strtod would add a fifth to the module).
bool number_value(const uint8_t* b, int32_t start, int32_t end, double& out) {
  static constexpr double kPowers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const bool negative = b[start] == '-';
  int32_t i = negative ? start + 1 : start;
  uint64_t m = 0;
  int digits = 0;
  int exponent = 0;
  for (; i < end && is_digit(b[i]); i++, digits++) {
    if (digits == 19) return false;
    m = m * 10 + static_cast<uint64_t>(b[i] - '0');
  }
  const bool integer = i == end;
  if (i < end && b[i] == '.') {
    for (++i; i < end && is_digit(b[i]); i++, digits++) {
      if (digits == 19) return false;
      m = m * 10 + static_cast<uint64_t>(b[i] - '0');
      --exponent;
    }
  }
  if (i < end && (b[i] == 'e' || b[i] == 'E')) {
    ++i;
    const bool down = i < end && b[i] == '-';
    if (i < end && (b[i] == '-' || b[i] == '+')) ++i;
    int written = 0;
    for (; i < end; i++) {
      written = written * 10 + (b[i] - '0');
      if (written > 1000) return false;
    }
    exponent += down ? -written : written;
  }
  double d = 0;
  if (integer) {
    d = static_cast<double>(m);
  } else {
    if (m > (uint64_t{1} << 53) || exponent < -22 || exponent > 22) return false;
    d = exponent >= 0 ? static_cast<double>(m) * kPowers[exponent] : static_cast<double>(m) / kPowers[-exponent];
  }
  out = negative ? -d : d;
  return true;
}

bool is_method(const uint8_t* b, int32_t start, int32_t end) {
  if (end - start < 1 || end - start > 16) return false;
  for (int32_t i = start; i < end; i++) {
    if (b[i] < 'A' || b[i] > 'Z') return false;
  }
  return true;
}

}  // namespace

LogpushLine scan_logpush_line(const uint8_t* bytes, int32_t start, int32_t end, LogpushSpans& out, LogpushHeader* headers,
                              uint32_t header_capacity) {
  out = LogpushSpans{};
  out.host_start = out.host_end = out.time_start = out.time_end = out.status_start = out.status_end = -1;
  auto verdict = [&out](LogpushLine kind) {
    out.kind = static_cast<int32_t>(kind);
    return kind;
  };
  // Blank: only ASCII white space as String.prototype.trim knows it. A byte above 0x7F first may be
  // Unicode white space (the line's text is UTF-8): JavaScript decides. Further on, a byte above 0x7F
  // in a string falls back, and one outside a string is a character JSON.parse refuses.
  int32_t first = start;
  while (first < end && is_trim_space(bytes[first])) ++first;
  if (first == end) return verdict(LogpushLine::kBlank);
  if (bytes[first] >= 0x80) return verdict(LogpushLine::kFallback);
  first = start;
  while (first < end && is_json_space(bytes[first])) ++first;
  if (first == end || bytes[first] != '{') return verdict(LogpushLine::kNotObject);

  LineScanner scan(bytes, first, end);
  const Stop stop = scan.top();
  if (stop == kInvalid) return verdict(LogpushLine::kNotJson);
  if (stop == kUnsure) return verdict(LogpushLine::kFallback);

  const Value& ip = scan.field(kIp);
  const Value& method = scan.field(kMethod);
  const Value& uri = scan.field(kUri).kind == kString ? scan.field(kUri) : scan.field(kPath);
  const Value& time = scan.field(kTime);
  if (ip.kind != kString || ip.end == ip.start) return verdict(LogpushLine::kNoRecord);
  if (method.kind != kString || !is_method(bytes, method.start, method.end)) return verdict(LogpushLine::kNoRecord);
  if (uri.kind != kString || uri.end == uri.start || bytes[uri.start] != '/') return verdict(LogpushLine::kNoRecord);
  if (time.kind == kNumber) {
    if (!number_value(bytes, time.start, time.end, out.time)) {
      out.time_form = kLogpushNumberText;
      out.time_start = time.start;
      out.time_end = time.end;
    }
  } else if (time.kind == kString) {
    out.time_form = kLogpushString;
    out.time_start = time.start;
    out.time_end = time.end;
  } else {
    return verdict(LogpushLine::kNoRecord);
  }
  const Value& status = scan.field(kStatus);
  if (status.kind == kNumber) {
    double value = 0;
    if (!number_value(bytes, status.start, status.end, value)) {
      out.status_start = status.start;
      out.status_end = status.end;
    } else if (std::isfinite(value) && std::trunc(value) == value) {
      out.status = value;  // Number.isInteger: finite and whole
    }
  }
  const Value& host = scan.field(kHost);
  if (host.kind == kString) {
    out.host_start = host.start;
    out.host_end = host.end;
  }
  out.ip_start = ip.start;
  out.ip_end = ip.end;
  out.method_start = method.start;
  out.method_end = method.end;
  out.uri_start = uri.start;
  out.uri_end = uri.end;
  // Only the last RequestHeaders counts, and only when it is an object; its string values only.
  if (scan.field(kHeaders).kind == kObject) {
    uint32_t written = 0;
    for (uint32_t k = 0; k < scan.header_count(); k++) {
      if (!scan.header_is_string(k)) continue;
      if (written == header_capacity) return verdict(LogpushLine::kFallback);
      headers[written++] = scan.header(k);
    }
    out.header_count = static_cast<int32_t>(written);
  }
  return verdict(LogpushLine::kRecord);
}

int32_t intern_logpush_string(LogpushStrings& strings, LogpushFreshList& fresh, const uint8_t* bytes, int32_t start,
                              int32_t end) {
  const auto length = static_cast<uint32_t>(end - start);
  if (length > LogpushStrings::kMaxBytes) return 0;
  // A multiply-xorshift hash of the bytes, 8 at a time.
  uint64_t h = (length + 1) * 0x9E3779B97F4A7C15ull;
  int32_t i = start;
  for (; end - i >= 8; i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    h = (h ^ word) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 29;
  }
  if (i < end) {
    uint64_t word = 0;
    std::memcpy(&word, bytes + i, static_cast<size_t>(end - i));
    h = (h ^ word) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 29;
  }
  h *= 0xC4CEB9FE1A85EC53ull;
  const auto slot = static_cast<uint32_t>(h >> 48) & (LogpushStrings::kSlots - 1);
  LogpushStrings::Slot& s = strings.slots[slot];
  if (s.batch != 0 && s.length == length && same_bytes(s.bytes, bytes + start, length)) {
    // Pinned for the rest of the batch: this batch's records name it, and the strings are brought up
    // to date only when the batch is done.
    s.batch = strings.batch;
    return static_cast<int32_t>(slot) + 1;
  }
  if (s.batch == strings.batch || fresh.count == fresh.capacity) return 0;
  s.batch = strings.batch;
  s.length = length;
  std::memcpy(s.bytes, bytes + start, length);
  fresh.items[fresh.count++] = {static_cast<int32_t>(slot), start, end};
  return static_cast<int32_t>(slot) + 1;
}

namespace {
// The last string of a field interned in this batch: the same bytes again have the same id (already
// pinned for the batch), with no hash and no table lookup.
struct LastString {
  int32_t start = 0;
  int32_t end = -1;
  int32_t id = 0;
  int32_t id_of(LogpushStrings& strings, LogpushFreshList& fresh, const uint8_t* bytes, int32_t s, int32_t e) {
    if (e - s == end - start && same_bytes(bytes + s, bytes + start, static_cast<uint32_t>(e - s))) return id;
    id = intern_logpush_string(strings, fresh, bytes, s, e);
    start = s;
    end = e;
    return id;
  }
};
}  // namespace

uint32_t scan_logpush_lines(const uint8_t* bytes, const int32_t* starts, const int32_t* ends, uint32_t count,
                            LogpushSpans* out, LogpushHeader* headers, uint32_t header_capacity, LogpushStrings* strings,
                            LogpushFreshList* fresh) {
  const bool interning = strings != nullptr && fresh != nullptr;
  if (interning) {
    fresh->count = 0;
    // Batch numbers only tell batches apart; 0 means an empty slot.
    if (++strings->batch == 0) strings->batch = 1;
  }
  LastString last_method;
  LastString last_host;
  LastString last_header[4];
  uint32_t used = 0;
  for (uint32_t i = 0; i < count; i++) {
    LogpushSpans& line = out[i];
    scan_logpush_line(bytes, starts[i], ends[i], line, headers + used, header_capacity - used);
    line.header_first = static_cast<int32_t>(used);
    if (line.kind != static_cast<int32_t>(LogpushLine::kRecord)) continue;
    if (interning) {
      // Only the strings with few values: a table lookup of an address, a path or a token (thousands
      // of values) misses the cache and costs more than JavaScript's copy of its bytes. Most lines
      // repeat the line before's, found without a lookup.
      line.method_id = last_method.id_of(*strings, *fresh, bytes, line.method_start, line.method_end);
      if (line.host_start >= 0) line.host_id = last_host.id_of(*strings, *fresh, bytes, line.host_start, line.host_end);
      for (int32_t k = 0; k < line.header_count; k++) {
        LogpushHeader& h = headers[used + static_cast<uint32_t>(k)];
        h.name_id = last_header[k < 4 ? k : 3].id_of(*strings, *fresh, bytes, h.name_start, h.name_end);
      }
    }
    used += static_cast<uint32_t>(line.header_count);
  }
  return used;
}

}  // namespace sluice
