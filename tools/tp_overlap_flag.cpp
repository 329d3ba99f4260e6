#include "tools/tp_overlap_flag.hpp"

#include <fmt/format.h>

#include "schedules/tp_emitter.hpp"
#include "sim/error.hpp"

namespace meshsim {

OptionSpec tp_comm_overlap_option() {
  return {"--tp-comm-overlap", "",
          "Transformer Engine's userbuffers TP communication overlap (Megatron-Core's "
          "--tp-comm-overlap, TE's default per-layer configuration), with sequence parallelism: "
          "ring-exchanged all-gathers beside chunk GEMMs, pipelined reduce-scatters, bulk "
          "overlap of the column backward; bf16, fp8-delayed or fp8-current linears, TP inside "
          "one node"};
}

OptionSpec tp_overlap_rs_option() {
  return {"--tp-comm-overlap-rs", "pipeline|ring-exchange",
          "with --tp-comm-overlap, the userbuffers method of the reduce-scatter after the "
          "projection and MLP-down forward GEMMs (TE's proj_fprop / fc2_fprop): pipeline (TE's "
          "default: 4 chunk GEMMs on sm_count - 16 SMs) or ring-exchange (tp chunk GEMMs on "
          "sm_count - 1 SMs, each chunk sent to its owner, one summing kernel; Megatron-Bridge's "
          "H100 FP8 configurations) [pipeline]"};
}

void enable_tp_comm_overlap(const HardwareProfile& hardware, StepPlan& plan) {
  if (hardware.sm_count <= kTpOverlapCommSms) {
    throw InputError(fmt::format(
        "--tp-comm-overlap: hardware profile '{}' gives no SM count above {} (its sm_count field, "
        "{}; the built-in h100-sxm, h200-sxm, h800-sxm and a100-sxm give one): Transformer "
        "Engine's communication kernels take {} SMs",
        hardware.name, kTpOverlapCommSms, hardware.sm_count == 0 ? "absent" : "too small",
        kTpOverlapCommSms));
  }
  // Userbuffers exchange through CUDA IPC over NVLink: the TP group must sit in one NVLink
  // domain (meshsim's node).
  if (plan.tp > hardware.gpus_per_node) {
    throw InputError(fmt::format(
        "--tp-comm-overlap needs the TP group inside one NVLink domain: --tp {} is more than the "
        "{} GPUs per node of hardware '{}'",
        plan.tp, hardware.gpus_per_node, hardware.name));
  }
  plan.tp_comm_overlap = true;
  plan.gpu_sms = hardware.sm_count;
}

void read_tp_comm_overlap(const Args& args, const HardwareProfile& hardware, StepPlan& plan) {
  if (args.has("--tp-comm-overlap")) enable_tp_comm_overlap(hardware, plan);
  if (!args.has("--tp-comm-overlap-rs")) return;
  const std::string method =
      args.get_choice("--tp-comm-overlap-rs", "pipeline", {"pipeline", "ring-exchange"});
  if (!plan.tp_comm_overlap) {
    throw InputError("--tp-comm-overlap-rs needs --tp-comm-overlap");
  }
  plan.tp_overlap_rs = *parse_tp_overlap_rs(method);
}

}  // namespace meshsim
