// Writing a hardware profile: its JSON (the schema the reader takes, exact round trip) and the
// hash of its figures that outputs carry.
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/hardware_profile.hpp"
#include "sim/hardware_profile_units.hpp"

namespace meshsim {

using nlohmann::json;
using namespace profile_units;

namespace {

json table_to_json(const EfficiencyTable& t) {
  json a = json::array();
  for (const auto& p : t) a.push_back(json::array({p.size, p.efficiency}));
  return a;
}

}  // namespace

json to_json(const HardwareProfile& hw) {
  json peak = json::object();
  for (DType t : kDTypes) {
    peak[std::string(to_string(t))] =
        to_human(hw.peak_flops[static_cast<std::size_t>(t)], kUnitTera);
  }
  if (hw.fp8_flops > 0) peak["fp8"] = to_human(hw.fp8_flops, kUnitTera);
  if (hw.fp4_flops > 0) peak["fp4"] = to_human(hw.fp4_flops, kUnitTera);
  json compute = json::object();
  for (const auto& [kind, table] : hw.compute_efficiency) compute[kind] = table_to_json(table);
  const auto& n = hw.network;
  json network = {{"nvlink_bus_gbps", to_human(n.nvlink_bus_bw, kUnitGiga)},
                  {"nvls_bus_gbps", to_human(n.nvls_bus_bw, kUnitGiga)},
                  {"nic_gbps", to_human(n.nic_bw, kUnitGiga)},
                  {"nics_per_node", n.nics_per_node},
                  {"base_latency_us", to_human(n.base_latency, kUnitMicro)},
                  {"nvlink_step_latency_us", to_human(n.nvlink_step_latency, kUnitMicro)},
                  {"network_step_latency_us", to_human(n.network_step_latency, kUnitMicro)}};
  if (n.nccl_model) network["collective_model"] = "nccl";
  if (!n.calibrated.empty()) {
    json c = json::object();
    for (const auto& [key, f] : n.calibrated) {
      c[key] = {{"base_latency_us", to_human(f.base_latency, kUnitMicro)},
                {"step_latency_us", to_human(f.step_latency, kUnitMicro)},
                {"bw_gbps", to_human(f.bw, kUnitGiga)}};
    }
    network["calibrated"] = std::move(c);
  }
  json out{
      {"schema_version", kHardwareSchemaVersion},
      {"name", hw.name},
      {"gpus_per_node", hw.gpus_per_node},
      {"memory_gb", to_human(hw.memory_bytes, kUnitGiga)},
      {"peak_tflops", std::move(peak)},
      {"memory_tbps", to_human(hw.memory_bw, kUnitTera)},
      {"launch_overhead_us", to_human(hw.launch_overhead, kUnitMicro)},
      {"compute_efficiency", std::move(compute)},
      {"memory_efficiency", table_to_json(hw.memory_efficiency)},
      {"comm_interference", hw.comm_interference},
      {"network", std::move(network)},
  };
  if (hw.gpus_per_host > 0) out["gpus_per_host"] = hw.gpus_per_host;
  if (hw.host_op > 0) out["host_op_us"] = to_human(hw.host_op, kUnitMicro);
  if (hw.sm_count > 0) out["sm_count"] = hw.sm_count;
  if (!hw.attention_kernels.empty()) {
    json families = json::object();
    for (const auto& [family, t] : hw.attention_kernels) {
      families[family] = {{"attention_fwd", table_to_json(t.fwd)},
                          {"attention_bwd", table_to_json(t.bwd)}};
    }
    out["attention_kernels"] = std::move(families);
  }
  if (!hw.attention_kernel.empty()) out["attention_kernel"] = hw.attention_kernel;
  if (!hw.sources.empty()) out["sources"] = hw.sources;
  return out;
}

std::string hardware_hash(const HardwareProfile& profile) {
  // The figures only: `sources` documents them and does not change a result.
  json figures = to_json(profile);
  figures.erase("sources");
  const std::string text = figures.dump(-1, ' ', false, json::error_handler_t::replace);
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64-bit offset basis
  for (char c : text) {
    h ^= static_cast<std::uint8_t>(c);
    h *= 0x100000001b3ULL;  // FNV prime
  }
  return fmt::format("{:016x}", h);
}

}  // namespace meshsim
