#include "sluice/secret_scan.hpp"

#include <cstring>
#include <initializer_list>

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace sluice {
namespace {

constexpr int32_t kNone = -1;  // no escape here
constexpr int32_t kAnyCharacter = 256;  // a named reference: its character is not looked up here

bool is_escape_start(uint8_t c) { return c == '%' || c == '+' || c == '\\' || c == '&'; }

int32_t hex_digit(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  const uint8_t lower = c | 0x20;
  if (lower >= 'a' && lower <= 'f') return lower - 'a' + 10;
  return kNone;
}

bool is_letter(uint8_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

// The number of `count` hex digits at text[at], or kNone.
int32_t hex_at(const uint8_t* text, uint32_t length, uint32_t at, uint32_t count) {
  if (at + count > length) return kNone;
  int32_t value = 0;
  for (uint32_t i = 0; i < count; i++) {
    const int32_t digit = hex_digit(text[at + i]);
    if (digit < 0) return kNone;
    value = value * 16 + digit;
  }
  return value;
}

// An HTML character reference at text[at] ('&'): its character for &#N; and &#xH; (1 to 6 digits),
// kAnyCharacter for &name; (1 to 8 letters), else kNone. As redact.js's characterReference reads them.
int32_t character_reference(const uint8_t* text, uint32_t length, uint32_t at) {
  if (at + 1 >= length) return kNone;
  if (text[at + 1] == '#') {
    const bool hex = at + 2 < length && (text[at + 2] | 0x20) == 'x';
    uint32_t i = at + (hex ? 3 : 2);
    int64_t value = 0;
    uint32_t digits = 0;
    for (; i < length && digits <= 6; i++, digits++) {
      const int32_t digit = hex ? hex_digit(text[i]) : (text[i] >= '0' && text[i] <= '9' ? text[i] - '0' : kNone);
      if (digit < 0) break;
      value = value * (hex ? 16 : 10) + digit;
    }
    if (digits == 0 || digits > 6 || i >= length || text[i] != ';') return kNone;
    return value < 256 ? static_cast<int32_t>(value) : kNone;
  }
  uint32_t i = at + 1;
  while (i < length && i - at <= 8 && is_letter(text[i])) i++;
  return i > at + 1 && i < length && text[i] == ';' ? kAnyCharacter : kNone;
}

// The character the escape at text[at] spells (kAnyCharacter: a named reference), or kNone: every
// escape redact.js's escapedCharacter decodes to a character below 256 is found (\u of a higher one
// spells no byte of a secret and is left out).
int32_t escaped_character(const uint8_t* text, uint32_t length, uint32_t at) {
  const uint8_t c = text[at];
  if (c == '+') return ' ';
  if (c == '%') return hex_at(text, length, at + 1, 2);
  if (c == '&') return character_reference(text, length, at);
  if (c != '\\' || at + 1 >= length) return kNone;
  const uint8_t next = text[at + 1];
  if (next == 'u') {
    const int32_t value = hex_at(text, length, at + 2, 4);
    return value < 256 ? value : kNone;
  }
  if (next == 'x') return hex_at(text, length, at + 2, 2);
  if (next == '/' || next == '"' || next == '\\') return next;
  return kNone;
}

bool in_third_set(const ThirdSet& set, uint32_t third) { return ((set.words[third >> 5] >> (third & 31)) & 1) != 0; }

// Whether some fragment begins with the characters `pair` (first << 8 | second).
bool has_pair(const SecretScanTables& t, uint32_t pair) { return ((t.pair_bits[pair >> 5] >> (pair & 31)) & 1) != 0; }

bool is_candidate(const SecretScanTables& t, const uint8_t* text, uint32_t length, uint32_t at) {
  const uint8_t c = text[at];
  if (t.raw_start[c] != 0) return true;
  if (is_escape_start(c)) {
    const int32_t value = escaped_character(text, length, at);
    if (value == kAnyCharacter || (value >= 0 && t.escape_value_start[value] != 0)) return true;
  }
  if (t.has_fragments == 0 || at + 1 >= length) return false;
  const uint8_t next = text[at + 1];
  const uint32_t pair = (static_cast<uint32_t>(c) << 8) | next;
  const uint16_t index = ((t.pair_bits[pair >> 5] >> (pair & 31)) & 1) != 0 ? t.pair_index[pair] : 0;
  if (index != 0 && index <= t.pair_count) {
    if (at + 2 >= length) return true;
    const uint8_t third = text[at + 2];
    const ThirdSet& set = reinterpret_cast<const ThirdSet*>(&t + 1)[index - 1];
    if (in_third_set(set, third)) return true;
    // The third byte an escape: of a character that continues one of those fragments.
    if (is_escape_start(third)) {
      const int32_t value = escaped_character(text, length, at + 2);
      if (value == kAnyCharacter || (value >= 0 && in_third_set(set, static_cast<uint32_t>(value)))) return true;
    }
  }
  // The first byte of a fragment, then an escape of a character that is that fragment's second (the
  // matcher reads the escape as that character only: a `+` after a fragment's first byte is a
  // candidate only where some fragment goes on with a space).
  if (t.fragment_first[c] == 0 || !is_escape_start(next)) return false;
  const int32_t value = escaped_character(text, length, at + 1);
  return value == kAnyCharacter || (value >= 0 && has_pair(t, (static_cast<uint32_t>(c) << 8) | static_cast<uint32_t>(value)));
}

uint32_t load_gram(const uint8_t* at) {
  uint32_t gram;
  std::memcpy(&gram, at, sizeof gram);
  return gram;
}

// Two hashes of a gram into gram_bits (a Bloom filter): a gram that no run holds finds both bits set
// about once in 10^5 with a few thousand grams, where one hash gave a text made of few distinct grams
// (`%&\+` soup) a colliding gram at every other stride now and then.
uint32_t gram_hash(uint32_t gram) { return (gram * 0x9e3779b1u) >> (32 - kGramHashBits); }
uint32_t gram_hash2(uint32_t gram) { return ((gram ^ (gram >> 15)) * 0x85ebca6bu) >> (32 - kGramHashBits); }

bool has_bit(const SecretScanTables& t, uint32_t hash) { return ((t.gram_bits[hash >> 5] >> (hash & 31)) & 1) != 0; }

bool has_gram(const SecretScanTables& t, uint32_t gram) { return has_bit(t, gram_hash(gram)) && has_bit(t, gram_hash2(gram)); }

// Whether the escape at text[at] spells a character of a secret (or may: a named reference).
bool escape_of_secret_character(const SecretScanTables& t, const uint8_t* text, uint32_t length, uint32_t at) {
  const int32_t value = escaped_character(text, length, at);
  return value == kAnyCharacter || (value >= 0 && t.escape_chars[value] != 0);
}

// The scratch bitmap of positions to put to is_candidate (bit p of word p >> 5).
void mark(uint32_t* marks, uint32_t from, uint32_t to_inclusive) {
  for (uint32_t p = from; p <= to_inclusive;) {
    const uint32_t bit = p & 31;
    const uint32_t count = to_inclusive - p + 1 < 32 - bit ? to_inclusive - p + 1 : 32 - bit;
    const uint32_t bits = count == 32 ? 0xffffffffu : ((1u << count) - 1) << bit;
    marks[p >> 5] |= bits;
    p += count;
  }
}

// The escape test of the sparse scan, 16 positions at once: a byte that may begin an escape and the
// byte after it are each given a class (8 bits, one per kind of escape) by two 16-entry tables, one
// read with the byte's low 4 bits and one with its high 4 bits (a class is the AND of both: the
// "shufti" of Hyperscan), and a position may begin an escape of a secret's character when the two
// classes share a bit:
//   bit 0: `%` then a digit           bit 1: `%` then a hex letter (A-F, a-f)
//   bit 2: `&` then `#`               bit 3: `&` then A-O or a-o        bit 4: `&` then P-Z or p-z
//                                     (bits 3 and 4: the letters of named_first only)
//   bit 5: `\` then u or x            bit 6: `\` then `/` or `"`, of a secret
//   bit 7: `\` then `\`, of a secret
// and `+` when a secret holds a space. The test is loose (the digits of \u and the rest of a reference
// are not read here): escape_of_secret_character decides each position it keeps.
struct EscapeClasses {
  uint8_t first_low[16], first_high[16], next_low[16], next_high[16];
  bool plus;
};

EscapeClasses escape_classes(const SecretScanTables& t) {
  EscapeClasses k{};
  const auto add = [](uint8_t* low, uint8_t* high, uint8_t c, uint8_t bits) {
    low[c & 15] |= bits;
    high[c >> 4] |= bits;
  };
  add(k.first_low, k.first_high, '%', 0x03);
  add(k.first_low, k.first_high, '&', 0x1c);
  add(k.first_low, k.first_high, '\\', 0xe0);
  for (uint8_t d = '0'; d <= '9'; d++) add(k.next_low, k.next_high, d, 0x01);
  for (uint8_t i = 0; i < 6; i++) {
    add(k.next_low, k.next_high, static_cast<uint8_t>('A' + i), 0x02);
    add(k.next_low, k.next_high, static_cast<uint8_t>('a' + i), 0x02);
  }
  add(k.next_low, k.next_high, '#', 0x04);
  for (uint8_t i = 0; i < 26; i++) {
    const uint8_t bit = i < 15 ? 0x08 : 0x10;
    for (const uint8_t letter : {static_cast<uint8_t>('A' + i), static_cast<uint8_t>('a' + i)}) {
      if (((t.named_first[letter >> 5] >> (letter & 31)) & 1) != 0) add(k.next_low, k.next_high, letter, bit);
    }
  }
  add(k.next_low, k.next_high, 'u', 0x20);
  add(k.next_low, k.next_high, 'x', 0x20);
  if (t.escape_chars[0x2f] != 0) add(k.next_low, k.next_high, '/', 0x40);
  if (t.escape_chars[0x22] != 0) add(k.next_low, k.next_high, '"', 0x40);
  if (t.escape_chars[0x5c] != 0) add(k.next_low, k.next_high, '\\', 0x80);
  k.plus = t.escape_chars[0x20] != 0;
  return k;
}

#ifdef __wasm_simd128__
// Bit i set when position at + i may begin an escape of a secret's character (the byte after the
// block must be readable).
struct EscapeLanes {
  v128_t first_low, first_high, next_low, next_high, plus;
  explicit EscapeLanes(const EscapeClasses& k)
      : first_low(wasm_v128_load(k.first_low)),
        first_high(wasm_v128_load(k.first_high)),
        next_low(wasm_v128_load(k.next_low)),
        next_high(wasm_v128_load(k.next_high)),
        plus(k.plus ? wasm_i8x16_splat('+') : wasm_i8x16_splat(0)) {}
  static v128_t classify(v128_t bytes, v128_t low, v128_t high) {
    return wasm_v128_and(wasm_i8x16_swizzle(low, wasm_v128_and(bytes, wasm_i8x16_splat(0x0f))), wasm_i8x16_swizzle(high, wasm_u8x16_shr(bytes, 4)));
  }
  uint32_t operator()(const uint8_t* at) const {
    const v128_t c = wasm_v128_load(at);
    const v128_t n = wasm_v128_load(at + 1);
    const v128_t both = wasm_v128_and(classify(c, first_low, first_high), classify(n, next_low, next_high));
    const v128_t lanes = wasm_v128_or(wasm_i8x16_ne(both, wasm_i8x16_splat(0)), wasm_i8x16_eq(c, plus));
    return wasm_i8x16_bitmask(lanes);
  }
};
#else
// The same, a byte at a time (the native build: tests and fuzzing).
struct EscapeLanes {
  EscapeClasses k;
  explicit EscapeLanes(const EscapeClasses& classes) : k(classes) {}
  uint32_t operator()(const uint8_t* at) const {
    uint32_t bits = 0;
    for (uint32_t i = 0; i < 16; i++) {
      const uint8_t c = at[i];
      const uint8_t n = at[i + 1];
      const bool escape = (k.first_low[c & 15] & k.first_high[c >> 4] & k.next_low[n & 15] & k.next_high[n >> 4]) != 0;
      bits |= (escape || (k.plus && c == '+') ? 1u : 0u) << i;
    }
    return bits;
  }
};
#endif

// The sparse scan (secret_scan.hpp says why it misses nothing): marks the positions to test, then
// tests them in order.
uint32_t scan_sparse(const SecretScanTables& t, const uint8_t* text, uint32_t length, uint32_t* positions) {
  uint32_t* marks = positions + length;
  std::memset(marks, 0, (length / 32 + 2) * sizeof(uint32_t));
  const uint32_t before_escape = t.sparse_min - 1;
  // Grams at multiples of the stride.
  const uint32_t stride = t.sparse_min - kGramBytes + 1;
  const uint32_t back = t.sparse_back - kGramBytes;
  for (uint32_t g = 0; g + kGramBytes <= length; g += stride) {
    if (has_gram(t, load_gram(text + g))) mark(marks, g > back ? g - back : 0, g);
  }
  // Escapes of a secret's characters, 16 bytes at a time while the byte after a block is readable.
  const EscapeLanes escape_lanes(escape_classes(t));
  uint32_t at = 0;
  for (; at + 17 <= length; at += 16) {
    for (uint32_t lanes = escape_lanes(text + at); lanes != 0; lanes &= lanes - 1) {
      const uint32_t e = at + static_cast<uint32_t>(__builtin_ctz(lanes));
      if (escape_of_secret_character(t, text, length, e)) mark(marks, e > before_escape ? e - before_escape : 0, e);
    }
  }
  for (; at < length; at++) {
    if (is_escape_start(text[at]) && escape_of_secret_character(t, text, length, at)) mark(marks, at > before_escape ? at - before_escape : 0, at);
  }
  uint32_t count = 0;
  for (uint32_t word = 0; word <= (length - 1) >> 5; word++) {
    for (uint32_t bits = marks[word]; bits != 0; bits &= bits - 1) {
      const uint32_t p = (word << 5) | static_cast<uint32_t>(__builtin_ctz(bits));
      if (p < length && is_candidate(t, text, length, p)) positions[count++] = p;
    }
  }
  return count;
}

}  // namespace

void add_secret_scan_run(SecretScanTables& t, const uint8_t* bytes, uint32_t length, uint32_t min_bytes, bool escapable) {
  if (length == 0) return;
  if (escapable) {
    for (uint32_t i = 0; i < length; i++) t.escape_chars[bytes[i]] = 1;
  }
  t.sparse_min = t.sparse_min == 0 || min_bytes < t.sparse_min ? min_bytes : t.sparse_min;
  t.sparse_back = length > t.sparse_back ? length : t.sparse_back;
  for (uint32_t i = 0; i + kGramBytes <= length; i++) {
    const uint32_t gram = load_gram(bytes + i);
    const uint32_t first = gram_hash(gram);
    const uint32_t second = gram_hash2(gram);
    t.gram_bits[first >> 5] |= 1u << (first & 31);
    t.gram_bits[second >> 5] |= 1u << (second & 31);
  }
}

void prepare_secret_scan(SecretScanTables& t) {
  for (uint32_t& word : t.coarse_pairs) word = 0;
  const bool pairs = t.has_fragments != 0;
  bool any_value = false;
  for (uint32_t v = 0; v < 256; v++) any_value = any_value || t.escape_value_start[v] != 0;
  for (uint32_t c = 0; c < 256; c++) {
    for (uint32_t next = 0; next < 256; next++) {
      const uint32_t pair = (c << 8) | next;
      bool keep = t.raw_start[c] != 0;
      // A fragment's first two bytes as they are, or its first byte then an escape.
      keep = keep || (pairs && ((t.pair_bits[pair >> 5] >> (pair & 31)) & 1) != 0);
      // (A `+` spells a space only: the pair of the first byte and a space must begin a fragment.)
      const bool escape_next = next == '+' ? has_pair(t, (c << 8) | 0x20) : is_escape_start(static_cast<uint8_t>(next));
      keep = keep || (pairs && t.fragment_first[c] != 0 && escape_next);
      // An escape whose two first bytes allow a character that begins a secret or fragment.
      if (c == '+') keep = keep || t.escape_value_start[0x20] != 0;
      if (c == '%' && hex_digit(static_cast<uint8_t>(next)) >= 0) {
        const uint32_t high = static_cast<uint32_t>(hex_digit(static_cast<uint8_t>(next))) << 4;
        for (uint32_t low = 0; low < 16; low++) keep = keep || t.escape_value_start[high | low] != 0;
      }
      if (c == '\\') {
        keep = keep || ((next == 'u' || next == 'x') && any_value);
        keep = keep || ((next == '/' || next == '"' || next == '\\') && t.escape_value_start[next] != 0);
      }
      if (c == '&') keep = keep || next == '#' || is_letter(static_cast<uint8_t>(next));
      if (keep) t.coarse_pairs[pair >> 5] |= 1u << (pair & 31);
    }
  }
}

uint32_t scan_secret_candidates(const SecretScanTables& tables, const uint8_t* text, uint32_t length, uint32_t* positions) {
  if (length == 0) return 0;
  if (tables.sparse_min >= kGramBytes - 1 + kMinSparseStride) return scan_sparse(tables, text, length, positions);
  // Two passes. The first has no branch that depends on the text (a mispredicted branch per byte cost
  // more than everything else): a position is kept when its two bytes are in coarse_pairs (see
  // prepare_secret_scan: every rule of is_candidate needs its pair there); every position is written
  // and the count moves on by 0 or 1. The second runs is_candidate on those few, in place.
  uint32_t kept = 0;
  for (uint32_t at = 0; at + 1 < length; at++) {
    const uint32_t pair = (static_cast<uint32_t>(text[at]) << 8) | text[at + 1];
    positions[kept] = at;
    kept += (tables.coarse_pairs[pair >> 5] >> (pair & 31)) & 1;
  }
  // The last byte has no pair: is_candidate alone decides.
  positions[kept] = length - 1;
  kept += is_candidate(tables, text, length, length - 1) ? 1 : 0;
  uint32_t count = 0;
  for (uint32_t k = 0; k < kept; k++) {
    if (is_candidate(tables, text, length, positions[k])) positions[count++] = positions[k];
  }
  return count;
}

}  // namespace sluice
