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
          "overlap of the column backward; bf16 linears, TP inside one node"};
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
}

}  // namespace meshsim
