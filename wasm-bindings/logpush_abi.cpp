// The exported C ABI of the replay's Logpush reader (sluice/logpush_scan.hpp; declared in sluice_abi.h):
// areas in linear memory grown to the largest batch so far, and one call per batch.
#include <cstdint>
#include <cstdlib>

#include "sluice/logpush_scan.hpp"
#include "sluice_abi.h"

#define SLUICE_EXPORT(name) extern "C" __attribute__((export_name(#name)))

namespace {

// The batch's bytes, its lines' start and end offsets, the verdicts and spans, the headers, the
// strings the last batch put into the string table and how many: what sluice_logpush_areas() points at.
struct Areas {
  uint32_t bytes;
  uint32_t starts;
  uint32_t ends;
  uint32_t spans;
  uint32_t headers;
  uint32_t fresh;
  uint32_t fresh_count;
};
Areas g_areas = {};
sluice::LogpushStrings* g_strings = nullptr;
sluice::LogpushFresh* g_fresh = nullptr;
uint8_t* g_bytes = nullptr;
int32_t* g_starts = nullptr;
int32_t* g_ends = nullptr;
sluice::LogpushSpans* g_spans = nullptr;
sluice::LogpushHeader* g_headers = nullptr;
uint32_t g_byte_capacity = 0;
uint32_t g_line_capacity = 0;

// A record's strings: address, method, URI, host and a name and a value per header.
constexpr uint32_t kFreshPerLine = 4 + 2 * SLUICE_LOGPUSH_HEADERS_PER_LINE;

uint32_t address(const void* p) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)); }

template <typename T>
bool grow(T*& area, uint32_t count) {
  std::free(area);
  area = static_cast<T*>(std::malloc(static_cast<size_t>(count) * sizeof(T)));
  return area != nullptr;
}

}  // namespace

SLUICE_EXPORT(sluice_logpush_abi_version) uint32_t sluice_logpush_abi_version(void) { return SLUICE_ABI_VERSION; }

SLUICE_EXPORT(sluice_logpush_reserve) int32_t sluice_logpush_reserve(uint32_t bytes, uint32_t lines) {
  if (bytes > g_byte_capacity) {
    if (!grow(g_bytes, bytes)) {
      g_byte_capacity = 0;
      return 0;
    }
    g_byte_capacity = bytes;
  }
  if (g_strings == nullptr) {
    g_strings = static_cast<sluice::LogpushStrings*>(std::calloc(1, sizeof(sluice::LogpushStrings)));
    if (g_strings == nullptr) return 0;
  }
  if (lines > g_line_capacity) {
    if (lines > (1u << 24) || !grow(g_starts, lines) || !grow(g_ends, lines) || !grow(g_spans, lines) ||
        !grow(g_headers, lines * SLUICE_LOGPUSH_HEADERS_PER_LINE) || !grow(g_fresh, lines * kFreshPerLine)) {
      g_line_capacity = 0;
      return 0;
    }
    g_line_capacity = lines;
  }
  g_areas = {address(g_bytes), address(g_starts), address(g_ends), address(g_spans), address(g_headers), address(g_fresh), 0};
  return 1;
}

SLUICE_EXPORT(sluice_logpush_areas) uint32_t sluice_logpush_areas(void) { return address(&g_areas); }

SLUICE_EXPORT(sluice_logpush_scan) int32_t sluice_logpush_scan(uint32_t count) {
  if (count > g_line_capacity) return -1;
  for (uint32_t i = 0; i < count; i++) {
    if (g_starts[i] < 0 || g_ends[i] < g_starts[i] || static_cast<uint32_t>(g_ends[i]) > g_byte_capacity) return -1;
  }
  sluice::LogpushFreshList fresh = {g_fresh, count * kFreshPerLine, 0};
  const uint32_t headers = sluice::scan_logpush_lines(g_bytes, g_starts, g_ends, count, g_spans, g_headers,
                                                      count * SLUICE_LOGPUSH_HEADERS_PER_LINE, g_strings, &fresh);
  g_areas.fresh_count = fresh.count;
  return static_cast<int32_t>(headers);
}

#ifdef SLUICE_FUZZ_HOOKS
// The same areas on real pointers, for the native fuzz target (fuzz/).
extern "C" uint8_t* sluice_fuzz_logpush_bytes(void) { return g_bytes; }
extern "C" int32_t* sluice_fuzz_logpush_starts(void) { return g_starts; }
extern "C" int32_t* sluice_fuzz_logpush_ends(void) { return g_ends; }
extern "C" sluice::LogpushSpans* sluice_fuzz_logpush_spans(void) { return g_spans; }
extern "C" sluice::LogpushHeader* sluice_fuzz_logpush_headers(void) { return g_headers; }
extern "C" sluice::LogpushFresh* sluice_fuzz_logpush_fresh(void) { return g_fresh; }
extern "C" uint32_t sluice_fuzz_logpush_fresh_count(void) { return g_areas.fresh_count; }
extern "C" const sluice::LogpushStrings* sluice_fuzz_logpush_strings(void) { return g_strings; }
#endif
