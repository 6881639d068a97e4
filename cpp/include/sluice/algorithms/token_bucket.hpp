#pragma once

#include "sluice/algorithms/bucket_level.hpp"

// Token bucket: holds up to burst tokens, refilled at limit per window_ms; a new key starts full.
// State (shared with the leaky bucket, bucket_level.hpp): a = time of the last charge (ms),
// b = tokens missing at that time, in units of 1/rate_ms token.
// Its arithmetic is bucket_level's, shared so the two can never drift apart: decide, charge,
// valid_state and usage mean what they mean for every algorithm (see fixed_window.hpp).
namespace sluice::token_bucket {

using bucket_level::admit;
using bucket_level::charge;
using bucket_level::decide;
using bucket_level::usage;
using bucket_level::valid_state;

}  // namespace sluice::token_bucket
