#include "tools/moe_flags.hpp"

#include <charconv>
#include <string>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

std::vector<OptionSpec> moe_options() {
  return {
      {"--ep", "E", "expert-parallel size of the MoE layers, folded onto tp x cp x dp [1]"},
      {"--etp", "T", "expert tensor-parallel size (Megatron's --expert-tensor-parallel-size) [tp]"},
      {"--moe-token-dispatcher", "alltoall|allgather|flex",
       "how tokens reach their experts (Megatron-Core's dispatcher types; flex: DeepEP's fused "
       "kernels) [alltoall]"},
      {"--routing", "uniform|zipf:S|FILE",
       "token copies per routed expert: uniform, Zipf with exponent S, or a JSON file "
       "{\"tokens_per_expert\": [...]} [uniform]"},
      {"--overlap-moe-comm", "",
       "the all-to-all of one microbatch beside another's compute: with --schedule dualpipev "
       "DualPipe's pairs; with 1f1b (pp 1) or interleaved Megatron-Core's combined 1F1B "
       "(--overlap-moe-expert-parallel-comm: one more warm-up forward, each steady forward "
       "paired with a backward)"},
      {"--delay-wgrad-compute", "",
       "with --overlap-moe-comm on 1f1b/interleaved: the expert weight gradients after the "
       "dispatch backward's all-to-all is launched (Megatron's --delay-wgrad-compute)"},
      {"--moe-shared-expert-overlap", "",
       "the shared experts' GEMMs beside the dispatch and combine all-to-alls (Megatron's "
       "--moe-shared-expert-overlap; alltoall dispatcher)"},
      {"--moe-capacity-factor", "F",
       "each expert takes at most F x its uniform share of token copies, the rest are dropped "
       "[no capacity]"},
  };
}

MoePlan read_moe_plan(const Args& args) {
  MoePlan m;
  m.ep = static_cast<int>(args.get_int("--ep", 1, 1, 1 << 16));
  m.etp = static_cast<int>(args.get_int("--etp", 0, 1, 1 << 16));
  m.dispatcher = read_token_dispatcher(args);
  m.routing = parse_routing(args.get("--routing", "uniform"));
  m.overlap_comm = args.has("--overlap-moe-comm");
  m.delay_wgrad = args.has("--delay-wgrad-compute");
  m.shared_expert_overlap = args.has("--moe-shared-expert-overlap");
  m.capacity_factor = read_capacity_factor(args);
  return m;
}

TokenDispatcher read_token_dispatcher(const Args& args) {
  return *parse_token_dispatcher(
      args.get_choice("--moe-token-dispatcher", "alltoall", {"alltoall", "allgather", "flex"}));
}

double read_capacity_factor(const Args& args) {
  if (!args.has("--moe-capacity-factor")) return 0;
  // A capacity factor of 0 would drop every token: the range is (0, 1e6].
  const std::string v = args.get("--moe-capacity-factor", "");
  const char* end = v.data() + v.size();
  double f = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), end, f);
  if (ec != std::errc() || ptr != end || !(f > 0) || f > 1e6) {
    throw InputError(
        fmt::format("--moe-capacity-factor expects a number in (0, 1000000], got '{}'", v));
  }
  return f;
}

void put_moe_plan(nlohmann::ordered_json& j, const TransformerModel& model, const StepPlan& p) {
  if (!model.moe) return;
  j["ep"] = p.moe.ep;
  j["etp"] = expert_tp(p.moe, p.tp);
  j["edp"] = p.tp * p.cp * p.dp / (expert_tp(p.moe, p.tp) * p.moe.ep);
  j["moe_token_dispatcher"] = to_string(p.moe.dispatcher);
  j["routing"] = p.moe.routing.origin;
  if (p.moe.capacity_factor > 0) j["moe_capacity_factor"] = p.moe.capacity_factor;
  if (p.moe.overlap_comm) j["overlap_moe_comm"] = true;
  if (p.moe.delay_wgrad) j["delay_wgrad_compute"] = true;
  if (p.moe.shared_expert_overlap) j["moe_shared_expert_overlap"] = true;
}

}  // namespace meshsim
