#include "sim/compute_model.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

// Efficiency table of a kernel: an FP8 GEMM's "gemm_fp8" when the profile has one (FP8 tensor
// cores reach a different share of their peak than BF16's), else its kind with its fused function
// ("gemm.gelu", a calibrated profile's), else its kind's, else "default", else none (efficiency 1).
double compute_efficiency(const HardwareProfile& hw, const KernelCall& call, double flops) {
  auto it = hw.compute_efficiency.end();
  if (call.kind == KernelKind::gemm && call.quant != QuantFormat::none &&
      !quant_uses_fp4(call.quant)) {
    it = hw.compute_efficiency.find(std::string(kGemmFp8EfficiencyKey));
  }
  if (it == hw.compute_efficiency.end() && call.fn != ElementwiseFn::none &&
      !hw.compute_efficiency.empty()) {
    it = hw.compute_efficiency.find(efficiency_key(call));
  }
  if (it == hw.compute_efficiency.end()) {
    it = hw.compute_efficiency.find(std::string(to_string(call.kind)));
  }
  if (it == hw.compute_efficiency.end()) return default_compute_efficiency(hw, flops);
  return interpolate_efficiency(it->second, flops);
}

// The precision the arithmetic runs at. GEMMs and attention blocks run on tensor cores at the
// storage dtype's peak; the vector kernels (merge, accumulate, elementwise, loss, optimizer) load
// their operands into fp32 registers, so they use the fp32 figure (fp64 stays fp64).
DType math_dtype(const KernelCall& call) {
  switch (call.kind) {
    case KernelKind::gemm:
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd:
      return call.dtype;
    default:
      return call.dtype == DType::fp64 ? DType::fp64 : DType::fp32;
  }
}

// The peak the call's arithmetic runs at: a quantized GEMM on the FP8 or FP4 tensor cores
// (HardwareProfile::fp8_flops / fp4_flops, 0 when the GPU has none), else math_dtype's. The
// quantize (a copy) is memory-bound and has no FLOPs.
double math_peak(const HardwareProfile& hw, const KernelCall& call) {
  if (call.kind == KernelKind::gemm && call.quant != QuantFormat::none) {
    return quant_uses_fp4(call.quant) ? hw.fp4_flops : hw.fp8_flops;
  }
  return hw.peak_flops[static_cast<std::size_t>(math_dtype(call))];
}

}  // namespace

std::string efficiency_key(const KernelCall& call) {
  if (call.fn == ElementwiseFn::none) return std::string(to_string(call.kind));
  return fmt::format("{}.{}", to_string(call.kind), to_string(call.fn));
}

namespace {

// The roofline at a given peak: launch overhead + max(FLOPs / (peak x efficiency), bytes /
// (memory bandwidth x memory efficiency at that size)). `math` names the peak in errors.
double roofline_at_peak(const HardwareProfile& hw, double flops, double bytes, double peak,
                        double efficiency, std::string_view math) {
  double math_s = 0;
  if (flops > 0) {
    const double rate = peak * efficiency;
    MESHSIM_CHECK(rate > 0,
                  fmt::format("hardware profile '{}' has no {} compute rate", hw.name, math));
    math_s = flops / rate;
  }
  double memory = 0;
  if (bytes > 0) {
    const double rate = hw.memory_bw * interpolate_efficiency(hw.memory_efficiency, bytes);
    MESHSIM_CHECK(rate > 0, fmt::format("hardware profile '{}' has no memory bandwidth", hw.name));
    memory = bytes / rate;
  }
  return hw.launch_overhead + std::max(math_s, memory);
}

}  // namespace

double compute_seconds(const HardwareProfile& hw, const KernelCall& call) {
  const double flops = kernel_flops(call);
  double peak = 0;
  if (flops > 0) {
    peak = math_peak(hw, call);
    if (peak <= 0 && call.quant != QuantFormat::none) {
      throw InputError(
          fmt::format("hardware profile '{}' has no {} tensor cores (peak_tflops.{}) "
                      "for a {} GEMM",
                      hw.name, quant_uses_fp4(call.quant) ? "FP4" : "FP8",
                      quant_uses_fp4(call.quant) ? "fp4" : "fp8", to_string(call.quant)));
    }
  }
  // A GEMM launched on a share of the SMs (KernelCall::sm_share) runs its math at that share of
  // the rate the efficiency model gives its shape on the whole GPU.
  return roofline_at_peak(hw, flops, kernel_bytes(call), peak,
                          flops > 0 ? compute_efficiency(hw, call, flops) * call.sm_share : 1.0,
                          to_string(math_dtype(call)));
}

double roofline_seconds(const HardwareProfile& hw, double flops, double bytes, DType math,
                        double efficiency) {
  return roofline_at_peak(hw, flops, bytes, hw.peak_flops[static_cast<std::size_t>(math)],
                          efficiency, to_string(math));
}

double default_compute_efficiency(const HardwareProfile& hw, double flops) {
  const auto it = hw.compute_efficiency.find("default");
  return it == hw.compute_efficiency.end() ? 1.0 : interpolate_efficiency(it->second, flops);
}

HardwareProfile select_attention_kernel(HardwareProfile profile, std::string_view family,
                                        std::string_view flag) {
  const auto it = profile.attention_kernels.find(std::string(family));
  if (it == profile.attention_kernels.end()) {
    std::string have;
    for (const auto& [name, tables] : profile.attention_kernels) {
      have += fmt::format("{}{}", have.empty() ? "" : ", ", name);
    }
    throw InputError(
        fmt::format("{} {}: hardware profile '{}' has no such attention kernel family "
                    "(it has: {})",
                    flag, family, profile.name, have.empty() ? "none" : have));
  }
  profile.compute_efficiency["attention_fwd"] = it->second.fwd;
  profile.compute_efficiency["attention_bwd"] = it->second.bwd;
  profile.attention_kernel = it->first;
  return profile;
}

Nanos compute_time(const HardwareProfile& hw, const KernelCall& call) {
  return seconds_to_ns(compute_seconds(hw, call), [&] {
    return fmt::format(
        "a {} kernel in {} with the hardware profile's peak_tflops.{} {:g} and "
        "memory_tbps {:g}",
        efficiency_key(call), to_string(call.dtype), to_string(call.dtype),
        hw.peak_flops[static_cast<std::size_t>(call.dtype)] / 1e12, hw.memory_bw / 1e12);
  });
}

}  // namespace meshsim
