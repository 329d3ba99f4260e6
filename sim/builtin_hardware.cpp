// Built-in hardware profiles from public figures (ARCHITECTURE.md §3). They are written in the JSON
// schema's human units and read through hardware_from_json, so a built-in is exactly what
// `to_json(profile)` prints and a user can copy one as a starting point for calibration. Every
// profile's "sources" field names where each figure comes from (`meshsim step --hardware NAME
// --json` prints it under "hardware").
#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/builtin_host_figures.hpp"
#include "sim/hardware_profile.hpp"

namespace meshsim {
namespace {

using builtin::kAssumedHostSource;
using builtin::kDgxH100HostOpUs;
using builtin::kDgxH100HostSource;
using nlohmann::json;

json table(std::initializer_list<std::pair<double, double>> points) {
  json a = json::array();
  for (const auto& [size, eff] : points) a.push_back(json::array({size, eff}));
  return a;
}

// An efficiency table with every efficiency multiplied by `factor` (at most 1).
json scaled(const json& t, double factor) {
  json a = json::array();
  for (const auto& p : t) {
    a.push_back(json::array({p[0], std::min(1.0, p[1].get<double>() * factor)}));
  }
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

// GEMM efficiency: one shape curve per GPU family (large dense BF16 GEMMs at 80 % of peak on A100,
// small ones launch- and wave-bound), scaled by the GPU's best-shape matmul efficiency relative to
// A100's. That efficiency is the "Maximum Achievable Matmul FLOPS" (MAMF) of stas00/ml-engineering
// (compute/accelerator/README.md, BF16 and FP8 tables: the best shape's mean of 100 iterations
// over a shape sweep, as a share of the datasheet peak): A100 SXM 86.9 %. A GPU's BF16 and FP8
// figures give its "gemm" and "gemm_fp8" tables.
constexpr double kMamfA100 = 0.869;
const char* const kMamfSource =
    "stas00/ml-engineering compute/accelerator/README.md, Maximum Achievable Matmul FLOPS "
    "comparison table";

std::string gemm_source(const std::string& name, double mamf, std::string_view dtype) {
  return fmt::format(
      "Starting point, not a measurement: the GPU family's shape curve (large dense BF16 GEMMs at "
      "80 % of peak, small ones launch- and wave-bound; on A100 Zero Bubble's profiled "
      "weight-gradient passes, Qi et al. 2024 Table 6, agree within 5 %) scaled by {}'s "
      "best-shape {} matmul efficiency, {:.1f} %, against A100 SXM's BF16 {:.1f} % ({}). `meshsim "
      "calibrate` replaces it with measured tables (without gemm_fp8: FP8 GEMMs then use gemm).",
      name, dtype, 100 * mamf, 100 * kMamfA100, kMamfSource);
}
const char* const kMemorySource =
    "Starting point: streaming kernels at 85 % of HBM bandwidth from 100 MB (STREAM-like copies "
    "on A100/H100 reach 80-90 %); `meshsim calibrate` measures it.";
// Every built-in's comm_interference: arXiv 2507.03114's average slow-down of compute overlapped
// with communication, 18.9 %, a cross-GPU average (no per-GPU figure is given) measured on A100,
// H100, MI250 and MI210; the newer parts (H200, H800, B200, B300, GB200/GB300, MI300X) carry it
// as an assumption until calibration measures it.
constexpr double kCommInterference = 1.189;
const char* const kInterferenceSource =
    "Cross-GPU average, assumed for this GPU: computation overlapped with communication runs on "
    "average 18.9 % slower than alone (max 40 %) over GPT and LLaMA training measured on A100, "
    "H100, MI250 and MI210 (arXiv 2507.03114, Characterizing Compute-Communication Overlap in "
    "GPU-Accelerated Distributed Deep Learning, abstract; no per-GPU figure): the NCCL kernels "
    "take SMs and memory bandwidth from the kernels beside them. Newer GPUs carry the average as "
    "an assumption; `meshsim calibrate` measures it.";
const char* const kNcclLatency =
    "NCCL's Simple-protocol latency model (src/graph/tuning.cc): base 8.4 us, 3.4 us per NVLink "
    "step, 14 us per network step; collective_model nccl: NCCL's protocol choice over LL, LL128 "
    "and Simple with its per-protocol figures, the ring's NVLink steps at NVLink latency, NVLS "
    "at 23 us (same file, NCCL 2.19-2.21; LL128 as NCCL enables it on NVLink systems).";

// A GPU's row of the MAMF table: best-shape matmul efficiency, BF16 and FP8 (0: no FP8 figure).
struct Mamf {
  double bf16 = kMamfA100, fp8 = 0;
  const char* part = "A100 SXM";
};

struct Figures {
  double bf16_tflops, fp32_tflops, fp64_tflops;
  double memory_gb, memory_tbps;
  json gemm, attention_kernels;
  std::string attention_kernel;
  double nvlink_bus_gbps, nvls_bus_gbps, nic_gbps;
  json sources;
  double fp8_tflops = 0, fp4_tflops = 0;  // dense; 0: no such tensor cores
  int gpus_per_node = 8;                  // the NVLink domain
  int gpus_per_host = 0;                  // when the NVLink domain spans several hosts
  int sm_count = 0;                       // 0: not given
  double host_op_us = 0;                  // host time per op; 0: no public figure for the host
  Mamf mamf;                              // scales the gemm curve (kMamfA100)
};

json gemm_tables(const Figures& f) {
  json tables = {{"gemm", scaled(f.gemm, f.mamf.bf16 / kMamfA100)}};
  if (f.mamf.fp8 > 0) {
    tables[std::string(kGemmFp8EfficiencyKey)] = scaled(f.gemm, f.mamf.fp8 / kMamfA100);
  }
  return tables;
}

json profile_json(const std::string& name, const Figures& f) {
  const json& active = f.attention_kernels.at(f.attention_kernel);
  json sources = f.sources;
  sources["compute_efficiency.gemm"] = gemm_source(f.mamf.part, f.mamf.bf16, "BF16");
  if (f.mamf.fp8 > 0) {
    sources["compute_efficiency." + std::string(kGemmFp8EfficiencyKey)] =
        gemm_source(f.mamf.part, f.mamf.fp8, "FP8");
  }
  sources["memory_efficiency"] = kMemorySource;
  sources["network.latency"] = kNcclLatency;
  sources["comm_interference"] = kInterferenceSource;
  json compute = gemm_tables(f);
  compute["attention_fwd"] = active.at("attention_fwd");
  compute["attention_bwd"] = active.at("attention_bwd");
  compute["default"] = json::array({json::array({1e6, 0.5})});
  return json{
      {"schema_version", kHardwareSchemaVersion},
      {"name", name},
      {"gpus_per_node", f.gpus_per_node},
      {"memory_gb", f.memory_gb},
      {"peak_tflops",
       {{"bf16", f.bf16_tflops},
        {"fp16", f.bf16_tflops},
        {"fp32", f.fp32_tflops},
        {"fp64", f.fp64_tflops}}},
      {"memory_tbps", f.memory_tbps},
      {"launch_overhead_us", 2.0},
      {"compute_efficiency", std::move(compute)},
      {"memory_efficiency", json::array({json::array({1e5, 0.2}), json::array({1e6, 0.45}),
                                         json::array({1e7, 0.7}), json::array({1e8, 0.85})})},
      {"comm_interference", kCommInterference},
      {"network",
       {{"nvlink_bus_gbps", f.nvlink_bus_gbps},
        {"nvls_bus_gbps", f.nvls_bus_gbps},
        {"nic_gbps", f.nic_gbps},
        {"nics_per_node", f.gpus_per_node},
        {"base_latency_us", 8.4},
        {"nvlink_step_latency_us", 3.4},
        {"network_step_latency_us", 14.0},
        {"collective_model", "nccl"}}},
      {"attention_kernels", f.attention_kernels},
      {"attention_kernel", f.attention_kernel},
      {"sources", std::move(sources)},
  };
}

json with_extras(json j, const Figures& f) {
  if (f.fp8_tflops > 0) j["peak_tflops"]["fp8"] = f.fp8_tflops;
  if (f.fp4_tflops > 0) j["peak_tflops"]["fp4"] = f.fp4_tflops;
  if (f.gpus_per_host > 0) j["gpus_per_host"] = f.gpus_per_host;
  if (f.sm_count > 0) j["sm_count"] = f.sm_count;
  if (f.host_op_us > 0) j["host_op_us"] = f.host_op_us;
  return j;
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
            "NVIDIA H100 SXM5 datasheet: dense BF16/FP16 989 TFLOP/s, FP8 1,979, TF32 494.7 (fp32 "
            "math), FP64 tensor 67 (the datasheet's 1,979 / 3,958 are with sparsity)"},
           {"sm_count",
            "132 SMs on H100 SXM5 (NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022, "
            "Table 3); H200 SXM and H800 SXM keep the SXM5's GH100 configuration"},
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
           {"network.nic_gbps", "one 400 Gb/s NDR NIC per GPU, about 48 GB/s achieved"},
           {"host_op_us", kDgxH100HostSource}},
      .fp8_tflops = 1979,
      .sm_count = 132,
      .host_op_us = kDgxH100HostOpUs,
      // MAMF table: H100 SXM BF16 794.5 of 989 TFLOP/s (80.3 %), FP8 1,402.6 of 1,979 (70.9 %).
      .mamf = {0.803, 0.709, "H100 SXM"},
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
           {"sm_count",
            "108 SMs on A100 SXM4 (NVIDIA A100 Tensor Core GPU Architecture whitepaper, 2020, "
            "Table 1)"},
           {"memory", "NVIDIA A100 SXM4 80 GB datasheet: 80 GB HBM2e, 2.039 TB/s"},
           {"attention_kernels",
            "fa2: FlashAttention-2, 50-73 % of A100 peak (Dao 2023, arXiv 2307.08691): 65 % "
            "forward, 50 % backward for large calls"},
           {"network.nvlink_bus_gbps",
            "NVLink3, 12 links: NCCL all-reduce bus bandwidth about 230 GB/s on 8x A100 "
            "(nccl-tests); no NVLink SHARP"},
           {"network.nic_gbps", "one 200 Gb/s HDR NIC per GPU, about 24 GB/s achieved"}},
      .sm_count = 108,
      .mamf = {},  // the reference row: A100 SXM BF16 271.2 of 312 TFLOP/s (86.9 %), no FP8
  };
}

// NVLink 5 (B200, B300, GB200/GB300 NVL72): 18 links x 50 GB/s = 900 GB/s per direction per GPU,
// twice NVLink 4; the achieved bus bandwidths scale H100's measured ratios (370 / 450 = 0.82 for
// NCCL's ring all-reduce, 480 / 450 for NVLink SHARP) — derived, not measured.
constexpr double kNvlink5BusGbps = 900 * 370.0 / 450;
constexpr double kNvlink5NvlsGbps = 900 * 480.0 / 450;
const char* const kNvlink5Source =
    "NVLink 5: 1.8 TB/s bidirectional per GPU (NVIDIA Blackwell datasheets) = 900 GB/s per "
    "direction; bus bandwidth at H100's measured 370/450 ratio (derived, not measured)";
const char* const kNvls5Source =
    "NVLink SHARP (NVSwitch 5): H100's 480/450 ratio applied to 900 GB/s (derived, not measured)";
// Blackwell's attention kernels: FlashAttention-3 / cuDNN tables as measured on H100 (no public
// per-kernel figures on B200 yet); GEMM curve as Hopper's, scaled by the part's MAMF row.
Figures blackwell(double bf16, double fp8, double fp4, double fp64, double memory_gb,
                  double nic_gbps, const Mamf& mamf, json sources) {
  Figures f = hopper();
  f.mamf = mamf;
  f.bf16_tflops = bf16;
  f.fp32_tflops = bf16 / 2;  // TF32 dense = half of BF16 on every Blackwell datasheet
  f.fp64_tflops = fp64;
  f.fp8_tflops = fp8;
  f.fp4_tflops = fp4;
  f.sm_count = 0;  // not in the Blackwell datasheets
  f.sources.erase("sm_count");
  f.host_op_us = 0;  // another host CPU, no public figure
  f.sources.erase("host_op_us");
  f.memory_gb = memory_gb;
  f.memory_tbps = 8;
  f.nvlink_bus_gbps = kNvlink5BusGbps;
  f.nvls_bus_gbps = kNvlink5NvlsGbps;
  f.nic_gbps = nic_gbps;
  for (auto& [field, text] : sources.items()) f.sources[field] = text;
  f.sources["network.nvlink_bus_gbps"] = kNvlink5Source;
  f.sources["network.nvls_bus_gbps"] = kNvls5Source;
  f.sources["attention_kernels"] =
      "H100's measured FlashAttention-2/3 and cuDNN fractions of peak (Shah et al. 2024) kept: no "
      "public per-kernel Blackwell figures";
  return f;
}

const char* const kCx7 = "one ConnectX-7 400 Gb/s NIC per GPU, about 48 GB/s achieved (as H100's)";
const char* const kCx8 =
    "one ConnectX-8 SuperNIC 800 Gb/s per GPU, about 96 GB/s achieved (H100's 48 GB/s per 400 "
    "Gb/s doubled)";

Figures b200() {
  return blackwell(
      2250, 4500, 9000, 37, 180, 48, {0.776, 0.763, "B200 SXM"},  // MAMF 1,745 / 3,432.5 TFLOP/s
      {{"peak_tflops",
        "NVIDIA HGX B200 datasheet (8 GPUs): FP4 144 PF, FP8 72 PF, BF16 36 PF, TF32 18 PF with "
        "sparsity = per GPU dense FP4 9,000, FP8 4,500, BF16 2,250, TF32 1,125 TFLOP/s; FP64 "
        "296 TF / 8 = 37"},
       {"memory", "NVIDIA HGX B200 datasheet: 1.4 TB HBM3e over 8 GPUs = 180 GB, 8 TB/s per GPU"},
       {"network.nic_gbps", kCx7}});
}

Figures b300() {
  return blackwell(
      2250, 4500, 13125, 1.25, 288, 96, {0.786, 0.745, "B300 SXM"},  // 1,769 / 3,353.3
      {{"peak_tflops",
        "NVIDIA HGX B300 datasheet (8 GPUs): FP4 105 PF dense, FP8 72 PF, BF16 36 PF, TF32 18 PF "
        "with sparsity = per GPU dense FP4 13,125, FP8 4,500, BF16 2,250 TFLOP/s; FP64 10 TF / 8 "
        "= 1.25"},
       {"memory", "NVIDIA HGX B300 datasheet: 2.3 TB HBM3e over 8 GPUs = 288 GB, 8 TB/s per GPU"},
       {"network.nic_gbps", kCx8}});
}

// GB200 / GB300 NVL72: 72 GPUs in one NVLink domain (meshsim's node) over 18 compute trays of 4
// GPUs (gpus_per_host).
Figures nvl72(Figures f, const std::string& domain_source) {
  f.gpus_per_node = 72;
  f.gpus_per_host = 4;
  f.sources["gpus_per_node"] = domain_source;
  return f;
}

Figures gb200_nvl72() {
  Figures f = blackwell(
      2500, 5000, 10000, 45, 186, 48, {0.729, 0.723, "GB200 SXM"},  // 1,822 / 3,615.6
      {{"peak_tflops",
        "NVIDIA GB200 NVL72 datasheet (72 GPUs): FP4 1,440 PF, FP8 720 PF, BF16 360 PF, TF32 "
        "180 PF with sparsity = per GPU dense FP4 10,000, FP8 5,000, BF16 2,500 TFLOP/s; FP64 "
        "3,240 TF / 72 = 45"},
       {"memory",
        "NVIDIA GB200 NVL72 datasheet: 13.4 TB HBM3e, 576 TB/s over 72 GPUs = 186 GB, 8 TB/s"},
       {"network.nic_gbps", kCx7}});
  return nvl72(f,
               "GB200 NVL72: one NVLink domain of 72 GPUs (130 TB/s, 18 NVLink switch trays) over "
               "18 compute trays of 2 Grace CPUs + 4 Blackwell GPUs (NVIDIA datasheet)");
}

Figures gb300_nvl72() {
  Figures f = blackwell(
      // No GB300 row in the MAMF table: B300's (the same Blackwell Ultra GPU), an assumption.
      2500, 5000, 15000, 1.39, 288, 96, {0.786, 0.745, "B300 SXM (no GB300 row)"},
      {{"peak_tflops",
        "NVIDIA GB300 NVL72 datasheet (72 GPUs): FP4 1,080 PF dense, FP8 720 PF, BF16 360 PF "
        "with sparsity = per GPU dense FP4 15,000, FP8 5,000, BF16 2,500 TFLOP/s; FP64 100 TF / "
        "72 = 1.39"},
       {"memory",
        "NVIDIA GB300 NVL72 datasheet: 20.7 TB HBM3e, 576 TB/s over 72 GPUs = 288 GB, 8 TB/s"},
       {"network.nic_gbps", kCx8}});
  return nvl72(f,
               "GB300 NVL72: one NVLink domain of 72 GPUs (130 TB/s) over 18 compute trays of 4 "
               "Blackwell Ultra GPUs, 72 ConnectX-8 NICs (NVIDIA datasheet)");
}

Figures mi300x() {
  Figures f = hopper();
  f.host_op_us = 0;  // another host and software stack, no public figure
  f.sources.erase("host_op_us");
  f.bf16_tflops = 1307.4;
  f.fp32_tflops = 653.7;  // TF32 matrix
  f.fp64_tflops = 163.4;  // FP64 matrix
  f.fp8_tflops = 2614.9;
  f.sm_count = 0;  // compute units, not SMs: TE's SM-based overlap does not apply
  f.memory_gb = 192;
  f.memory_tbps = 5.3;
  // xGMI: each of the 8 GPUs has one 64 GB/s-per-direction link to each of the 7 others (448
  // GB/s per direction); bus bandwidth at H100's measured 370/450 ratio (derived, not measured).
  f.nvlink_bus_gbps = 448 * 370.0 / 450;
  f.nvls_bus_gbps = 0;
  f.nic_gbps = 48;
  f.attention_kernels = {{"fa2", family(0.35, 0.27)}};
  f.attention_kernel = "fa2";
  // MAMF table: MI300X BF16 668.4 of 1,300 TFLOP/s (51.4 %, ROCm 6.3 with TunableOp); no FP8 row,
  // so FP8 GEMMs use the BF16 table.
  f.mamf = {0.514, 0, "MI300X"};
  f.sources = {
      {"peak_tflops",
       "AMD Instinct MI300X datasheet: dense BF16/FP16 1,307.4 TFLOP/s, FP8 2,614.9, TF32 653.7, "
       "FP64 matrix 163.4; no FP4"},
      {"memory", "AMD Instinct MI300X datasheet: 192 GB HBM3, 5.3 TB/s"},
      {"attention_kernels",
       "fa2 at H100's FlashAttention-2 fractions of peak (35 % forward; no public MI300X "
       "per-kernel table): a starting point for calibration"},
      {"network.nvlink_bus_gbps",
       "AMD Infinity Fabric (xGMI): 7 links x 64 GB/s per direction per GPU in an 8-GPU "
       "platform (AMD MI300X datasheet: 896 GB/s aggregate bidirectional); bus bandwidth at "
       "H100's 370/450 ratio (derived, not measured)"},
      {"network.nvls_bus_gbps", "no in-switch reduction on xGMI (0)"},
      {"network.nic_gbps", "one 400 Gb/s NIC per GPU, about 48 GB/s achieved (as H100's)"}};
  return f;
}

// The H100 of Meta's Grand Teton hosts, on which torchtitan's H100 figures were measured
// (pytorch/torchtitan docs/performance.md): 96 GB HBM2e at 2.4 TB/s, 8 GPUs per host fully
// connected with NVLink, 400 Gb/s RDMA per GPU, a 500 W default power limit.
Figures h100_hbm2e() {
  Figures f = hopper();
  f.memory_gb = 96;
  f.memory_tbps = 2.4;
  f.sm_count = 0;  // not published for this part
  f.sources.erase("sm_count");
  // The BF16 peak of the 500 W part; its other peaks scaled by the same 800 / 989 (a lower
  // sustained clock on the same tensor cores): FP8 = 2 x BF16 and TF32 = BF16 / 2 per SM and
  // clock on Hopper (H100 whitepaper), FP64 67 x 800 / 989.
  constexpr double kClockRatio = 800.0 / 989.0;
  f.bf16_tflops = 800;
  f.fp8_tflops = 1600;
  f.fp32_tflops = 400;
  f.fp64_tflops = 67 * kClockRatio;
  const char* const torchtitan = "pytorch/torchtitan docs/performance.md (Grand Teton platform)";
  f.sources["memory"] =
      std::string(torchtitan) + ": each H100 has 96GB HBM2e with 2.4 TB/sec peak memory bandwidth";
  f.sources["peak_tflops"] =
      "Yang et al., Context Parallelism for Scalable Million-Token Inference, arXiv 2411.01783, "
      "App. A: Meta's Grand Teton hosts 'are configured with power limited H100 GPUs (500 Watt) "
      "with lower memory bandwidth (96 GB HBM2e with 2.4 TB/sec ...), where the BF16 peak for each "
      "H100 is 800 TF/sec, instead of 989 TF/sec for H100 HBM3 with 700 Watt'. FP8 1,600 and TF32 "
      "400 TFLOP/s: Hopper's 2x and 1/2 of BF16 per SM and clock (H100 whitepaper); FP64 scaled by "
      "800 / 989. torchtitan's footnote 2 puts the part 'between SXM and NVL'";
  f.sources["network.nvlink_bus_gbps"] =
      std::string(torchtitan) +
      ": 8 H100 per host fully connected with NVLink; the NVLink generation is not stated, so "
      "h100-sxm's measured 370 GB/s bus bandwidth is kept";
  f.sources["network.nvls_bus_gbps"] = "h100-sxm's NVLink SHARP figure kept (not stated)";
  f.sources["network.nic_gbps"] = std::string(torchtitan) +
                                  ": backend RDMA network with 400 Gb/s per GPU, about 48 GB/s "
                                  "achieved (as h100-sxm's)";
  f.sources["host_op_us"] = kAssumedHostSource;
  return f;
}

const std::map<std::string, HardwareProfile, std::less<>>& builtins() {
  static const auto profiles = [] {
    Figures h200 = hopper();
    h200.memory_gb = 141;
    h200.memory_tbps = 4.8;
    h200.sources["memory"] = "NVIDIA H200 SXM datasheet: 141 GB HBM3e, 4.8 TB/s";
    h200.sources["peak_tflops"] =
        "NVIDIA H200 SXM datasheet: the H100 SXM5's tensor throughput (dense BF16 989, FP8 1,979 "
        "TFLOP/s; same GH100 die at 700 W)";
    // MAMF table: H200 SXM FP8 1,453.4 of 1,979 (73.4 %); BF16 "H200 is the same" as H100 SXM.
    h200.mamf = {0.803, 0.734, "H200 SXM"};
    h200.sources["network.nvlink_bus_gbps"] =
        "H200 SXM: NVLink 4 at 900 GB/s bidirectional as H100 SXM5 (NVIDIA datasheet), so H100's "
        "measured 370 GB/s bus bandwidth";
    Figures h800 = hopper();
    h800.nvlink_bus_gbps = 165;
    h800.nvls_bus_gbps = 0;
    h800.sources["peak_tflops"] =
        "NVIDIA H800 SXM5 (export variant of H100 SXM5): the same compute and HBM3";
    h800.sources["network.nvlink_bus_gbps"] =
        "H800 NVLink 400 GB/s bidirectional = 8 NVLink4 links instead of 18: 200 GB/s per "
        "direction, at H100's 82 % achieved bus bandwidth 165 GB/s";
    h800.sources["network.nvls_bus_gbps"] = "NVLink SHARP not assumed on H800 (0)";
    h200.sources["host_op_us"] = kAssumedHostSource;
    h800.sources["host_op_us"] = kAssumedHostSource;
    std::map<std::string, HardwareProfile, std::less<>> m;
    for (const auto& [name, figures] :
         {std::pair<std::string, Figures>{"h100-sxm", hopper()},
          std::pair<std::string, Figures>{"h100-hbm2e", h100_hbm2e()},
          std::pair<std::string, Figures>{"h200-sxm", h200},
          std::pair<std::string, Figures>{"h800-sxm", h800},
          std::pair<std::string, Figures>{"a100-sxm", ampere()},
          std::pair<std::string, Figures>{"b200", b200()},
          std::pair<std::string, Figures>{"b300", b300()},
          std::pair<std::string, Figures>{"gb200-nvl72", gb200_nvl72()},
          std::pair<std::string, Figures>{"gb300-nvl72", gb300_nvl72()},
          std::pair<std::string, Figures>{"mi300x", mi300x()}}) {
      m.emplace(name, hardware_from_json(with_extras(profile_json(name, figures), figures),
                                         "built-in " + name));
    }
    return m;
  }();
  return profiles;
}

}  // namespace

std::vector<std::string> builtin_hardware_names() {
  return {"h100-sxm", "h100-hbm2e", "h200-sxm",    "h800-sxm",    "a100-sxm",
          "b200",     "b300",       "gb200-nvl72", "gb300-nvl72", "mi300x"};
}

std::optional<HardwareProfile> builtin_hardware(std::string_view name) {
  const auto& m = builtins();
  const auto it = m.find(name);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

}  // namespace meshsim
