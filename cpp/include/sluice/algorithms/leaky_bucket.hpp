#pragma once

#include "sluice/algorithms/bucket_level.hpp"

// Leaky bucket as a meter: a level that rises by the cost of each admitted request and drains at
// limit per window_ms, up to burst. It makes exactly the token bucket's decisions (a full bucket of
// tokens is an empty meter); both exist because users know them under both names.
// State: a = time of the last charge (ms), b = level at that time, in units of 1/rate_ms.
// Its arithmetic is bucket_level's, shared so the two can never drift apart: decide, charge,
// valid_state and usage mean what they mean for every algorithm (see fixed_window.hpp).
namespace sluice::leaky_bucket {

using bucket_level::admit;
using bucket_level::charge;
using bucket_level::decide;
using bucket_level::usage;
using bucket_level::valid_state;

}  // namespace sluice::leaky_bucket
