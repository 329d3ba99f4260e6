// Built-in hardware profiles from public figures (ARCHITECTURE.md §3). They are written in the JSON
// schema's human units and read through hardware_from_json, so a built-in is exactly what
// `to_json(profile)` prints and a user can copy one as a starting point for calibration. Every
// profile's "sources" field names where each figure comes from (`meshsim step --hardware NAME
// --json` prints it under "hardware").
#include <map>

#include <nlohmann/json.hpp>

#include "sim/hardware_profile.hpp"

namespace meshsim {
namespace {

using nlohmann::json;

json table(std::initializer_list<std::pair<double, double>> points) {
  json a = json::array();
  for (const auto& [size, eff] : points) a.push_back(json::array({size, eff}));
  return a;
}

// An attention kernel family's tables: the size dependence of the A100 FlashAttention-2 curve
// (20 % / 50 % / 65 % forward at 1e8 / 1e10 / 1e12 FLOPs per call, backward at 0.77 of forward)
// scaled so that large calls reach `fwd_large` forward and `bwd_large` backward.
json family(double fwd_large, double bwd_large) {
  const double f = fwd_large / 0.65, b = bwd_large / 0.5;
  return json{{"attention_fwd", table({{1e8, 0.2 * f}, {1e10, 0.5 * f}, {1e12, 0.65 * f}})},
              {"attention_bwd", table({{1e8, 0.15 * b}, {1e10, 0.38 * b}, {1e12, 0.5 * b}})}};
}

const char* const kGemmSource =
    "Starting point, not a measurement: large dense BF16/FP16 GEMMs at 80 % of peak (small ones "
    "launch- and wave-bound); Zero Bubble's profiled weight-gradient passes on A100 (Qi et al. "
    "2024, Table 6) agree within 5 %. `meshsim calibrate` replaces it with measured tables.";
const char* const kMemorySource =
    "Starting point: streaming kernels at 85 % of HBM bandwidth from 100 MB (STREAM-like copies "
    "on A100/H100 reach 80-90 %); `meshsim calibrate` measures it.";
const char* const kNcclLatency =
    "NCCL's Simple-protocol latency model (src/graph/tuning.cc): base 8.4 us, 3.4 us per NVLink "
    "step, 14 us per network step.";

struct Figures {
  double bf16_tflops, fp32_tflops, fp64_tflops;
  double memory_gb, memory_tbps;
  json gemm, attention_kernels;
  std::string attention_kernel;
  double nvlink_bus_gbps, nvls_bus_gbps, nic_gbps;
  json sources;
};

json profile_json(const std::string& name, const Figures& f) {
  const json& active = f.attention_kernels.at(f.attention_kernel);
  json sources = f.sources;
  sources["compute_efficiency.gemm"] = kGemmSource;
  sources["memory_efficiency"] = kMemorySource;
  sources["network.latency"] = kNcclLatency;
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
        {"attention_fwd", active.at("attention_fwd")},
        {"attention_bwd", active.at("attention_bwd")},
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
      {"attention_kernels", f.attention_kernels},
      {"attention_kernel", f.attention_kernel},
      {"sources", std::move(sources)},
  };
}

Figures hopper() {
  return Figures{
      .bf16_tflops = 989,
      .fp32_tflops = 494.7,
      .fp64_tflops = 67,
      .memory_gb = 80,
      .memory_tbps = 3.35,
      .gemm = table({{1e8, 0.25}, {1e10, 0.6}, {1e11, 0.72}, {1e12, 0.8}}),
      // FlashAttention-2 on H100: "only 35 % utilization" (Shah et al. 2024, FlashAttention-3,
      // arXiv 2407.08608, abstract); backward at A100's backward/forward ratio (0.77).
      // FlashAttention-3: up to 740 TFLOP/s FP16 forward = 75 % (same abstract); backward
      // 1.5-1.75x FA2's (ibid.), 1.6 x 27 % = 43 %. cuDNN's fused attention (Transformer
      // Engine's FusedAttention): about 580 TFLOP/s forward = 59 % in the same paper's forward
      // benchmark (head dim 256, seq 2k-16k); backward at FA3's backward/forward ratio (0.57).
      .attention_kernels = {{"fa2", family(0.35, 0.27)},
                            {"fa3", family(0.75, 0.43)},
                            {"cudnn", family(0.59, 0.34)}},
      .attention_kernel = "fa2",
      .nvlink_bus_gbps = 370,
      .nvls_bus_gbps = 480,
      .nic_gbps = 48,
      .sources =
          {{"peak_tflops",
            "NVIDIA H100 SXM5 datasheet: dense BF16/FP16 989 TFLOP/s, TF32 494.7 (fp32 math), "
            "FP64 tensor 67"},
           {"memory", "NVIDIA H100 SXM5 datasheet: 80 GB HBM3, 3.35 TB/s"},
           {"attention_kernels",
            "fa2: FlashAttention-2 at 35 % of H100 peak; fa3: FlashAttention-3 at 75 % forward; "
            "cudnn: cuDNN fused attention at 59 % forward (Shah et al. 2024, arXiv 2407.08608, "
            "abstract and forward benchmark); backward from the forward by the ratios in "
            "sim/builtin_hardware.cpp; default fa2, the flash kernel of PyTorch SDPA"},
           {"network.nvlink_bus_gbps",
            "NCCL all-reduce bus bandwidth about 370 GB/s on 8x H100 SXM (nccl-tests), 82 % of "
            "NVLink4's 450 GB/s per direction (18 links x 25 GB/s)"},
           {"network.nvls_bus_gbps", "NVLink SHARP all-reduce about 480 GB/s on 8x H100"},
           {"network.nic_gbps", "one 400 Gb/s NDR NIC per GPU, about 48 GB/s achieved"}},
  };
}

Figures ampere() {
  return Figures{
      .bf16_tflops = 312,
      .fp32_tflops = 156,
      .fp64_tflops = 19.5,
      .memory_gb = 80,
      .memory_tbps = 2.039,
      .gemm = table({{1e8, 0.3}, {1e10, 0.65}, {1e11, 0.75}, {1e12, 0.8}}),
      // FlashAttention-2 on A100: 50-73 % of peak over its benchmarks (Dao 2023, arXiv
      // 2307.08691, abstract): 65 % forward and 50 % backward for large calls, inside that range.
      .attention_kernels = {{"fa2", family(0.65, 0.5)}},
      .attention_kernel = "fa2",
      .nvlink_bus_gbps = 230,
      .nvls_bus_gbps = 0,
      .nic_gbps = 24,
      .sources =
          {{"peak_tflops",
            "NVIDIA A100 SXM4 80 GB datasheet: BF16/FP16 312 TFLOP/s, TF32 156, FP64 tensor 19.5"},
           {"memory", "NVIDIA A100 SXM4 80 GB datasheet: 80 GB HBM2e, 2.039 TB/s"},
           {"attention_kernels",
            "fa2: FlashAttention-2, 50-73 % of A100 peak (Dao 2023, arXiv 2307.08691): 65 % "
            "forward, 50 % backward for large calls"},
           {"network.nvlink_bus_gbps",
            "NVLink3, 12 links: NCCL all-reduce bus bandwidth about 230 GB/s on 8x A100 "
            "(nccl-tests); no NVLink SHARP"},
           {"network.nic_gbps", "one 200 Gb/s HDR NIC per GPU, about 24 GB/s achieved"}},
  };
}

const std::map<std::string, HardwareProfile, std::less<>>& builtins() {
  static const auto profiles = [] {
    Figures h200 = hopper();
    h200.memory_gb = 141;
    h200.memory_tbps = 4.8;
    h200.sources["memory"] = "NVIDIA H200 SXM datasheet: 141 GB HBM3e, 4.8 TB/s";
    h200.sources["peak_tflops"] = "NVIDIA H200 SXM datasheet: the H100 SXM5's tensor throughput";
    Figures h800 = hopper();
    h800.nvlink_bus_gbps = 165;
    h800.nvls_bus_gbps = 0;
    h800.sources["peak_tflops"] =
        "NVIDIA H800 SXM5 (export variant of H100 SXM5): the same compute and HBM3";
    h800.sources["network.nvlink_bus_gbps"] =
        "H800 NVLink 400 GB/s bidirectional = 8 NVLink4 links instead of 18: 200 GB/s per "
        "direction, at H100's 82 % achieved bus bandwidth 165 GB/s";
    h800.sources["network.nvls_bus_gbps"] = "NVLink SHARP not assumed on H800 (0)";
    std::map<std::string, HardwareProfile, std::less<>> m;
    for (const auto& [name, figures] : {std::pair<std::string, Figures>{"h100-sxm", hopper()},
                                        std::pair<std::string, Figures>{"h200-sxm", h200},
                                        std::pair<std::string, Figures>{"h800-sxm", h800},
                                        std::pair<std::string, Figures>{"a100-sxm", ampere()}}) {
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
