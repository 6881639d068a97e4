#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "sluice/key_state.hpp"
#include "sluice/status.hpp"

namespace sluice {

// KeyTable holds the state of up to `capacity` keys of one rule in memory allocated once, at init.
//
// Keys are not stored: a key is known by its 64-bit keyed hash (its "tag"). Each tag may live in one of
// two buckets of kWays slots (two-choice hashing keeps buckets evenly filled, so the table stays usable
// at ~90 % load). A lookup reads the tags of both buckets. Two different keys share state only if their
// tags collide inside the same pair of buckets: about 16 / 2^64 per lookup.
//
// Layout: a bucket is 8 slots of { tag, state }, 24 bytes each, 192 bytes (three cache lines) in all,
// so a key's state is in the cache line of its tag. With a table far larger than the caches, a lookup
// costs the misses on its two buckets, which find() issues together, and the state comes with them.
// (Tags first and states after took a second miss, on the state's line, once the tag was found: the
// bench measured the side-by-side slots faster at 1M keys, bench/README.md.)
//
// When both buckets are full, the slot whose key uses the least of its quota is reused (idle keys and
// keys back to full quota first). What the evicted key still owed is not lost: the limiter folds it
// into the rule's EvictionSummary (eviction_summary.hpp) before the slot is reused, and a key inserted
// later starts from that summary, so an eviction never hands any key quota it would not have had.
class KeyTable {
 public:
  static constexpr uint32_t kWays = 8;
  static constexpr uint32_t kMissing = 0xffffffff;

  KeyTable() = default;
  ~KeyTable();
  KeyTable(const KeyTable&) = delete;
  KeyTable& operator=(const KeyTable&) = delete;

  // init allocates room for `capacity` keys (at least 1), each with `ring_entries` 32-bit words of
  // extra memory (the sliding log's ring; 0 for other algorithms).
  Status init(uint32_t capacity, uint32_t ring_entries);

  // find returns the slot holding `hash`, or kMissing.
  uint32_t find(uint64_t hash) const;

  // holds reports whether `slot` (a slot find or claim returned for `hash`, possibly since reused)
  // still holds `hash`. A tag is in at most one slot of its two buckets, so then find(hash) == slot.
  bool holds(uint32_t slot, uint64_t hash) const { return buckets_[slot / kWays].slots[slot % kWays].tag == tag_of(hash); }

  // choose picks a slot for `hash`, which must not be present, without changing anything: an empty one,
  // or else the candidate with the lowest usage(slot), never one of `pinned` (slots of this same table
  // that the caller holds or has already chosen). Returns kMissing only if every candidate is pinned.
  template <class UsageOfSlot>
  uint32_t choose(uint64_t hash, UsageOfSlot&& usage, const uint32_t* pinned, uint32_t pinned_count) const;

  // make_room frees one slot of `hash`'s two buckets, when both are full, by moving a key there to its
  // other bucket (a cuckoo step): into an empty slot, or over a key whose usage(slot) is 0 (a key back
  // to its full quota, which choose() would reuse anyway). Neither the moved key nor the slot it goes to
  // is one of `pinned`. Returns the freed slot, or kMissing when no key can move. The moved key keeps
  // its state and ring; only its slot number changes. (Without it, two-choice buckets of 8 start to
  // overflow at ~70 % of their slots; with it, at ~95 %.)
  template <class UsageOfSlot>
  uint32_t make_room(uint64_t hash, UsageOfSlot&& usage, const uint32_t* pinned, uint32_t pinned_count);

  // occupied reports whether `slot` holds a key (so that placing another there evicts it).
  bool occupied(uint32_t slot) const { return buckets_[slot / kWays].slots[slot % kWays].tag != 0; }

  // hash_at is the hash of the key in `slot` (an occupied one), as the eviction summary indexes it.
  uint64_t hash_at(uint32_t slot) const { return buckets_[slot / kWays].slots[slot % kWays].tag; }

  // place puts `hash` in `slot` (from choose), evicting its key if it held one; the state is zeroed
  // (a fresh key). The caller folds an evicted key's state away first (see the class comment).
  void place(uint32_t slot, uint64_t hash);

  // erase forgets the key in `slot`.
  void erase(uint32_t slot);

  // grow moves every key, with its state and ring, into a table of `bucket_count` buckets (more than
  // now; any count, since buckets are picked by multiply-shift, not by masking). All or nothing: on
  // kOutOfMemory (no memory, or a key that finds no slot in the larger table, which two-choice buckets
  // make all but impossible) the table is unchanged. Every slot number changes.
  Status grow(uint32_t bucket_count);

  KeyState& state(uint32_t slot) { return buckets_[slot / kWays].slots[slot % kWays].state; }
  SlidingLogRing ring(uint32_t slot) {
    return SlidingLogRing{ring_entries_ == 0 ? nullptr : rings_ + static_cast<size_t>(slot) * ring_entries_};
  }

  uint32_t size() const { return size_; }
  uint32_t slot_count() const { return bucket_count_ * kWays; }
  size_t memory_bytes() const;
  // The bytes a table of `bucket_count` buckets with `ring_entries` words per ring takes.
  static size_t memory_bytes_for(uint32_t bucket_count, uint32_t ring_entries);
  uint32_t bucket_count() const { return bucket_count_; }
  // The bytes grow(bucket_count) would make it take.
  size_t grown_memory_bytes(uint32_t bucket_count) const { return memory_bytes_for(bucket_count, ring_entries_); }
  uint64_t evictions() const { return evictions_; }

  // A ring of `ring_entries` zeros that is never written: the sliding log's ring of a key rebuilt from
  // the eviction summary (all its entries at one time) before it has a slot. Null for other algorithms.
  SlidingLogRing zero_ring() const {
    return SlidingLogRing{ring_entries_ == 0 ? nullptr : rings_ + static_cast<size_t>(slot_count()) * ring_entries_};
  }

 private:
  static uint64_t tag_of(uint64_t hash) { return hash == 0 ? 1 : hash; }
  uint32_t first_bucket(uint64_t hash) const {
    return static_cast<uint32_t>(((hash >> 32) * bucket_count_) >> 32);
  }
  uint32_t second_bucket(uint64_t hash) const {
    return static_cast<uint32_t>(((hash & 0xffffffff) * bucket_count_) >> 32);
  }
  uint32_t empty_ways(uint32_t bucket) const;

  uint64_t& tag(uint32_t slot) { return buckets_[slot / kWays].slots[slot % kWays].tag; }
  // move puts the key of `from` (state and ring) in `to`, forgetting what `to` held, and empties `from`.
  void move(uint32_t from, uint32_t to);

  struct Slot {
    uint64_t tag;  // 0 = empty
    KeyState state;
  };
  struct alignas(64) Bucket {
    Slot slots[kWays];
  };
  static_assert(sizeof(Bucket) == kWays * (sizeof(uint64_t) + sizeof(KeyState)), "a bucket has no padding");

  // allocate sets up zeroed buckets and rings for `buckets` buckets (members untouched on failure).
  static Status allocate(uint64_t buckets, uint32_t ring_entries, void** allocation, Bucket** aligned, uint32_t** rings);

  void* allocation_ = nullptr;  // what calloc returned; buckets_ is it rounded up to a cache line
  Bucket* buckets_ = nullptr;
  uint32_t* rings_ = nullptr;
  uint32_t bucket_count_ = 0;
  uint32_t ring_entries_ = 0;
  uint32_t size_ = 0;
  uint64_t evictions_ = 0;
};

template <class UsageOfSlot>
uint32_t KeyTable::choose(uint64_t hash, UsageOfSlot&& usage, const uint32_t* pinned,
                          uint32_t pinned_count) const {
  const auto is_pinned = [pinned, pinned_count](uint32_t slot) {
    for (uint32_t i = 0; i < pinned_count; ++i) {
      if (pinned[i] == slot) return true;
    }
    return false;
  };
  const uint32_t first = first_bucket(hash);
  const uint32_t second = second_bucket(hash);
  const uint32_t first_empty = empty_ways(first);
  const uint32_t second_empty = empty_ways(second);
  // The emptier bucket first (two-choice hashing), then the other one; pinned empty slots are skipped.
  const uint32_t emptier = first_empty >= second_empty ? first : second;
  for (const uint32_t bucket : {emptier, emptier == first ? second : first}) {
    for (uint32_t way = 0; way < kWays; ++way) {
      const uint32_t slot = bucket * kWays + way;
      if (!occupied(slot) && !is_pinned(slot)) return slot;
    }
  }
  uint32_t victim = kMissing;
  double victim_usage = 0;
  for (const uint32_t bucket : {first, second}) {
    for (uint32_t way = 0; way < kWays; ++way) {
      const uint32_t slot = bucket * kWays + way;
      if (is_pinned(slot)) continue;
      const double u = usage(slot);
      if (victim == kMissing || u < victim_usage) {
        victim = slot;
        victim_usage = u;
      }
    }
  }
  return victim;
}

template <class UsageOfSlot>
uint32_t KeyTable::make_room(uint64_t hash, UsageOfSlot&& usage, const uint32_t* pinned, uint32_t pinned_count) {
  const auto is_pinned = [pinned, pinned_count](uint32_t slot) {
    for (uint32_t i = 0; i < pinned_count; ++i) {
      if (pinned[i] == slot) return true;
    }
    return false;
  };
  for (const uint32_t bucket : {first_bucket(hash), second_bucket(hash)}) {
    for (uint32_t way = 0; way < kWays; ++way) {
      const uint32_t from = bucket * kWays + way;
      if (!occupied(from) || is_pinned(from)) continue;
      // The tag stands for the hash (they differ only for hash 0, whose tag 1 has the same buckets).
      const uint64_t moving = hash_at(from);
      const uint32_t other = first_bucket(moving) == bucket ? second_bucket(moving) : first_bucket(moving);
      if (other == bucket) continue;
      for (uint32_t other_way = 0; other_way < kWays; ++other_way) {
        const uint32_t to = other * kWays + other_way;
        if (is_pinned(to) || (occupied(to) && usage(to) != 0)) continue;
        move(from, to);
        return from;
      }
    }
  }
  return kMissing;
}

}  // namespace sluice
