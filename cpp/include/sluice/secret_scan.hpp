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
// Nothing here allocates; the scan reads each byte once, with two table lookups.
#ifndef SLUICE_SECRET_SCAN_HPP
#define SLUICE_SECRET_SCAN_HPP

#include <cstddef>
#include <cstdint>

namespace sluice {

// The tables of one set of secrets, written by the JavaScript masker at these fixed offsets, and
// followed in memory by `pair_count` sets of third bytes (ThirdSet), one per pair of pair_index.
struct SecretScanTables {
  uint8_t raw_start[256];       // 1: a whole secret or needle without fragments begins with this byte
  uint8_t fragment_first[256];  // 1: some fragment begins with this byte
  uint8_t escape_value_start[256];  // 1: some secret or fragment begins with this character, spelled as an escape
  uint32_t has_fragments;       // 0 when no secret is long enough to have fragments
  uint32_t pair_count;          // how many third sets follow the tables
  uint32_t reserved[62];        // pads pair_bits to offset 1024
  // Filled by prepare_secret_scan from the fields above: bit (first << 8 | second) set when a
  // position with these two bytes may be a candidate, whatever follows.
  uint32_t coarse_pairs[2048];
  // Bit (first << 8 | second) set when pair_index has the pair: 8 KiB read at every byte, where the
  // 128 KiB index is read only for the few pairs that begin a fragment.
  uint32_t pair_bits[2048];
  uint16_t pair_index[65536];   // (first << 8 | second): 0, or 1 + the index of the pair's third set
};
// The third bytes of the fragments that begin with one pair: bit b of word b >> 5 for byte b.
struct ThirdSet {
  uint32_t words[8];
};
static_assert(offsetof(SecretScanTables, fragment_first) == 256);
static_assert(offsetof(SecretScanTables, escape_value_start) == 512);
static_assert(offsetof(SecretScanTables, has_fragments) == 768);
static_assert(offsetof(SecretScanTables, pair_count) == 772);
static_assert(offsetof(SecretScanTables, coarse_pairs) == 1024);
static_assert(offsetof(SecretScanTables, pair_bits) == 9216);
static_assert(offsetof(SecretScanTables, pair_index) == 17408);
static_assert(sizeof(SecretScanTables) == 17408 + 131072);
static_assert(sizeof(ThirdSet) == 32);

// The bytes tables for `pair_count` pairs take: the tables, then their third sets.
constexpr uint32_t secret_scan_tables_bytes(uint32_t pair_count) {
  return static_cast<uint32_t>(sizeof(SecretScanTables)) + pair_count * static_cast<uint32_t>(sizeof(ThirdSet));
}

// Fills `coarse_pairs` once the other fields are written (the first pass of the scan reads it).
void prepare_secret_scan(SecretScanTables& tables);

// Writes the candidate positions of text[0, length) to `positions` in increasing order (it must hold
// `length` entries) and returns how many there are. `tables` must be followed by its third sets.
uint32_t scan_secret_candidates(const SecretScanTables& tables, const uint8_t* text, uint32_t length, uint32_t* positions);

}  // namespace sluice

#endif
