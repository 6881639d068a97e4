#include "sluice/eviction_summary.hpp"

#include <cstdlib>

#include "sluice/algorithms/window_ahead.hpp"
#include "sluice/arithmetic.hpp"
#include "sluice/lease.hpp"

namespace sluice {
namespace {

// Each algorithm's "more restrictive" (merge) and "less restrictive" (meet) of two states in summary
// form. merge(x, y) is at least as restrictive as x and as y; meet(x, y) is at least as restrictive as
// any state that both x and y are at least as restrictive as. "At least as restrictive" means: at every
// later time on the core's clock, with the same requests charged to both, it admits no request the other
// would deny and reports no more remaining.

// Fixed window (a = window and units lent ahead into the next, b = count). Both are moved to the later
// window (a count from an earlier window is over on the core's clock, since something was charged in
// the later one; what was lent ahead into the later window is its count), then count by count.
struct WindowCounts {
  int64_t count;
  int64_t ahead;
};
WindowCounts window_counts_in(const KeyState& s, int64_t window) {
  if (window == window_ahead::window(s)) return {s.b, window_ahead::ahead(s)};
  if (window == window_ahead::window(s) + 1) return {window_ahead::ahead(s), 0};
  return {0, 0};
}
KeyState merge_window(const KeyState& x, const KeyState& y) {
  const int64_t window = detail::max64(window_ahead::window(x), window_ahead::window(y));
  const WindowCounts cx = window_counts_in(x, window);
  const WindowCounts cy = window_counts_in(y, window);
  return {window_ahead::pack(window, detail::max64(cx.ahead, cy.ahead)), detail::max64(cx.count, cy.count)};
}
KeyState meet_window(const KeyState& x, const KeyState& y) {
  const int64_t window = detail::max64(window_ahead::window(x), window_ahead::window(y));
  const WindowCounts cx = window_counts_in(x, window);
  const WindowCounts cy = window_counts_in(y, window);
  const KeyState met{window_ahead::pack(window, detail::min64(cx.ahead, cy.ahead)), detail::min64(cx.count, cy.count)};
  // From two windows, with nothing counted under both: fresh (the earlier window is over).
  const bool apart = window_ahead::window(x) != window_ahead::window(y);
  return apart && met.b == 0 && window_ahead::ahead(met) == 0 ? KeyState{} : met;
}

// Sliding counter (a = window and units lent ahead into the next, b = previous << 32 | current): both
// moved to the later window (what was lent ahead becomes the current count after one window and the
// previous one after two; the current count the previous one after one window, nothing after two),
// then count by count.
struct Counts {
  int64_t current;
  int64_t previous;
  int64_t ahead;
};
Counts counts_in(const KeyState& s, int64_t window) {
  const int64_t current = s.b & 0xffffffff;
  const int64_t previous = static_cast<int64_t>(static_cast<uint64_t>(s.b) >> 32);
  const int64_t ahead = window_ahead::ahead(s);
  const int64_t key_window = window_ahead::window(s);
  if (window == key_window) return {current, previous, ahead};
  if (window == key_window + 1) return {ahead, current, 0};
  if (window == key_window + 2) return {0, ahead, 0};
  return {0, 0, 0};
}
KeyState counter_state(int64_t window, Counts c) {
  return {window_ahead::pack(window, c.ahead),
          static_cast<int64_t>((static_cast<uint64_t>(c.previous) << 32) | static_cast<uint64_t>(c.current))};
}
KeyState merge_counter(const KeyState& x, const KeyState& y) {
  const int64_t window = detail::max64(window_ahead::window(x), window_ahead::window(y));
  const Counts cx = counts_in(x, window);
  const Counts cy = counts_in(y, window);
  return counter_state(window, {detail::max64(cx.current, cy.current), detail::max64(cx.previous, cy.previous),
                                detail::max64(cx.ahead, cy.ahead)});
}
KeyState meet_counter(const KeyState& x, const KeyState& y) {
  const int64_t window = detail::max64(window_ahead::window(x), window_ahead::window(y));
  const Counts cx = counts_in(x, window);
  const Counts cy = counts_in(y, window);
  return counter_state(window, {detail::min64(cx.current, cy.current), detail::min64(cx.previous, cy.previous),
                                detail::min64(cx.ahead, cy.ahead)});
}

// Token and leaky bucket (a = time, b = level in 1/rate_ms units): both drained to the later time, after
// which they drain alike.
int64_t level_at(const Rule& rule, const KeyState& s, int64_t time) {
  if (time <= s.a) return s.b;
  const int64_t drain_ms = detail::ceil_div(s.b, rule.rate_tokens);
  return detail::max64(0, s.b - detail::min64(time - s.a, drain_ms) * rule.rate_tokens);
}
KeyState merge_level(const Rule& rule, const KeyState& x, const KeyState& y) {
  const int64_t time = detail::max64(x.a, y.a);
  return {time, detail::max64(level_at(rule, x, time), level_at(rule, y, time))};
}
KeyState meet_level(const Rule& rule, const KeyState& x, const KeyState& y) {
  const int64_t time = detail::max64(x.a, y.a);
  return {time, detail::min64(level_at(rule, x, time), level_at(rule, y, time))};
}

// GCRA (a = theoretical arrival time): later is stricter.
KeyState merge_gcra(const KeyState& x, const KeyState& y) { return x.a >= y.a ? x : y; }
KeyState meet_gcra(const KeyState& x, const KeyState& y) { return x.a <= y.a ? x : y; }

// Sliding log in summary form (a = newest live entry's time, b = live entries, all read as at a).
// Entries at or before the other's newest time minus the window are gone on the core's clock. A log's
// newest entry may be a lease's end, up to a quarter window past the clock (sliding_log::lend): the
// log takes that quarter off before judging the other gone.
bool log_over(const Rule& rule, const KeyState& older, const KeyState& newer) {
  const int64_t ahead = rule.algorithm == Algorithm::kSlidingLog ? rule.window_ms / kLogLeaseShareOfWindow : 0;
  return older.b == 0 || older.a <= newer.a - ahead - rule.window_ms;
}
KeyState merge_log(const Rule& rule, const KeyState& x, const KeyState& y) {
  const KeyState& newer = x.a >= y.a ? x : y;
  const KeyState& older = x.a >= y.a ? y : x;
  if (log_over(rule, older, newer)) return newer;
  return {newer.a, detail::max64(x.b, y.b)};
}
KeyState meet_log(const Rule& rule, const KeyState& x, const KeyState& y) {
  const KeyState& newer = x.a >= y.a ? x : y;
  const KeyState& older = x.a >= y.a ? y : x;
  if (newer.b == 0 || log_over(rule, older, newer)) return KeyState{};
  return {older.a, detail::min64(x.b, y.b)};
}

KeyState merge(const Rule& rule, const KeyState& x, const KeyState& y) {
  switch (rule.algorithm) {
    case Algorithm::kFixedWindow: return merge_window(x, y);
    case Algorithm::kSlidingLog: return merge_log(rule, x, y);
    case Algorithm::kSlidingCounter: return merge_counter(x, y);
    case Algorithm::kTokenBucket:
    case Algorithm::kLeakyBucket: return merge_level(rule, x, y);
    case Algorithm::kGcra: return merge_gcra(x, y);
    case Algorithm::kConcurrency: return merge_log(rule, x, y);  // units as entries: they expire a lease later
  }
  return x;
}

KeyState meet(const Rule& rule, const KeyState& x, const KeyState& y) {
  switch (rule.algorithm) {
    case Algorithm::kFixedWindow: return meet_window(x, y);
    case Algorithm::kSlidingLog: return meet_log(rule, x, y);
    case Algorithm::kSlidingCounter: return meet_counter(x, y);
    case Algorithm::kTokenBucket:
    case Algorithm::kLeakyBucket: return meet_level(rule, x, y);
    case Algorithm::kGcra: return meet_gcra(x, y);
    case Algorithm::kConcurrency: return meet_log(rule, x, y);
  }
  return KeyState{};
}

bool is_zero(const KeyState& s) { return s.a == 0 && s.b == 0; }

}  // namespace

EvictionSummary::~EvictionSummary() {
  std::free(cells_array_);
  std::free(blocks_);
}

uint32_t EvictionSummary::cells_for(uint32_t key_capacity) {
  uint32_t cells = kMinCells;
  while (cells < kMaxCells && cells * uint64_t{kKeysPerCell} < key_capacity) cells *= 2;
  return cells;
}

Status EvictionSummary::init(uint32_t key_capacity, bool with_blocks) {
  if (cells_array_ != nullptr) return Status::kInvalidArgument;
  const uint32_t cells = cells_for(key_capacity);
  cells_array_ = static_cast<KeyState*>(std::calloc(static_cast<size_t>(kRows) * cells, sizeof(KeyState)));
  if (cells_array_ == nullptr) return Status::kOutOfMemory;
  if (with_blocks) {
    blocks_ = static_cast<int64_t*>(std::calloc(static_cast<size_t>(kRows) * cells, sizeof(int64_t)));
    if (blocks_ == nullptr) {
      std::free(cells_array_);
      cells_array_ = nullptr;
      return Status::kOutOfMemory;
    }
  }
  cells_ = cells;
  return Status::kOk;
}

Status EvictionSummary::grow(uint32_t key_capacity) {
  const uint32_t cells = cells_for(key_capacity);
  if (cells <= cells_) return Status::kOk;
  auto* grown = static_cast<KeyState*>(std::calloc(static_cast<size_t>(kRows) * cells, sizeof(KeyState)));
  if (grown == nullptr) return Status::kOutOfMemory;
  // A blocking rule's block ends grow with the cells, each new cell copying its old one's, as the
  // states do: a key never starts less blocked than before the growth.
  int64_t* grown_blocks = nullptr;
  if (blocks_ != nullptr) {
    grown_blocks = static_cast<int64_t*>(std::calloc(static_cast<size_t>(kRows) * cells, sizeof(int64_t)));
    if (grown_blocks == nullptr) {
      std::free(grown);
      return Status::kOutOfMemory;
    }
  }
  for (uint32_t row = 0; row < kRows; ++row) {
    for (uint32_t c = 0; c < cells; ++c) {
      const uint32_t from = row * cells_ + (c & (cells_ - 1));
      grown[row * cells + c] = cells_array_[from];
      if (grown_blocks != nullptr) grown_blocks[row * cells + c] = blocks_[from];
    }
  }
  std::free(cells_array_);
  cells_array_ = grown;
  if (grown_blocks != nullptr) {
    std::free(blocks_);
    blocks_ = grown_blocks;
  }
  cells_ = cells;
  return Status::kOk;
}

void EvictionSummary::fold(const Rule& rule, uint64_t hash, const KeyState& summarized) {
  for (uint32_t row = 0; row < kRows; ++row) {
    KeyState& c = cells_array_[cell(row, hash)];
    c = merge(rule, c, summarized);
  }
  ++folds_;
}

void EvictionSummary::fold_block(uint64_t hash, int64_t until_ms) {
  if (blocks_ == nullptr) return;
  for (uint32_t row = 0; row < kRows; ++row) {
    int64_t& end = blocks_[cell(row, hash)];
    end = detail::max64(end, until_ms);
  }
  ++folds_;
}

int64_t EvictionSummary::blocked_until(uint64_t hash) const {
  if (blocks_ == nullptr || folds_ == 0) return 0;
  int64_t end = blocks_[cell(0, hash)];
  for (uint32_t row = 1; row < kRows; ++row) end = detail::min64(end, blocks_[cell(row, hash)]);
  return end;
}

bool EvictionSummary::start_for(const Rule& rule, uint64_t hash, KeyState* summarized) const {
  if (folds_ == 0) return false;
  KeyState start = cells_array_[cell(0, hash)];
  for (uint32_t row = 1; row < kRows; ++row) start = meet(rule, start, cells_array_[cell(row, hash)]);
  *summarized = start;
  return !is_zero(start);
}

}  // namespace sluice
