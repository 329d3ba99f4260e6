#pragma once
// The SVG charts of `meshsim report` (tools/report_html.hpp): plain SVG, one string each, sized
// for the page's 960-pixel column.
#include <string>
#include <vector>

#include "tools/report_sweep.hpp"

namespace meshsim::report {

// Step time of every timed plan, fastest first (`ranked` as ranked_rows gives it).
std::string step_time_svg(const std::vector<const Row*>& ranked);

// Peak memory per GPU of every plan, OOM plans marked, against the hardware's capacity.
std::string memory_svg(const Sweep& s);

// Critical-path breakdown of the five fastest plans.
std::string breakdown_svg(const std::vector<const Row*>& ranked);

}  // namespace meshsim::report
