#pragma once
// The Pareto charts of `meshsim report` (tools/report_html.hpp): which plans no other plan beats
// on both axes.
//  - Step time vs peak memory per GPU: every timed plan a dot; the frontier (plans with no other
//    plan both faster and smaller, walked by increasing memory keeping each new fastest) drawn as
//    a line with its plans labelled; the GPU's capacity as a dashed line.
//  - Step time vs GPUs, for several sweeps of one model at different GPU counts: each sweep's
//    timed plans as dots over its GPU count, its fastest plan marked, and the frontier of fastest
//    plans (a larger count is on it only when it is faster than every smaller count's best).
#include <string>
#include <vector>

#include "tools/report_sweep.hpp"

namespace meshsim::report {

// Indices into `rows` of the memory/step-time frontier, by increasing memory (timed rows only).
std::vector<std::size_t> memory_frontier(const std::vector<Row>& rows);

std::string pareto_memory_svg(const Sweep& s);

// `sweeps` in any order; the chart orders them by GPU count.
std::string pareto_gpus_svg(const std::vector<Sweep>& sweeps);

}  // namespace meshsim::report
