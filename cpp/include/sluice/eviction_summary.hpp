#pragma once
#include <cstddef>
#include <cstdint>

#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"
#include "sluice/status.hpp"

namespace sluice {

// EvictionSummary remembers, conservatively, what keys evicted from a full key table still owed, so
// that a key inserted later (the evicted one coming back, or any other) starts from at least that much
// use instead of from a fresh quota.
//
// It is count-min-shaped: kRows rows of `cells` cells, each cell one KeyState-sized word pair. A key
// maps to one cell per row, chosen by the low 16 bits of each 32-bit half of its hash (the key table
// picks buckets by multiply-shift of each half, which reads those bits only through a carry, so the
// cells a key shares are independent of the bucket it was evicted from). Folding a state into a cell
// keeps the more restrictive of the two ("at least as used, for as long"); a key's start is the least
// restrictive of its cells, which is still at least as restrictive as anything ever folded for it.
//
// The guarantee it gives, on the core's clock (calls whose now never goes backwards): for every key,
// the state the limiter decides on (in its slot, or rebuilt from the summary) is at least as
// restrictive as the state an unbounded table would hold after the same admitted requests, so an
// eviction never raises any key's remaining quota. The price is false limiting: a newcomer whose cells
// all hold folded use starts with that use (measured in docs/core.md).
//
// A blocking rule's summary also keeps, per cell, the latest end of a block folded there (block.hpp).
//
// Cells hold each algorithm's state words, except the sliding log's: a = the newest live entry's time,
// b = the number of live entries, read as that many entries all at that time (they expire no earlier
// than the real ones did). All zeros is a fresh key for every algorithm, so the cells start zeroed.
//
// Only insertions and evictions touch it: a lookup of a key already in the table never reads it.
class EvictionSummary {
 public:
  static constexpr uint32_t kRows = 2;
  static constexpr uint32_t kMinCells = 256;
  static constexpr uint32_t kMaxCells = 65536;
  static constexpr uint32_t kKeysPerCell = 64;

  EvictionSummary() = default;
  ~EvictionSummary();
  EvictionSummary(const EvictionSummary&) = delete;
  EvictionSummary& operator=(const EvictionSummary&) = delete;

  // cells_for is the number of cells per row of a table of `key_capacity` keys: one per kKeysPerCell
  // keys, a power of two in [kMinCells, kMaxCells] (8 KiB up to 16,384 keys, then 1 byte per key
  // beside the table's ~27, up to 2 MiB). A cell holds what every key mapped to it owed, so a newcomer
  // is limited only when each of its kRows cells holds a restricting key: more cells, fewer newcomers
  // whose cells all do. Under a flood many times the table, every cell fills anyway: growing the
  // table (Limiter's table growth) is what keeps the flood out of the summary.
  static uint32_t cells_for(uint32_t key_capacity);
  static uint64_t bytes_for(uint32_t key_capacity) {
    return uint64_t{kRows} * cells_for(key_capacity) * sizeof(KeyState);
  }

  // init allocates the cells; `with_blocks` (a blocking rule) also a block end per cell.
  Status init(uint32_t key_capacity, bool with_blocks = false);

  // grow gives the summary the cells of a table grown to `key_capacity` keys, when that means more
  // cells: each new cell starts as a copy of the old cell its keys mapped to (a key's cell index is the
  // low bits of its hash, so the old index is the new one's low bits), so no key starts from less than
  // before. All or nothing: on kOutOfMemory the summary is unchanged.
  Status grow(uint32_t key_capacity);

  // The bytes grow(key_capacity) would add (0 when it would not add cells), block ends included.
  uint64_t growth_bytes(uint32_t key_capacity) const {
    const uint32_t cells = cells_for(key_capacity);
    if (cells <= cells_) return 0;
    return uint64_t{kRows} * (cells - cells_) * (sizeof(KeyState) + (blocks_ != nullptr ? sizeof(int64_t) : 0));
  }

  // fold merges `summarized` (a still-restricting state in summary form, see above) into the cells of
  // `hash`, keeping in each the more restrictive of the two.
  void fold(const Rule& rule, uint64_t hash, const KeyState& summarized);

  // start_for writes the state, in summary form, a key of `hash` that is not in the table starts
  // from, and returns false when that is a fresh key (nothing folded applies). Nothing changes.
  bool start_for(const Rule& rule, uint64_t hash, KeyState* summarized) const;

  // fold_block merges the block of an evicted blocked key (block.hpp), ending at `until_ms`, into the
  // block ends of the cells of `hash`, keeping in each the later end.
  void fold_block(uint64_t hash, int64_t until_ms);

  // blocked_until is the end of the block a key of `hash` not in the table starts with: the earliest of
  // its cells' ends, each at least as late as the block of any key folded there (0: none).
  int64_t blocked_until(uint64_t hash) const;

  bool empty() const { return folds_ == 0; }
  uint64_t folds() const { return folds_; }
  size_t memory_bytes() const {
    return static_cast<size_t>(kRows) * cells_ * (sizeof(KeyState) + (blocks_ != nullptr ? sizeof(int64_t) : 0));
  }

 public:
  uint32_t cells() const { return cells_; }

 private:
  uint32_t cell(uint32_t row, uint64_t hash) const {
    const uint32_t half = static_cast<uint32_t>(row == 0 ? hash : hash >> 32);
    return row * cells_ + (half & (cells_ - 1));
  }

  KeyState* cells_array_ = nullptr;
  int64_t* blocks_ = nullptr;  // a blocking rule's block ends, one per cell (0: none)
  uint32_t cells_ = 0;
  uint64_t folds_ = 0;
};

}  // namespace sluice
