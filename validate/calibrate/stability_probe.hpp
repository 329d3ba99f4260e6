#pragma once
// The timing side of the stability check (stability.hpp): the reference kernel — a 512 x 512 x
// 512 fp32 GEMM on scratch operands (kernels/cpu, one BLAS thread, as the calibration's GEMMs) —
// run by every rank at once after a barrier, a warm-up (kFirstWarmupSeconds at the first
// checkpoint, else one run) then kReferenceRepeats timed repeats (20: quartiles of one rank's
// repeats are then the 5th and 15th); rank 0 gathers every rank's times and reads the load average.
#include <string>
#include <vector>

#include "sim/kernel_call.hpp"
#include "validate/calibrate/stability.hpp"
#include "validate/run/run_world.hpp"

namespace meshsim {

inline constexpr int kReferenceRepeats = 20;
inline constexpr double kFirstWarmupSeconds = 0.25;

class StabilityProbe {
 public:
  // Sets OpenBLAS to one thread (the reference's definition): a probe may read before any
  // kernel runner has (its pthread build otherwise uses every core).
  explicit StabilityProbe(RunWorld& world);
  // Collective over the world: one checkpoint named `phase`.
  void checkpoint(const std::string& phase);
  // Rank 0: every checkpoint so far (others: empty).
  const std::vector<StabilityCheckpoint>& checkpoints() const { return checkpoints_; }
  void clear() { checkpoints_.clear(); }

 private:
  RunWorld& world_;
  std::vector<StabilityCheckpoint> checkpoints_;
  int checkpoints_taken_ = 0;  // on this rank, cleared or not (the first warms up longer)
};

// The reference kernel: a 512 x 512 x 512 fp32 GEMM (run on scratch operands, one BLAS thread).
KernelCall reference_kernel();

// The 1-minute load average of this machine (/proc/loadavg); -1 when unreadable.
double current_load_1min();

}  // namespace meshsim
