// meshsim explain: which inputs move a training step's time most — each hardware-profile number
// and plan knob moved by -10 % and +10 % (tools/sensitivity.hpp), ranked. Takes step's flags.
#include <algorithm>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/memory_model.hpp"
#include "schedules/sharding.hpp"
#include "sim/error.hpp"
#include "tools/commands.hpp"
#include "tools/sensitivity.hpp"
#include "tools/step_request.hpp"

namespace meshsim {
namespace {

std::string percent(const SensitivitySide& s) {
  return s.valid ? fmt::format("{:+.2f} %", 100 * s.change) : "not valid";
}

void print_sensitivity(std::ostream& out, const Sensitivity& s, const StepRequest& req,
                       const HardwareProfile& hw, std::size_t top) {
  const StepPlan& p = req.plan;
  // The sharding and the recompute when the plan has them (the step's flags).
  std::string settings;
  if (p.sharding.zero > 0 || p.distributed_optimizer) {
    ShardingPlan shown = p.sharding;
    shown.zero = std::max(shown.zero, 1);
    settings += ", sharding " + describe_sharding(shown);
  }
  if (p.recompute != Recompute::none)
    settings += fmt::format(", recompute {}", to_string(p.recompute));
  if (p.tp_comm_overlap) settings += ", TP comm overlap";
  if (!p.grad_reduce_in_fp32) settings += ", gradients reduced in the parameters' dtype";
  if (p.fp8_param_gather) settings += ", FP8 parameters";
  if (p.tp_overlap_rs == TpOverlapRs::ring_exchange) settings += " (ring-exchange reduce-scatter)";
  if (p.layer_kernels != LayerKernels::fused) {
    settings += fmt::format(", layer kernels {}", to_string(p.layer_kernels));
  }
  if (p.cross_entropy != CrossEntropy::vocab_parallel) {
    settings += fmt::format(", cross entropy {}", to_string(p.cross_entropy));
  }
  out << fmt::format(
      "explain: {} on {} GPUs of {}, tp {} pp {} cp {} dp {}{}; step time {:.6f} s\n",
      req.model.name, p.tp * p.pp * p.cp * p.dp, hw.name, p.tp, p.pp, p.cp, p.dp, settings,
      s.baseline_s);
  out << fmt::format(
      "step time change with each input at -{0:g} % and +{0:g} % (ranked by the larger):\n",
      100 * s.delta);
  out << fmt::format("{:>4}  {:<48} {:>8}  {:>10}  {:>10}\n", "rank", "input", "value",
                     fmt::format("-{:g} %", 100 * s.delta), fmt::format("+{:g} %", 100 * s.delta));
  for (std::size_t i = 0; i < s.inputs.size() && i < top; ++i) {
    const SensitivityInput& in = s.inputs[i];
    out << fmt::format("{:>4}  {:<48} {:>8}  {:>10}  {:>10}\n", i + 1,
                       fmt::format("{} {}", in.kind, in.name), in.value, percent(in.minus),
                       percent(in.plus));
  }
  out << fmt::format("{} inputs, {} shown (--top)\n", s.inputs.size(),
                     std::min(top, s.inputs.size()));
}

}  // namespace

int run_explain_command(std::span<const std::string> argv, const CommandContext& ctx) {
  std::vector<OptionSpec> specs = step_flag_options();
  specs.push_back({"--top", "K", "inputs shown [15]"});
  specs.push_back({"--delta", "PERCENT", "how far each input moves, each way [10]"});
  const Args args("explain", specs, argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Which inputs move the step time most: the step of meshsim step's flags simulated again "
        "with each hardware-profile number (peaks, bandwidths, latencies; each efficiency table "
        "as a whole) and each plan knob (seq, gbs) moved by -10 % and +10 %, ranked by the larger "
        "change.",
        "meshsim explain --model llama3-8b --gpus 16 --tp 4 --pp 2 --top 10");
    return 0;
  }
  const OutputRequest out = read_output_request(args, ctx);
  if (!out.trace_path.empty()) throw InputError("--trace: explain writes no trace");
  const StepRequest req = read_step_request(args, out, ctx.err);
  const auto top = static_cast<std::size_t>(args.get_int("--top", 15, 1, 1 << 20));
  const double delta = static_cast<double>(args.get_int("--delta", 10, 1, 90)) / 100;
  const Sensitivity s = step_sensitivity(req.model, req.plan, out.hardware, out.network, delta);
  if (out.json) {
    ctx.out << to_json(s).dump(2) << "\n";
  } else {
    print_sensitivity(ctx.out, s, req, out.hardware, top);
  }
  return 0;
}

}  // namespace meshsim
