// The exported C ABI of the replay's Logpush reader (sluice/logpush_scan.hpp; declared in sluice_abi.h):
// areas in linear memory grown to the largest batch so far, and one call per batch.
#include <cstdint>
#include <cstdlib>

#include "sluice/logpush_scan.hpp"
#include "sluice_abi.h"

#define SLUICE_EXPORT(name) extern "C" __attribute__((export_name(#name)))

namespace {

// The batch's bytes, its lines' start and end offsets, the verdicts and spans, the headers; the first
// five words are what sluice_logpush_areas() points at.
struct Areas {
  uint32_t bytes;
  uint32_t starts;
  uint32_t ends;
  uint32_t spans;
  uint32_t headers;
};
Areas g_areas = {};
uint8_t* g_bytes = nullptr;
int32_t* g_starts = nullptr;
int32_t* g_ends = nullptr;
sluice::LogpushSpans* g_spans = nullptr;
sluice::LogpushHeader* g_headers = nullptr;
uint32_t g_byte_capacity = 0;
uint32_t g_line_capacity = 0;

uint32_t address(const void* p) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)); }

template <typename T>
bool grow(T*& area, uint32_t count) {
  std::free(area);
  area = static_cast<T*>(std::malloc(static_cast<size_t>(count) * sizeof(T)));
  return area != nullptr;
}

}  // namespace

SLUICE_EXPORT(sluice_logpush_reserve) int32_t sluice_logpush_reserve(uint32_t bytes, uint32_t lines) {
  if (bytes > g_byte_capacity) {
    if (!grow(g_bytes, bytes)) {
      g_byte_capacity = 0;
      return 0;
    }
    g_byte_capacity = bytes;
  }
  if (lines > g_line_capacity) {
    if (lines > (1u << 24) || !grow(g_starts, lines) || !grow(g_ends, lines) || !grow(g_spans, lines) ||
        !grow(g_headers, lines * SLUICE_LOGPUSH_HEADERS_PER_LINE)) {
      g_line_capacity = 0;
      return 0;
    }
    g_line_capacity = lines;
  }
  g_areas = {address(g_bytes), address(g_starts), address(g_ends), address(g_spans), address(g_headers)};
  return 1;
}

SLUICE_EXPORT(sluice_logpush_areas) uint32_t sluice_logpush_areas(void) { return address(&g_areas); }

SLUICE_EXPORT(sluice_logpush_scan) int32_t sluice_logpush_scan(uint32_t count) {
  if (count > g_line_capacity) return -1;
  for (uint32_t i = 0; i < count; i++) {
    if (g_starts[i] < 0 || g_ends[i] < g_starts[i] || static_cast<uint32_t>(g_ends[i]) > g_byte_capacity) return -1;
  }
  return static_cast<int32_t>(sluice::scan_logpush_lines(g_bytes, g_starts, g_ends, count, g_spans, g_headers,
                                                         count * SLUICE_LOGPUSH_HEADERS_PER_LINE));
}

#ifdef SLUICE_FUZZ_HOOKS
// The same areas on real pointers, for the native fuzz target (fuzz/).
extern "C" uint8_t* sluice_fuzz_logpush_bytes(void) { return g_bytes; }
extern "C" int32_t* sluice_fuzz_logpush_starts(void) { return g_starts; }
extern "C" int32_t* sluice_fuzz_logpush_ends(void) { return g_ends; }
extern "C" sluice::LogpushSpans* sluice_fuzz_logpush_spans(void) { return g_spans; }
extern "C" sluice::LogpushHeader* sluice_fuzz_logpush_headers(void) { return g_headers; }
#endif
