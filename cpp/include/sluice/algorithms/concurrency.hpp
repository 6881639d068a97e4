#pragma once
#include <cstdint>

#include "sluice/decision.hpp"
#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"

// Concurrency: at most `limit` units held at once, each by a holder the host names with a 32-bit id.
// A holder acquires `cost` units, renews them while it works and releases them when done; a holder that
// never comes back (an isolate evicted without cleanup) loses its units window_ms (the lease) after it
// last acquired or renewed them. Nothing is ever released below zero: releasing or renewing a holder
// that holds nothing changes nothing.
//
// State: a = base time (ms) that the entries' 32-bit offsets count from; b = entry count (low 32) | the
// offset of the latest time any operation was taken at (high 32), so time running backwards is judged at
// that latest time. The per-key memory holds `limit` entries of two words, { holder, offset }, sorted by
// offset, oldest first: acquiring appends, renewing moves a holder's entries to the end, expired entries
// are a prefix. Memory per key: 8 bytes per unit of limit.
namespace sluice::concurrency {

// Op is what sluice_concurrency does; its values are part of the ABI (mirrored in wasm-bindings/sluice.js).
enum class Op : uint32_t {
  kAcquire = 0,  // take `cost` units for the holder, if they fit
  kRelease = 1,  // give back every unit the holder has
  kRenew = 2,    // restart the lease of every live unit the holder has
};
inline constexpr uint32_t kOpCount = 3;

// The anonymous holder: a plain check() of a concurrency rule acquires for it. Its units can only expire.
inline constexpr uint32_t kAnonymousHolder = 0;

// The lease is kept as 32-bit offsets within 2^31 ms (about 24 days); the limit bounds per-key memory.
inline constexpr int64_t kMaxLeaseMs = int64_t{1} << 31;
inline constexpr int64_t kMaxConcurrency = int64_t{1} << 16;

// decide reports what acquiring `cost` units at `now` would get, without changing `state`. A cost of 0
// describes the key as it stands. retry_after_ms assumes nobody releases: it is when enough leases
// expire, the latest the request has to wait.
Decision decide(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost);

// acquire records `cost` units for `holder` at `now`. Call it only after decide admitted them.
void acquire(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, uint32_t holder, int64_t cost);

// release frees every unit `holder` has; it reports whether any of them was still live.
bool release(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, uint32_t holder);

// renew restarts the lease of every live unit of `holder` at `now`; false when it holds none (it
// never acquired, released, or its lease ran out: its units may be someone else's by now).
bool renew(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, uint32_t holder);

// usage is the share of the limit held at `now`, from 0 to 1.
double usage(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now);

// For export: the latest time seen, and the live entries at that time, oldest first.
int64_t latest(const KeyState& state);
uint32_t live_from(const Rule& rule, const KeyState& state, SlidingLogRing ring);  // index of the first live entry
uint32_t count(const KeyState& state);
int64_t entry_time(const KeyState& state, SlidingLogRing ring, uint32_t index);
uint32_t entry_holder(SlidingLogRing ring, uint32_t index);

// restore_begin and restore_entry rebuild a state from exported entries, which the caller has
// validated: n <= limit, sorted, each within one lease before `latest`; first_time is entry 0's.
void restore_begin(KeyState& state, int64_t latest, int64_t first_time, uint32_t n);
void restore_entry(const KeyState& state, SlidingLogRing ring, uint32_t index, int64_t time, uint32_t holder);

}  // namespace sluice::concurrency
