// meshsim export: write the Program a workload's flags describe as a Chakra execution trace (one
// file per rank, as ASTRA-sim reads them; traces/chakra_writer.hpp), without simulating it.
#include <filesystem>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/training_step.hpp"
#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/simulate_outputs.hpp"
#include "tools/step_request.hpp"
#include "tools/workload_flags.hpp"
#include "traces/chakra_files.hpp"
#include "traces/chakra_writer.hpp"
#include "validate/check/workload_registry.hpp"

namespace meshsim {
namespace {

std::vector<OptionSpec> export_options(std::string_view workload) {
  std::vector<OptionSpec> specs = {
      {"--chakra", "DIR",
       "write the Chakra trace into DIR: <prefix>.<rank>.et per rank and comm_group.json "
       "(required)"},
      {"--prefix", "NAME", "file name prefix of the rank files [the workload's name]"},
  };
  if (workload == "step") {
    for (auto& o : step_flag_options()) specs.push_back(std::move(o));
  } else {
    for (auto& o : workload_flags(workload).specs(FlagUse::simulate)) specs.push_back(std::move(o));
    for (auto& o : simulate_output_options()) specs.push_back(std::move(o));
  }
  return specs;
}

// The Program of the workload's flags; the step builds every rank (a Chakra trace has one file
// per rank, so the step's folding of identical tp and dp ranks is off).
Program export_program(std::string_view workload, const Args& args, const OutputRequest& out,
                       const CommandContext& ctx) {
  if (workload != "step") {
    const WorkloadFlags& flags = workload_flags(workload);
    return build_program(flags.parse(args, out.hardware.gpus_per_node, FlagUse::simulate));
  }
  StepRequest req = read_step_request(args, out, ctx.err);
  req.plan.fold_dp = false;
  req.plan.fold_tp = false;
  return build_training_step(req.model, req.plan, out.hardware.gpus_per_node);
}

std::string_view workload_of(std::span<const std::string>& argv) {
  if (argv.empty() || argv.front().starts_with("-")) return "step";
  const std::string& name = argv.front();
  std::string names = "step";
  for (const auto& w : workload_flag_tables()) {
    if (w.name == name) {
      argv = argv.subspan(1);
      return w.name;
    }
    names += fmt::format(", {}", w.name);
  }
  if (name != "step") {
    throw InputError(fmt::format("unknown workload '{}' (expected one of {})", name, names));
  }
  argv = argv.subspan(1);
  return "step";
}

}  // namespace

int run_export_command(std::span<const std::string> argv, const CommandContext& ctx) {
  const std::string_view workload = workload_of(argv);
  const Args args("export", export_options(workload), argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Write a workload's schedule graph as a Chakra execution trace (MLCommons Chakra "
        "et_def.proto: one <prefix>.<rank>.et file per rank, as ASTRA-sim reads them) with its "
        "process groups in comm_group.json. The workload is the first word (step, "
        "ring-attention, pipeline, tp-linear; step when none) and takes that command's flags; "
        "the step builds every rank. meshsim simulate --chakra DIR reads the trace back.",
        "meshsim export --chakra llama-et --model llama3-8b --gpus 16 --tp 4 --pp 2 --dp 2 "
        "--gbs 16");
    return 0;
  }
  const std::string dir = args.get("--chakra", "");
  if (dir.empty()) throw InputError("--chakra DIR is required");
  const OutputRequest out = read_output_request(args, ctx);
  if (!out.trace_path.empty()) throw InputError("--trace: export writes no Chrome trace");
  const std::string prefix = args.get("--prefix", workload);
  if (prefix.empty() || prefix.find('/') != std::string::npos) {
    throw InputError(fmt::format("--prefix expects a file name prefix, got '{}'", prefix));
  }
  check_output_dir(dir, "--chakra");
  const Program program = export_program(workload, args, out, ctx);
  const CommPlan plan = validate_program(program);
  const Durations durations = estimate_durations(program, plan, out.hardware);
  const ChakraTrace trace = program_to_chakra(program, durations.ops);

  std::error_code ec;
  const std::string stale = chakra_rank_path(dir, prefix, static_cast<int>(trace.ranks.size()));
  if (std::filesystem::exists(stale, ec)) {  // would be read as part of this trace
    throw InputError(fmt::format(
        "--chakra {}: {} is there from another trace of more ranks; remove the folder's old "
        "rank files or give another --prefix",
        dir, stale));
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(fmt::format("--chakra {}: cannot create: {}", dir, ec.message()));
  OutputFiles files;
  std::size_t bytes = 0;
  for (std::size_t r = 0; r < trace.ranks.size(); ++r) {
    files.stage(chakra_rank_path(dir, prefix, static_cast<int>(r)), trace.ranks[r], "--chakra");
    bytes += trace.ranks[r].size();
  }
  const std::string groups = (std::filesystem::path(dir) / kChakraCommGroupFile).string();
  files.stage(groups, trace.comm_groups, "--chakra");
  files.commit();
  if (out.json) {
    nlohmann::ordered_json j;
    j["chakra"] = dir;
    nlohmann::ordered_json paths = nlohmann::ordered_json::array();
    for (std::size_t r = 0; r < trace.ranks.size(); ++r) {
      paths.push_back(chakra_rank_path(dir, prefix, static_cast<int>(r)));
    }
    j["files"] = paths;
    j["ranks"] = trace.ranks.size();
    j["ops"] = program.ops.size();
    j["bytes"] = bytes;
    j["comm_groups"] = groups;
    ctx.out << j.dump(2) << "\n";
  } else {
    ctx.out << fmt::format(
        "wrote {} Chakra rank files ({} ops, {} bytes) as {} .. {} and {}\n", trace.ranks.size(),
        program.ops.size(), bytes, chakra_rank_path(dir, prefix, 0),
        chakra_rank_path(dir, prefix, static_cast<int>(trace.ranks.size()) - 1), groups);
  }
  return 0;
}

}  // namespace meshsim
