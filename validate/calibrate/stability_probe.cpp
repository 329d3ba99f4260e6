#include "validate/calibrate/stability_probe.hpp"

#include <chrono>
#include <fstream>
#include <sstream>

#include "kernels/cpu/gemm.hpp"
#include "sim/kernel_call.hpp"
#include "validate/cpu/shape_kernels.hpp"

namespace meshsim {

KernelCall reference_kernel() {
  KernelCall call;
  call.kind = KernelKind::gemm;
  call.dtype = DType::fp32;
  call.shape = GemmShape{512, 512, 512};
  return call;
}

StabilityProbe::StabilityProbe(RunWorld& world) : world_(world) {
  kernels::cpu::set_blas_threads(1);
}

double current_load_1min() {
  std::ifstream in("/proc/loadavg");
  std::stringstream text;
  text << in.rdbuf();
  return parse_loadavg(text.str()).value_or(-1.0);
}

void StabilityProbe::checkpoint(const std::string& phase) {
  const KernelCall call = reference_kernel();
  world_.barrier();
  // Warm-up: scratch operands allocated, caches filled; at a probe's first checkpoint for
  // kFirstWarmupSeconds. The first kernels of a freshly launched job can run at half speed for
  // tens of milliseconds, every repeat alike (measured here: a first checkpoint's median 5.18 ms
  // against 2.65 ms at the later ones, each rank's spread 1 %, in 1 of 4 quick calibrations
  // with one warm-up run), which read as drift and refused a quiet machine.
  const auto warm_from = std::chrono::steady_clock::now();
  do {
    run_kernel_on_scratch(call);
  } while (checkpoints_taken_ == 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_from).count() <
               kFirstWarmupSeconds);
  ++checkpoints_taken_;
  std::vector<std::int64_t> ns;
  for (int i = 0; i < kReferenceRepeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run_kernel_on_scratch(call);
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  }
  const auto all = world_.gather(ns);
  if (world_.rank() != 0) return;
  StabilityCheckpoint c;
  c.phase = phase;
  for (const auto& rank : all) {
    auto& seconds = c.reference_s.emplace_back();
    for (std::int64_t t : rank) seconds.push_back(static_cast<double>(t) * 1e-9);
  }
  c.load_1min = current_load_1min();
  checkpoints_.push_back(std::move(c));
}

}  // namespace meshsim
