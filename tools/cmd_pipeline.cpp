#include <chrono>
#include <ostream>

#include <fmt/format.h>

#include "schedules/pipeline.hpp"
#include "sim/error.hpp"
#include "sim/program_json.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/pipeline_report.hpp"
#include "tools/simulate_outputs.hpp"
#include "tools/workload_flags.hpp"
#include "traces/schedule_diagram.hpp"

namespace meshsim {

int run_pipeline_command(std::span<const std::string> argv, const CommandContext& ctx) {
  const WorkloadFlags& flags = workload_flags("pipeline");
  std::vector<OptionSpec> specs = flags.specs(FlagUse::simulate);
  specs.push_back({"--diagram", "FILE.svg", "draw the schedule as SVG (ranks as rows, time as x)",
                   OutputKind::file});
  specs.push_back({"--save-program", "FILE", "write the schedule graph as JSON", OutputKind::file});
  for (auto& o : simulate_output_options()) specs.push_back(std::move(o));
  const Args args("pipeline", specs, argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(flags.simulate_help, flags.simulate_example);
    return 0;
  }
  const auto started = std::chrono::steady_clock::now();
  OutputRequest out = read_output_request(args, ctx);
  const PipelineConfig c =
      parse_pipeline_flags(args, out.hardware.gpus_per_node, FlagUse::simulate);
  const std::string diagram_path = args.get("--diagram", "");
  if (!diagram_path.empty() && !diagram_path.ends_with(".svg")) {
    throw InputError(fmt::format(
        "--diagram {}: expected a file name ending in .svg (the diagram is SVG)", diagram_path));
  }
  const std::string save_path = args.get("--save-program", "");

  OutputFiles files;
  const TracedSimulation result =
      simulate_requested(build_pipeline(c), out, save_path, started, files);
  const std::vector<int> peaks = peak_inflight(c.shape);
  if (!diagram_path.empty()) {
    files.stage(diagram_path, schedule_svg(result.program, result.timeline), "--diagram");
  }
  if (!out.trace_path.empty() && result.trace)
    files.stage(out.trace_path, *result.trace, "--trace");
  files.commit();
  if (out.json) {
    ctx.out << pipeline_report_json(result, out.provenance, peaks).dump(2) << "\n";
    return 0;
  }
  ctx.out << pipeline_report_text(result, out.provenance, peaks);
  ctx.out << schedule_text(result.program, result.timeline, 100);
  if (!diagram_path.empty()) ctx.out << fmt::format("diagram written to {}\n", diagram_path);
  if (!out.trace_path.empty()) {
    ctx.out << fmt::format("trace written to {} (open it in https://ui.perfetto.dev)\n",
                           out.trace_path);
  }
  return 0;
}

}  // namespace meshsim
