#include "tools/simulate_outputs.hpp"

#include <ostream>

#include <fmt/format.h>

#include "sim/compute_model.hpp"
#include "sim/error.hpp"
#include "sim/program_json.hpp"
#include "tools/output_file.hpp"
#include "tools/run_report.hpp"

namespace meshsim {

std::vector<OptionSpec> simulate_output_options() {
  return {
      {"--hardware", "NAME|FILE",
       fmt::format("hardware profile: a built-in ({}) or a JSON file [h100-sxm]",
                   fmt::join(builtin_hardware_names(), ", "))},
      {"--attention-kernel", "NAME",
       "attention kernel family from the profile's attention_kernels (built-ins: fa2, and on "
       "Hopper fa3 and cudnn) [the profile's attention_kernel]"},
      {"--network", "analytical|flow",
       "network model: alpha-beta per call, or flows sharing ports max-min fairly [analytical]"},
      {"--oversubscription", "F", "flow model: node uplinks carry NICs x NIC bandwidth / F [1]"},
      {"--spine-oversubscription", "F",
       "flow model: leaf-to-spine links carry the leaf's downlink bandwidth / F [1: no spine "
       "tier]"},
      {"--leaf-nodes", "N",
       "flow model, with --spine-oversubscription: nodes per leaf switch (per rail when "
       "rail-optimized) [32, a DGX SuperPOD scalable unit]"},
      {"--rails", "optimized|single",
       "flow model, with --spine-oversubscription: rail r of every node on leaf r of its group, "
       "or every NIC of a node on its group's one leaf [optimized]"},
      {"--trace", "FILE", "write a Chrome/Perfetto trace (open in ui.perfetto.dev)",
       OutputKind::file},
      {"--json", "", "print one JSON object instead of the table"},
  };
}

namespace {

// An oversubscription factor in [1, 1e6], given only with --network flow.
double oversubscription_flag(const Args& args, std::string_view flag, bool flow) {
  const double f = args.get_number(flag, 1.0, 1e6);
  if (f < 1.0) throw InputError(fmt::format("{} expects a factor >= 1, got {}", flag, f));
  if (args.has(flag) && !flow) throw InputError(fmt::format("{} needs --network flow", flag));
  return f;
}

void read_flow_options(const Args& args, NetworkChoice& network) {
  FlowOptions& o = network.options;
  o.oversubscription = oversubscription_flag(args, "--oversubscription", network.flow);
  o.spine_oversubscription = oversubscription_flag(args, "--spine-oversubscription", network.flow);
  for (const char* flag : {"--leaf-nodes", "--rails"}) {
    if (args.has(flag) && !args.has("--spine-oversubscription")) {
      throw InputError(fmt::format(
          "{} needs --spine-oversubscription F (without a spine tier the leaves never limit)",
          flag));
    }
  }
  o.leaf_nodes = static_cast<int>(args.get_int("--leaf-nodes", 32, 1, 1 << 20));
  o.rail_optimized =
      args.get_choice("--rails", "optimized", {"optimized", "single"}) == "optimized";
}

}  // namespace

OptionSpec host_op_option() {
  return {"--host-op-us", "US",
          "host time to issue one op (us): each rank's host issues its ops in launch order and "
          "waits where the framework reads a device value (MoE token counts); for Programs a "
          "framework host issues (the training step, a Program file with host_issue); 0 = the "
          "host always ahead [the profile's host_op_us: 13.48 on Hopper, else 0]"};
}

HardwareProfile hardware_from_flags(const Args& args, std::string_view fallback) {
  HardwareProfile hw = load_hardware(args.get("--hardware", fallback));
  if (args.has("--attention-kernel")) {
    hw = select_attention_kernel(std::move(hw), args.get("--attention-kernel", ""),
                                 "--attention-kernel");
  }
  if (args.declares("--host-op-us") && args.has("--host-op-us")) {
    hw.host_op = args.get_number("--host-op-us", 0, 1e6) * 1e-6;
  }
  return hw;
}

OutputRequest read_output_request(const Args& args, const CommandContext& ctx) {
  OutputRequest req;
  req.hardware = hardware_from_flags(args, "h100-sxm");
  req.provenance = Provenance{ctx.command_line, req.hardware.name, hardware_hash(req.hardware)};
  req.trace_path = args.get("--trace", "");
  req.network.flow = args.get_choice("--network", "analytical", {"analytical", "flow"}) == "flow";
  read_flow_options(args, req.network);
  req.json = args.has("--json");
  return req;
}

TracedSimulation simulate_requested(Program program, const OutputRequest& request,
                                    const std::string& save_path,
                                    std::chrono::steady_clock::time_point started,
                                    OutputFiles& files) {
  if (!save_path.empty()) files.stage(save_path, program_to_text(program), "--save-program");
  return run_traced_simulation(std::move(program), request.hardware, request.provenance,
                               !request.trace_path.empty(), started, request.network);
}

int emit_outputs(const TracedSimulation& result, const OutputRequest& request,
                 const CommandContext& ctx, OutputFiles& files) {
  if (!request.trace_path.empty() && result.trace) {
    files.stage(request.trace_path, *result.trace, "--trace");
  }
  files.commit();
  if (request.json) {
    ctx.out << report_json(result, request.provenance).dump(2) << "\n";
  } else {
    ctx.out << report_text(result, request.provenance);
    if (!request.trace_path.empty()) {
      ctx.out << fmt::format("trace written to {} (open it in https://ui.perfetto.dev)\n",
                             request.trace_path);
    }
  }
  return 0;
}

}  // namespace meshsim
