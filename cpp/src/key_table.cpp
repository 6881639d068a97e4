#include "sluice/key_table.hpp"

#include <cstdlib>

namespace sluice {

KeyTable::~KeyTable() {
  std::free(tags_);
  std::free(states_);
  std::free(rings_);
}

Status KeyTable::init(uint32_t capacity, uint32_t ring_entries) {
  if (tags_ != nullptr) return Status::kInvalidArgument;
  if (capacity == 0) capacity = 1;
  // Slots for capacity / 0.9 keys: two-choice buckets of 8 overflow rarely below that load.
  const uint64_t slots = (static_cast<uint64_t>(capacity) * 10 + 8) / 9;
  const uint64_t buckets = (slots + kWays - 1) / kWays;
  if (buckets * kWays * (ring_entries + 6ULL) * 4 > (uint64_t{1} << 32)) return Status::kOutOfMemory;
  bucket_count_ = static_cast<uint32_t>(buckets);
  ring_entries_ = ring_entries;
  const size_t slot_count = static_cast<size_t>(buckets) * kWays;
  // calloc: a zero tag is an empty slot and a zero state a fresh key, so no initialisation pass.
  tags_ = static_cast<uint64_t*>(std::calloc(slot_count, sizeof(uint64_t)));
  states_ = static_cast<KeyState*>(std::calloc(slot_count, sizeof(KeyState)));
  if (ring_entries != 0) rings_ = static_cast<uint32_t*>(std::calloc(slot_count * ring_entries, 4));
  if (tags_ == nullptr || states_ == nullptr || (ring_entries != 0 && rings_ == nullptr)) {
    std::free(tags_);
    std::free(states_);
    std::free(rings_);
    tags_ = nullptr;
    states_ = nullptr;
    rings_ = nullptr;
    bucket_count_ = 0;
    return Status::kOutOfMemory;
  }
  return Status::kOk;
}

uint32_t KeyTable::find(uint64_t hash) const {
  const uint64_t tag = tag_of(hash);
  for (const uint32_t bucket : {first_bucket(hash), second_bucket(hash)}) {
    const uint64_t* ways = tags_ + static_cast<size_t>(bucket) * kWays;
    for (uint32_t way = 0; way < kWays; ++way) {
      if (ways[way] == tag) return bucket * kWays + way;
    }
  }
  return kMissing;
}

void KeyTable::erase(uint32_t slot) {
  if (tags_[slot] == 0) return;
  tags_[slot] = 0;
  --size_;
}

size_t KeyTable::memory_bytes() const {
  const size_t slots = slot_count();
  return slots * (sizeof(uint64_t) + sizeof(KeyState)) + slots * ring_entries_ * sizeof(uint32_t);
}

uint32_t KeyTable::empty_ways(uint32_t bucket) const {
  const uint64_t* ways = tags_ + static_cast<size_t>(bucket) * kWays;
  uint32_t empty = 0;
  for (uint32_t way = 0; way < kWays; ++way) empty += ways[way] == 0 ? 1 : 0;
  return empty;
}

void KeyTable::take(uint32_t slot, uint64_t tag) {
  tags_[slot] = tag;
  states_[slot] = KeyState{};  // a zero state is a fresh key; its ring is read only up to its count
}

}  // namespace sluice
