// Built-in hardware profiles from public figures (ARCHITECTURE.md §3). They are written in the JSON
// schema's human units and read through hardware_from_json, so a built-in is exactly what
// `to_json(profile)` prints and a user can copy one as a starting point for calibration.
//
// Sources:
//  - NVIDIA H100 SXM5 datasheet: dense BF16/FP16 989 TFLOP/s, TF32 494.7 (used for fp32 math),
//    FP64 tensor 67; HBM3 3.35 TB/s, 80 GB. H200 SXM: same compute, HBM3e 4.8 TB/s, 141 GB.
//  - NVIDIA H800 SXM5 (the export variant of H100 SXM5): the same compute and HBM3 (80 GB,
//    3.35 TB/s), NVLink 400 GB/s instead of 900 GB/s — 8 NVLink4 links instead of 18, so the bus
//    bandwidth scales to 8 x 20.6 = 165 GB/s; NVLink SHARP is not assumed.
//  - NVIDIA A100 SXM4 80 GB datasheet: BF16/FP16 312, TF32 156, FP64 tensor 19.5; HBM2e
//    2.039 TB/s.
//  - NCCL bus bandwidth: NVLink4 (18 links x 20.6 GB/s) about 370 GB/s; NVLink SHARP (NVLS)
//    all-reduce about 480 GB/s on 8x H100/H200; NVLink3 (A100) about 230 GB/s, no NVLS.
//  - NICs: one per GPU (8 per node); 400 Gb/s NDR reaches 48 GB/s, 200 Gb/s HDR 24 GB/s.
//  - NCCL latency constants (Simple protocol): base 8.4 us, 3.4 us per NVLink step, 14 us per
//    network step.
//  - Efficiency tables: good BF16 GEMMs reach ~80% of peak when large; FlashAttention-style
//    kernels ~65% forward, ~50% backward; streaming kernels ~85% of HBM bandwidth at >= 100 MB.
//    These are starting points; calibration (validate/) replaces them with measured tables.
#include <map>

#include <nlohmann/json.hpp>

#include "sim/hardware_profile.hpp"

namespace meshsim {
namespace {

using nlohmann::json;

struct Figures {
  double bf16_tflops, fp32_tflops, fp64_tflops;
  double memory_gb, memory_tbps;
  json gemm, attention_fwd, attention_bwd;
  double nvlink_bus_gbps, nvls_bus_gbps, nic_gbps;
};

json profile_json(const std::string& name, const Figures& f) {
  return json{
      {"schema_version", kHardwareSchemaVersion},
      {"name", name},
      {"gpus_per_node", 8},
      {"memory_gb", f.memory_gb},
      {"peak_tflops",
       {{"bf16", f.bf16_tflops},
        {"fp16", f.bf16_tflops},
        {"fp32", f.fp32_tflops},
        {"fp64", f.fp64_tflops}}},
      {"memory_tbps", f.memory_tbps},
      {"launch_overhead_us", 2.0},
      {"compute_efficiency",
       {{"gemm", f.gemm},
        {"attention_fwd", f.attention_fwd},
        {"attention_bwd", f.attention_bwd},
        {"default", json::array({json::array({1e6, 0.5})})}}},
      {"memory_efficiency", json::array({json::array({1e5, 0.2}), json::array({1e6, 0.45}),
                                         json::array({1e7, 0.7}), json::array({1e8, 0.85})})},
      {"comm_interference", 1.0},
      {"network",
       {{"nvlink_bus_gbps", f.nvlink_bus_gbps},
        {"nvls_bus_gbps", f.nvls_bus_gbps},
        {"nic_gbps", f.nic_gbps},
        {"nics_per_node", 8},
        {"base_latency_us", 8.4},
        {"nvlink_step_latency_us", 3.4},
        {"network_step_latency_us", 14.0}}},
  };
}

json table(std::initializer_list<std::pair<double, double>> points) {
  json a = json::array();
  for (const auto& [size, eff] : points) a.push_back(json::array({size, eff}));
  return a;
}

const std::map<std::string, HardwareProfile, std::less<>>& builtins() {
  static const auto profiles = [] {
    const Figures hopper{
        .bf16_tflops = 989,
        .fp32_tflops = 494.7,
        .fp64_tflops = 67,
        .memory_gb = 80,
        .memory_tbps = 3.35,
        .gemm = table({{1e8, 0.25}, {1e10, 0.6}, {1e11, 0.72}, {1e12, 0.8}}),
        .attention_fwd = table({{1e8, 0.2}, {1e10, 0.5}, {1e12, 0.65}}),
        .attention_bwd = table({{1e8, 0.15}, {1e10, 0.38}, {1e12, 0.5}}),
        .nvlink_bus_gbps = 370,
        .nvls_bus_gbps = 480,
        .nic_gbps = 48,
    };
    Figures h200 = hopper;
    h200.memory_gb = 141;
    h200.memory_tbps = 4.8;
    Figures h800 = hopper;
    h800.nvlink_bus_gbps = 165;
    h800.nvls_bus_gbps = 0;
    const Figures ampere{
        .bf16_tflops = 312,
        .fp32_tflops = 156,
        .fp64_tflops = 19.5,
        .memory_gb = 80,
        .memory_tbps = 2.039,
        .gemm = table({{1e8, 0.3}, {1e10, 0.65}, {1e11, 0.75}, {1e12, 0.8}}),
        .attention_fwd = table({{1e8, 0.2}, {1e10, 0.5}, {1e12, 0.65}}),
        .attention_bwd = table({{1e8, 0.15}, {1e10, 0.38}, {1e12, 0.5}}),
        .nvlink_bus_gbps = 230,
        .nvls_bus_gbps = 0,
        .nic_gbps = 24,
    };
    std::map<std::string, HardwareProfile, std::less<>> m;
    for (const auto& [name, figures] :
         {std::pair<std::string, const Figures&>{"h100-sxm", hopper},
          std::pair<std::string, const Figures&>{"h200-sxm", h200},
          std::pair<std::string, const Figures&>{"h800-sxm", h800},
          std::pair<std::string, const Figures&>{"a100-sxm", ampere}}) {
      m.emplace(name, hardware_from_json(profile_json(name, figures), "built-in " + name));
    }
    return m;
  }();
  return profiles;
}

}  // namespace

std::vector<std::string> builtin_hardware_names() {
  return {"h100-sxm", "h200-sxm", "h800-sxm", "a100-sxm"};
}

std::optional<HardwareProfile> builtin_hardware(std::string_view name) {
  const auto& m = builtins();
  const auto it = m.find(name);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

}  // namespace meshsim
