#include "sluice/key_table.hpp"

#include <cstdlib>

namespace sluice {

KeyTable::~KeyTable() {
  std::free(allocation_);
  std::free(rings_);
}

Status KeyTable::init(uint32_t capacity, uint32_t ring_entries) {
  if (buckets_ != nullptr) return Status::kInvalidArgument;
  if (capacity == 0) capacity = 1;
  // Slots for capacity / 0.9 keys: two-choice buckets of 8 overflow rarely below that load.
  const uint64_t slots = (static_cast<uint64_t>(capacity) * 10 + 8) / 9;
  const uint64_t buckets = (slots + kWays - 1) / kWays;
  if ((buckets * kWays + 1) * (ring_entries + 6ULL) * 4 > (uint64_t{1} << 32)) return Status::kOutOfMemory;
  bucket_count_ = static_cast<uint32_t>(buckets);
  ring_entries_ = ring_entries;
  const size_t slot_count = static_cast<size_t>(buckets) * kWays;
  // calloc: a zero tag is an empty slot and a zero state a fresh key, so no initialisation pass (and
  // natively, untouched pages stay unmapped). One spare line to align the buckets to cache lines.
  allocation_ = std::calloc(1, static_cast<size_t>(buckets) * sizeof(Bucket) + alignof(Bucket));
  // One ring more than slots: zero_ring(), which stays all zeros.
  if (ring_entries != 0) rings_ = static_cast<uint32_t*>(std::calloc((slot_count + 1) * ring_entries, 4));
  if (allocation_ == nullptr || (ring_entries != 0 && rings_ == nullptr)) {
    std::free(allocation_);
    std::free(rings_);
    allocation_ = nullptr;
    rings_ = nullptr;
    bucket_count_ = 0;
    return Status::kOutOfMemory;
  }
  const uintptr_t line = alignof(Bucket);
  buckets_ = reinterpret_cast<Bucket*>((reinterpret_cast<uintptr_t>(allocation_) + line - 1) & ~(line - 1));
  return Status::kOk;
}

uint32_t KeyTable::find(uint64_t hash) const {
  const uint64_t wanted = tag_of(hash);
  const uint32_t first = first_bucket(hash);
  const uint32_t second = second_bucket(hash);
  const Slot* a = buckets_[first].slots;
  const Slot* b = buckets_[second].slots;
  // Compare all 16 tags into one mask before branching on any of them, so both buckets are loaded at
  // once: in a large table each is a cache miss, and two misses in flight cost about as much as one.
  // (With a branch on the first bucket's tags alone, the compiler sinks the second bucket's loads
  // behind it, and a key in the second bucket costs two misses one after the other.)
  uint32_t found = 0;
  for (uint32_t way = 0; way < kWays; ++way) {
    found |= static_cast<uint32_t>(a[way].tag == wanted) << way;
    found |= static_cast<uint32_t>(b[way].tag == wanted) << (way + kWays);
  }
  if (found == 0) return kMissing;
  const uint32_t way = static_cast<uint32_t>(__builtin_ctz(found));
  return way < kWays ? first * kWays + way : second * kWays + (way - kWays);
}

void KeyTable::erase(uint32_t slot) {
  if (tag(slot) == 0) return;
  tag(slot) = 0;
  --size_;
}

size_t KeyTable::memory_bytes() const {
  const size_t slots = slot_count();
  return slots * (sizeof(uint64_t) + sizeof(KeyState)) + (slots + 1) * ring_entries_ * sizeof(uint32_t);
}

uint32_t KeyTable::empty_ways(uint32_t bucket) const {
  const Slot* ways = buckets_[bucket].slots;
  uint32_t empty = 0;
  for (uint32_t way = 0; way < kWays; ++way) empty += ways[way].tag == 0 ? 1 : 0;
  return empty;
}

void KeyTable::place(uint32_t slot, uint64_t hash) {
  if (occupied(slot)) {
    ++evictions_;
  } else {
    ++size_;
  }
  tag(slot) = tag_of(hash);
  state(slot) = KeyState{};  // a zero state is a fresh key; its ring is read only up to its count
}

}  // namespace sluice
