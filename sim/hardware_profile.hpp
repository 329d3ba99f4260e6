#pragma once
// Hardware profiles (ARCHITECTURE.md §3): GPU compute and memory, kernel efficiency tables, and the
// network figures of the analytical model. JSON with a schema version; built-ins from public
// figures.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include "sim/dtype.hpp"

namespace meshsim {

inline constexpr int kHardwareSchemaVersion = 1;

// Efficiency as a function of size, interpolated linearly in log(size) and clamped at both ends.
struct EfficiencyPoint {
  double size = 0;        // FLOPs (compute tables) or bytes (memory table)
  double efficiency = 0;  // fraction of peak, in (0, 1]
  bool operator==(const EfficiencyPoint&) const = default;
};
using EfficiencyTable = std::vector<EfficiencyPoint>;
double interpolate_efficiency(const EfficiencyTable& table, double size);

// Measured figures of one communication operation on one link class (a calibrated profile): they
// replace the profile's base latency, that class's per-step latency and its bandwidth (NVLink:
// the bus bandwidth; network: the per-NIC bandwidth) when the analytical model costs that
// operation there.
struct LinkFigures {
  double base_latency = 0;  // s
  double step_latency = 0;  // s
  double bw = 0;            // bytes/s
  bool operator==(const LinkFigures&) const = default;
};

struct NetworkProfile {
  double nvlink_bus_bw = 0;  // bytes/s NCCL reaches inside a node (bus bandwidth)
  double nvls_bus_bw = 0;    // bytes/s with NVLink SHARP for intra-node all-reduce; 0 = absent
  double nic_bw = 0;         // bytes/s per NIC
  int nics_per_node = 1;
  double base_latency = 0;          // s, per collective or p2p call
  double nvlink_step_latency = 0;   // s, per algorithm step over NVLink
  double network_step_latency = 0;  // s, per algorithm step across nodes
  // Per "<operation>.<link class>" ("p2p.nvlink", "all_reduce.network", ...): calibrated figures
  // of that operation (empty in the built-in profiles).
  std::map<std::string, LinkFigures> calibrated;
  // How all-reduce, all-gather and reduce-scatter are costed ("collective_model"): false
  // ("alpha-beta", a profile that does not say) = the figures above, every algorithm step at the
  // latency of the link class the group spans; true ("nccl", the built-ins) = NCCL's own tuning
  // model (sim/nccl_model.hpp): the fastest of its LL, LL128 and Simple protocols (the figures
  // above are Simple's), ring steps inside a node at NVLink latency and only the steps between
  // nodes at network latency, NVLS as one more candidate.
  bool nccl_model = false;
  bool operator==(const NetworkProfile&) const = default;
};

// One attention kernel family's efficiency tables (FlashAttention-2, FlashAttention-3, ...).
struct AttentionKernelTables {
  EfficiencyTable fwd, bwd;
  bool operator==(const AttentionKernelTables&) const = default;
};

struct HardwareProfile {
  std::string name;
  int gpus_per_node = 8;
  double memory_bytes = 0;
  std::array<double, 4> peak_flops{};  // FLOP/s indexed by DType (bf16, fp16, fp32, fp64)
  // Dense tensor-core FLOP/s of the 8-bit and 4-bit formats (peak_tflops.fp8 / .fp4, optional;
  // 0: the GPU has no such tensor cores). FP8 covers E4M3/E5M2 with per-tensor or block scales
  // (MXFP8 on Blackwell), FP4 NVFP4 / MXFP4.
  double fp8_flops = 0, fp4_flops = 0;
  // GPUs of one physical host when the NVLink domain (gpus_per_node: meshsim's node is the
  // NVLink domain) spans several hosts, as GB200 NVL72's 18 trays of 4 GPUs; 0: the same.
  int gpus_per_host = 0;
  // Streaming multiprocessors (sm_count, optional; 0: not given). Transformer Engine's
  // userbuffers overlap launches its GEMMs on sm_count - 16 of them (--tp-comm-overlap).
  int sm_count = 0;
  double memory_bw = 0;        // bytes/s
  double launch_overhead = 0;  // s added to every kernel
  // s of host (CPU) time to issue one op (the framework's dispatch and the launch), optional; 0:
  // the host is not modelled (always ahead of the device). See the host issue clock, §3.
  double host_op = 0;
  // Per kernel kind name (see to_string(KernelKind)), or "<kind>.<fn>" for a kind with a fused
  // function (efficiency_key() in sim/compute_model.hpp); "default" applies to kinds not listed.
  std::map<std::string, EfficiencyTable> compute_efficiency;
  EfficiencyTable memory_efficiency;
  double comm_interference = 1.0;  // compute slow-down while comm data moves on the GPU (>= 1)
  NetworkProfile network;
  // Attention kernel families by name; compute_efficiency's attention_fwd/attention_bwd tables are
  // those of `attention_kernel` (select_attention_kernel in sim/compute_model.hpp switches them).
  std::map<std::string, AttentionKernelTables> attention_kernels;
  std::string attention_kernel;  // "" when the profile names no family
  // Where each figure comes from, by field ("peak_tflops", "network.nic_gbps", ...).
  std::map<std::string, std::string> sources;
  bool operator==(const HardwareProfile&) const = default;
};

// JSON schema (human units; GB = 1e9 bytes, TB = 1e12 bytes, every field required):
//   "schema_version": 1, "name": "h100-sxm", "gpus_per_node": 8, "memory_gb": 80,
//   "peak_tflops": {"bf16", "fp16", "fp32", "fp64"} (dense TFLOP/s), "memory_tbps": 3.35,
//   "launch_overhead_us": 2, optional "host_op_us" (>= 0, default 0), "comm_interference": 1.0 (>=
//   1), "compute_efficiency": {"<kernel kind>" | "<kernel kind>.<fused fn>" | "default":
//   [[flops, efficiency], ...]} ("default" required; "gemm.gelu" etc. from calibration;
//   "gemm_fp8" for GEMMs on the FP8 tensor cores, else they use "gemm"),
//   "memory_efficiency": [[bytes, efficiency], ...] (sizes strictly increasing, efficiencies in (0,
//   1]), "network": {"nvlink_bus_gbps", "nvls_bus_gbps" (0 = none), "nic_gbps" (GB/s, not Gb/s),
//               "nics_per_node", "base_latency_us", "nvlink_step_latency_us",
//               "network_step_latency_us", optional "calibrated": {"<op>.<nvlink|network>":
//               {"base_latency_us", "step_latency_us", "bw_gbps"}} with op p2p or a collective
//               kind}; optional "attention_kernels": {"<family>": {"attention_fwd": table,
//   "attention_bwd": table}}, "attention_kernel": "<family>" (the family compute_efficiency's
//   attention tables hold; one of attention_kernels), "sources": {"<field>": "<public source>"}.
nlohmann::json to_json(const HardwareProfile& profile);
// compute_efficiency's table for GEMMs on the FP8 tensor cores (optional).
inline constexpr std::string_view kGemmFp8EfficiencyKey = "gemm_fp8";
// Throws InputError naming the field ("network.nic_gbps: expected a positive number").
HardwareProfile hardware_from_json(const nlohmann::json& j, std::string_view origin);

std::vector<std::string> builtin_hardware_names();
// The built-in profile of that name, or nullopt.
std::optional<HardwareProfile> builtin_hardware(std::string_view name);
// The streaming multiprocessors of the GPU a built-in profile describes, from NVIDIA's
// architecture documents (sources beside the table in sim/builtin_hardware.cpp); nullopt for other
// names. Not a profile field: only Transformer Engine's SM-based communication kernels
// (--tp-comm-overlap) need it.
// NAME of a built-in, or a path to a JSON file. Throws InputError with the origin in the message.
HardwareProfile load_hardware(std::string_view name_or_path);
// 16 hex digits identifying the profile's figures (FNV-1a of its canonical JSON without
// `sources`).
std::string hardware_hash(const HardwareProfile& profile);

}  // namespace meshsim
