#include "sluice/secret_scan.hpp"

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

}  // namespace

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
