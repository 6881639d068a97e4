#pragma once

// SLUICE_HOT_INLINE marks a function on the single check's path (sluice_check_one -> Limiter::check_one
// -> dispatch::decide_and_charge -> the algorithm's admit) that the wasm build must inline into its caller. Clang's inliner left
// them as calls even under LTO, and on one hot key the calls, their Decision passed through the shadow
// stack and its re-reads cost 2-4 ns of the 14-22 ns the module spends per decision (measured with
// sluice_check_one called directly, interleaved A/B builds). Each algorithm's admit (decide and charge
// from one view of the key) is forced too: 0.8-2 ns less per decision for 560 bytes. Native builds (tests,
// fuzzing) keep ordinary calls: GCC warns about always_inline on a function defined in another
// translation unit.
#if defined(__EMSCRIPTEN__)
#define SLUICE_HOT_INLINE __attribute__((always_inline))
#else
#define SLUICE_HOT_INLINE
#endif
