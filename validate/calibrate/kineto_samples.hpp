#pragma once
// Calibration samples from a profiled training step (a PyTorch profiler / Kineto trace, read by
// traces/kineto_trace.hpp and matched by traces/kineto_ops.hpp): every GPU kernel whose
// launching operator recorded shapes becomes a compute sample (its kernel duration) or a
// communication sample (an NCCL kernel's duration: it includes any wait for the slowest peer, so
// its bandwidth is a lower bound). The launch overhead is the median gap between consecutive
// kernels of one stream among gaps under kMaxLaunchGapUs (longer gaps are the host or a
// dependency waiting, not a launch). Collective placement: the ranks of "Process Group Ranks"
// when recorded, else a group that fits in one node of a world that fits in one node; other
// collectives are left out with that reason.
#include <string>
#include <vector>

#include "traces/kineto_trace.hpp"
#include "validate/calibrate/profile_fit.hpp"

namespace meshsim {

inline constexpr double kMaxLaunchGapUs = 100.0;

struct KinetoUnmatched {
  std::string category;  // KinetoCategory's name
  std::string reason;
  int kernels = 0;
  double seconds = 0;
  std::string example;  // one kernel name
};

struct KinetoSamples {
  CalibrationSamples samples;
  int kernels = 0;                         // GPU kernels in the trace
  double kernel_seconds = 0;               // their total duration
  std::vector<KinetoUnmatched> unmatched;  // by (category, reason), most time first
};

KinetoSamples kineto_calibration_samples(const KinetoTrace& trace, int gpus_per_node);

}  // namespace meshsim
