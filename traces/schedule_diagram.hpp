#pragma once
// Schedule diagrams in the style of the pipeline papers: ranks as rows, time as x, compute ops as
// boxes colored by what they compute (forward, input gradient, weight gradient, full backward;
// lighter for a rank's second chunk) and labeled with their microbatch.
#include <string>

#include "sim/program.hpp"
#include "sim/timeline.hpp"

namespace meshsim {

// A self-contained SVG document.
std::string schedule_svg(const Program& program, const Timeline& timeline);
// The same picture for a terminal, `width` columns of time per rank.
std::string schedule_text(const Program& program, const Timeline& timeline, int width);

}  // namespace meshsim
