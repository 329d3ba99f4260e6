#pragma once
// A profiled step's GPU kernels as a timeline meshsim can set beside its simulation: a Chrome
// trace in the layout ChromeTraceRecorder writes (one process for the profiled rank, a thread per
// CUDA stream, times from the first kernel's start, each kernel's category and matched operator
// in its args) and the kernel time per category.
#include <array>

#include <nlohmann/json.hpp>

#include "traces/kineto_ops.hpp"

namespace meshsim {

inline constexpr int kKinetoCategoryCount = 5;
using CategorySeconds = std::array<double, kKinetoCategoryCount>;  // by KinetoCategory

struct KinetoTimeline {
  nlohmann::json trace;       // {"traceEvents", "displayTimeUnit", "otherData"}
  CategorySeconds seconds{};  // summed kernel durations
  double span_s = 0;          // first kernel start to last kernel end
};

KinetoTimeline kineto_timeline(const KinetoTrace& trace, std::string_view origin);

}  // namespace meshsim
