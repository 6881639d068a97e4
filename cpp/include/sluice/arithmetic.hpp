#pragma once
#include <cstdint>

namespace sluice::detail {

// Integer helpers shared by the algorithms. Every caller keeps its operands non-negative and below
// 2^62 (make_rule keeps every product of a count and a time below 2^61), so none of these can overflow.
inline int64_t ceil_div(int64_t numerator, int64_t denominator) {
  return numerator <= 0 ? 0 : (numerator + denominator - 1) / denominator;
}
inline int64_t floor_div(int64_t numerator, int64_t denominator) {
  return numerator <= 0 ? 0 : numerator / denominator;
}
inline int64_t max64(int64_t x, int64_t y) { return x > y ? x : y; }
inline int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }

}  // namespace sluice::detail
