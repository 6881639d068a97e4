// The first pass of the gateway's secret masking (worker/gateway/redact.js): over a body's bytes, the
// positions where an occurrence of a secret may begin, so that the exact matcher (in JavaScript, with
// every spelling it knows) runs at those positions only instead of at every byte.
//
// A position is a candidate when one of these holds (redact.js builds the tables from its secrets):
//   - its byte may begin a whole secret or base64 needle too short to have fragments (`raw_start`);
//   - its bytes are an escape (%XX, +, \uXXXX, \xXX, \/ \" \\, &#N; &#xH; or &name;) of a character
//     that begins a secret or a fragment (`escape_value_start`; a named reference counts whatever
//     it names);
//   - its two bytes are the first two of some fragment, as they are (`pair_bits`, `pair_index`), and the third is
//     the third byte of one of those fragments (`third_sets`), as it is or spelled by an escape;
//   - its byte begins some fragment (`fragment_first`) and the next bytes are an escape of a character
//     that is the second of a fragment beginning with that byte (`pair_bits`; a named reference counts
//     whatever it names).
// Every position where the matcher can find an occurrence passes one of these (redact.js says why,
// and test/js/gateway-secret-scan.test.js compares the two on random texts and chunkings), so the
// scan only ever adds positions to try: masking is exactly as strong as trying every position.
//
// Which positions are put to that test (the sparse scan, when every occurrence has at least
// `sparse_min` bytes: see add_secret_scan_run). An occurrence either repeats a run of a secret's (or
// a base64 needle's) bytes as they are, at least sparse_min of them, or it uses an escape somewhere.
//   - As they are: any sparse_min bytes in a row hold a kGramBytes-byte gram that starts at a multiple
//     of the stride sparse_min - kGramBytes + 1, and that gram is one of the runs' grams: only the grams
//     at those multiples are looked up (`gram_bits`, a hashed set of every run's grams). A gram found
//     puts the positions up to a run's length before it to the test.
//   - With an escape: its first escape spells a character of a secret (`escape_chars`), and either the
//     bytes before that escape, as they are, are sparse_min or more (the case above) or the occurrence
//     began at most sparse_min - 1 bytes before it. Blocks of 16 bytes are tested at once for a byte
//     that may begin such an escape (`%` before a hex digit, `&` before `#` or the first letter of a
//     name of a secret's character, `\` before u, x or an escaped character of a secret, `+` when a
//     secret holds a space); the few found are
//     read exactly, and those that spell a secret's character put the positions up to sparse_min - 1
//     before them to the test.
// So a text's bytes are read once, 16 at a time, plus one gram per stride: text full of `%&\+` whose
// escapes spell nothing of a secret costs no more than any other. Without runs (sparse_min 0) or with
// a secret so short that the stride would be small, every position is put to the test (the dense scan).
// Nothing here allocates.
#ifndef SLUICE_SECRET_SCAN_HPP
#define SLUICE_SECRET_SCAN_HPP

#include <cstddef>
#include <cstdint>

namespace sluice {

// The sparse scan's grams: kGramBytes bytes read as one little-endian word, hashed twice to
// kGramHashBits bits (a Bloom filter of 32 KiB: secret_scan.cpp).
constexpr uint32_t kGramBytes = 4;
constexpr uint32_t kGramHashBits = 18;
// The shortest stride worth a sparse scan; shorter secrets are scanned densely.
constexpr uint32_t kMinSparseStride = 4;

// The tables of one set of secrets, written by the JavaScript masker at these fixed offsets, and
// followed in memory by `pair_count` sets of third bytes (ThirdSet), one per pair of pair_index.
struct SecretScanTables {
  uint8_t raw_start[256];       // 1: a whole secret or needle without fragments begins with this byte
  uint8_t fragment_first[256];  // 1: some fragment begins with this byte
  uint8_t escape_value_start[256];  // 1: some secret or fragment begins with this character, spelled as an escape
  uint32_t has_fragments;       // 0 when no secret is long enough to have fragments
  uint32_t pair_count;          // how many third sets follow the tables
  uint32_t sparse_min;          // the fewest bytes an occurrence as it is has (0: no runs added, dense scan)
  uint32_t sparse_back;         // the longest run added: how far before a gram its occurrence may begin
  // Bit c (of word c >> 5): a named character reference whose name begins with the letter c spells a
  // character of a secret (the masker's names; written with the runs). The sparse scan's block test
  // passes over `&` before any other letter.
  uint32_t named_first[8];
  uint32_t reserved[52];        // pads coarse_pairs to offset 1024
  // Filled by prepare_secret_scan from the fields above: bit (first << 8 | second) set when a
  // position with these two bytes may be a candidate, whatever follows.
  uint32_t coarse_pairs[2048];
  // Bit (first << 8 | second) set when pair_index has the pair: 8 KiB read at every byte, where the
  // 128 KiB index is read only for the few pairs that begin a fragment.
  uint32_t pair_bits[2048];
  uint16_t pair_index[65536];   // (first << 8 | second): 0, or 1 + the index of the pair's third set
  uint8_t escape_chars[256];    // 1: a secret holds this character (an escape of it may be part of an occurrence)
  uint32_t gram_bits[1u << (kGramHashBits - 5)];  // the runs' grams, hashed
};
// The third bytes of the fragments that begin with one pair: bit b of word b >> 5 for byte b.
struct ThirdSet {
  uint32_t words[8];
};
static_assert(offsetof(SecretScanTables, fragment_first) == 256);
static_assert(offsetof(SecretScanTables, escape_value_start) == 512);
static_assert(offsetof(SecretScanTables, has_fragments) == 768);
static_assert(offsetof(SecretScanTables, pair_count) == 772);
static_assert(offsetof(SecretScanTables, sparse_min) == 776);
static_assert(offsetof(SecretScanTables, sparse_back) == 780);
static_assert(offsetof(SecretScanTables, named_first) == 784);
static_assert(offsetof(SecretScanTables, coarse_pairs) == 1024);
static_assert(offsetof(SecretScanTables, pair_bits) == 9216);
static_assert(offsetof(SecretScanTables, pair_index) == 17408);
static_assert(offsetof(SecretScanTables, escape_chars) == 148480);
static_assert(offsetof(SecretScanTables, gram_bits) == 148736);
static_assert(sizeof(SecretScanTables) == 148736 + 32768);
static_assert(sizeof(ThirdSet) == 32);

// The bytes tables for `pair_count` pairs take: the tables, then their third sets.
constexpr uint32_t secret_scan_tables_bytes(uint32_t pair_count) {
  return static_cast<uint32_t>(sizeof(SecretScanTables)) + pair_count * static_cast<uint32_t>(sizeof(ThirdSet));
}

// Fills `coarse_pairs` once the other fields are written (the first pass of the scan reads it).
void prepare_secret_scan(SecretScanTables& tables);

// Adds one run of bytes that an occurrence may repeat as it is, `min_bytes` of them at least (a
// secret: 12, its fragments' length, or its whole length when shorter; a base64 needle: its
// fragments' length or its whole length): its grams, and the fewest and most bytes of an occurrence.
// `escapable` (a secret's bytes, not a needle's): its characters may be spelled by escapes. Every
// secret and needle must be added, or none (then the scan is dense).
void add_secret_scan_run(SecretScanTables& tables, const uint8_t* bytes, uint32_t length, uint32_t min_bytes, bool escapable);

// How many u32 the `positions` of scan_secret_candidates must hold for a text of `length` bytes: one
// per byte, and the scan's scratch bitmap after them.
constexpr uint32_t secret_scan_positions_words(uint32_t length) { return length + length / 32 + 2; }

// Writes the candidate positions of text[0, length) to `positions` in increasing order (it must hold
// secret_scan_positions_words(length) entries) and returns how many there are. `tables` must be
// followed by its third sets.
uint32_t scan_secret_candidates(const SecretScanTables& tables, const uint8_t* text, uint32_t length, uint32_t* positions);

}  // namespace sluice

#endif
