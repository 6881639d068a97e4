#include "sluice/key_table.hpp"

#include <cstdlib>

namespace sluice {

KeyTable::~KeyTable() {
  std::free(allocation_);
  std::free(rings_);
}

Status KeyTable::allocate(uint64_t buckets, uint32_t ring_entries, void** allocation, Bucket** aligned,
                          uint32_t** rings) {
  if ((buckets * kWays + 1) * (ring_entries + 6ULL) * 4 > (uint64_t{1} << 32)) return Status::kOutOfMemory;
  const size_t slot_count = static_cast<size_t>(buckets) * kWays;
  // calloc: a zero tag is an empty slot and a zero state a fresh key, so no initialisation pass (and
  // natively, untouched pages stay unmapped). One spare line to align the buckets to cache lines.
  void* made = std::calloc(1, static_cast<size_t>(buckets) * sizeof(Bucket) + alignof(Bucket));
  // One ring more than slots: zero_ring(), which stays all zeros.
  uint32_t* made_rings = ring_entries == 0 ? nullptr : static_cast<uint32_t*>(std::calloc((slot_count + 1) * ring_entries, 4));
  if (made == nullptr || (ring_entries != 0 && made_rings == nullptr)) {
    std::free(made);
    std::free(made_rings);
    return Status::kOutOfMemory;
  }
  const uintptr_t line = alignof(Bucket);
  *allocation = made;
  *aligned = reinterpret_cast<Bucket*>((reinterpret_cast<uintptr_t>(made) + line - 1) & ~(line - 1));
  *rings = made_rings;
  return Status::kOk;
}

Status KeyTable::init(uint32_t capacity, uint32_t ring_entries) {
  if (buckets_ != nullptr) return Status::kInvalidArgument;
  if (capacity == 0) capacity = 1;
  // Slots for capacity / 0.9 keys: two-choice buckets of 8 overflow rarely below that load.
  const uint64_t slots = (static_cast<uint64_t>(capacity) * 10 + 8) / 9;
  const uint64_t buckets = (slots + kWays - 1) / kWays;
  const Status made = allocate(buckets, ring_entries, &allocation_, &buckets_, &rings_);
  if (made != Status::kOk) return made;
  bucket_count_ = static_cast<uint32_t>(buckets);
  ring_entries_ = ring_entries;
  return Status::kOk;
}

Status KeyTable::grow(uint32_t bucket_count) {
  const uint64_t buckets = bucket_count;
  if (buckets <= bucket_count_) return Status::kInvalidArgument;
  if (buckets > 0xffffffffULL / kWays) return Status::kOutOfMemory;
  void* allocation = nullptr;
  Bucket* moved = nullptr;
  uint32_t* rings = nullptr;
  const Status made = allocate(buckets, ring_entries_, &allocation, &moved, &rings);
  if (made != Status::kOk) return made;
  const uint32_t count = static_cast<uint32_t>(buckets);
  // The buckets of a hash in a table of `count` buckets (first_bucket and second_bucket's formula). The
  // tag stands for the hash: they differ only for hash 0, whose tag 1 has the same two buckets (0, 0).
  const auto bucket_of = [count](uint64_t half) { return static_cast<uint32_t>((half * count) >> 32); };
  const auto free_way = [moved](uint32_t bucket) {
    for (uint32_t way = 0; way < kWays; ++way) {
      if (moved[bucket].slots[way].tag == 0) return way;
    }
    return kWays;
  };
  for (uint32_t slot = 0; slot < slot_count(); ++slot) {
    const Slot& from = buckets_[slot / kWays].slots[slot % kWays];
    if (from.tag == 0) continue;
    const uint32_t first = bucket_of(from.tag >> 32);
    const uint32_t second = bucket_of(from.tag & 0xffffffff);
    uint32_t bucket = first;
    uint32_t way = free_way(first);
    const uint32_t other_way = free_way(second);
    // The emptier of the two, as choose() places keys (ways here fill in order: the first free way is
    // the bucket's count of keys).
    if (way == kWays || (other_way != kWays && other_way < way)) {
      bucket = second;
      way = other_way;
    }
    if (way == kWays) {
      // Both full: move a key of either to its other bucket if that has room (a cuckoo step, as
      // make_room does), so a step that leaves the table ~75 % full still finds every key a slot.
      for (const uint32_t full : {first, second}) {
        for (uint32_t w = 0; w < kWays && way == kWays; ++w) {
          const uint64_t moving = moved[full].slots[w].tag;
          const uint32_t a = bucket_of(moving >> 32);
          const uint32_t b = bucket_of(moving & 0xffffffff);
          const uint32_t other = a == full ? b : a;
          const uint32_t room = other == full ? kWays : free_way(other);
          if (room == kWays) continue;
          moved[other].slots[room] = moved[full].slots[w];
          if (ring_entries_ != 0) {
            const size_t into = (static_cast<size_t>(other) * kWays + room) * ring_entries_;
            const size_t at = (static_cast<size_t>(full) * kWays + w) * ring_entries_;
            for (uint32_t i = 0; i < ring_entries_; ++i) rings[into + i] = rings[at + i];
          }
          moved[full].slots[w].tag = 0;
          bucket = full;
          way = w;
        }
        if (way != kWays) break;
      }
    }
    if (way == kWays) {
      std::free(allocation);
      std::free(rings);
      return Status::kOutOfMemory;
    }
    moved[bucket].slots[way] = from;
    if (ring_entries_ != 0) {
      const size_t to = (static_cast<size_t>(bucket) * kWays + way) * ring_entries_;
      const size_t at = static_cast<size_t>(slot) * ring_entries_;
      for (uint32_t i = 0; i < ring_entries_; ++i) rings[to + i] = rings_[at + i];
    }
  }
  std::free(allocation_);
  std::free(rings_);
  allocation_ = allocation;
  buckets_ = moved;
  rings_ = rings;
  bucket_count_ = count;
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

size_t KeyTable::memory_bytes_for(uint32_t bucket_count, uint32_t ring_entries) {
  const size_t slots = static_cast<size_t>(bucket_count) * kWays;
  return slots * (sizeof(uint64_t) + sizeof(KeyState)) + (slots + 1) * ring_entries * sizeof(uint32_t);
}

size_t KeyTable::memory_bytes() const { return memory_bytes_for(bucket_count_, ring_entries_); }

uint32_t KeyTable::empty_ways(uint32_t bucket) const {
  const Slot* ways = buckets_[bucket].slots;
  uint32_t empty = 0;
  for (uint32_t way = 0; way < kWays; ++way) empty += ways[way].tag == 0 ? 1 : 0;
  return empty;
}

void KeyTable::move(uint32_t from, uint32_t to) {
  if (occupied(to)) {
    ++evictions_;
    --size_;
  }
  buckets_[to / kWays].slots[to % kWays] = buckets_[from / kWays].slots[from % kWays];
  if (ring_entries_ != 0) {
    const size_t at = static_cast<size_t>(from) * ring_entries_;
    const size_t into = static_cast<size_t>(to) * ring_entries_;
    for (uint32_t i = 0; i < ring_entries_; ++i) rings_[into + i] = rings_[at + i];
  }
  tag(from) = 0;
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
