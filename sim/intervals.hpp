#pragma once
// Time intervals [start, end) on one rank: the union, length and difference the per-rank
// breakdowns (simulated metrics, measured report, step breakdown) are computed from.
#include <utility>
#include <vector>

#include "sim/time.hpp"

namespace meshsim {

using Interval = std::pair<Nanos, Nanos>;

// Sorted, non-overlapping union; empty intervals dropped.
std::vector<Interval> merge_intervals(std::vector<Interval> v);
// Total length of merged intervals.
Nanos total_length(const std::vector<Interval>& merged);
// The parts of `a` not covered by `b` (both merged); the result is merged.
std::vector<Interval> subtract_intervals(const std::vector<Interval>& a,
                                         const std::vector<Interval>& b);

}  // namespace meshsim
