#include "validate/calibrate/stability_probe.hpp"

#include <chrono>
#include <fstream>
#include <sstream>

#include "sim/kernel_call.hpp"
#include "validate/cpu/shape_kernels.hpp"

namespace meshsim {
namespace {

KernelCall reference_kernel() {
  KernelCall call;
  call.kind = KernelKind::gemm;
  call.dtype = DType::fp32;
  call.shape = GemmShape{512, 512, 512};
  return call;
}

}  // namespace

double current_load_1min() {
  std::ifstream in("/proc/loadavg");
  std::stringstream text;
  text << in.rdbuf();
  return parse_loadavg(text.str()).value_or(-1.0);
}

void StabilityProbe::checkpoint(const std::string& phase) {
  const KernelCall call = reference_kernel();
  world_.barrier();
  run_kernel_on_scratch(call);  // warm-up: scratch operands allocated, caches filled
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
    for (std::int64_t t : rank) c.reference_s.push_back(static_cast<double>(t) * 1e-9);
  }
  c.load_1min = current_load_1min();
  checkpoints_.push_back(std::move(c));
}

}  // namespace meshsim
