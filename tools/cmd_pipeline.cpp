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
#include "traces/schedule_diagram.hpp"

namespace meshsim {

int run_pipeline_command(std::span<const std::string> argv, const CommandContext& ctx) {
  std::vector<OptionSpec> specs = {
      {"--schedule", "gpipe|1f1b|interleaved|zb-h1|zb-v|dualpipev", "pipeline schedule [1f1b]"},
      {"--stages", "P", "pipeline ranks [4]"},
      {"--microbatches", "M", "microbatches per step [8]"},
      {"--chunks", "V", "model chunks per rank (interleaved) [2 for interleaved]"},
      {"--group-size", "G", "interleaved: microbatches per group [P]"},
      {"--time-f", "SECONDS", "forward of one microbatch through one rank's share"},
      {"--time-b", "SECONDS", "input-gradient part of its backward"},
      {"--time-w", "SECONDS", "weight-gradient part of its backward"},
      {"--p2p-time", "SECONDS", "time of every p2p transfer (else the network model)"},
      {"--activation-bytes", "BYTES",
       "bytes per activation/gradient message [tokens x hidden x e]"},
      {"--tokens", "N", "tokens per microbatch of the stage workload [4096]"},
      {"--hidden", "H", "hidden size of the stage workload (one linear layer per chunk) [4096]"},
      {"--dtype", "bf16|fp16|fp32", "stage workload data type [bf16]"},
      {"--gpus-per-node", "G", "GPUs per node [the hardware profile's]"},
      {"--diagram", "FILE.svg", "draw the schedule as SVG (ranks as rows, time as x)"},
      {"--save-program", "FILE", "write the schedule graph as JSON"},
  };
  for (auto& o : simulate_output_options()) specs.push_back(std::move(o));
  const Args args("pipeline", specs, argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Build a pipeline-parallel schedule op by op, simulate it, and report its makespan, bubble "
        "and per-rank in-flight activations; optionally draw it.",
        "meshsim pipeline --schedule zb-h1 --stages 4 --microbatches 8 --time-f 1 --time-b 1 "
        "--time-w 1 --p2p-time 0 --diagram zbh1.svg");
    return 0;
  }
  const auto started = std::chrono::steady_clock::now();
  OutputRequest out = read_output_request(args, ctx);
  PipelineConfig c;
  const auto schedule = parse_pipeline_schedule(args.get_choice(
      "--schedule", "1f1b", {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-v", "dualpipev"}));
  c.shape.schedule = *schedule;
  c.shape.stages = static_cast<int>(args.get_int("--stages", 4, 1, 4096));
  c.shape.microbatches = static_cast<int>(args.get_int("--microbatches", 8, 1, 1 << 20));
  const int default_chunks = c.shape.schedule == PipelineSchedule::interleaved ? 2
                             : (c.shape.schedule == PipelineSchedule::zb_v ||
                                c.shape.schedule == PipelineSchedule::dualpipev)
                                 ? 2
                                 : 1;
  c.shape.chunks = static_cast<int>(args.get_int("--chunks", default_chunks, 1, 1024));
  c.shape.group_size = static_cast<int>(args.get_int("--group-size", 0, 1, 1 << 20));
  constexpr double kMaxSeconds = 1e6;
  c.time_f = args.get_number("--time-f", -1, kMaxSeconds);
  c.time_b = args.get_number("--time-b", -1, kMaxSeconds);
  c.time_w = args.get_number("--time-w", -1, kMaxSeconds);
  c.p2p_time = args.get_number("--p2p-time", -1, kMaxSeconds);
  c.activation_bytes = static_cast<std::int64_t>(args.get_number("--activation-bytes", 0, 1e15));
  c.tokens = args.get_int("--tokens", 4096, 1, std::int64_t{1} << 32);
  c.hidden = args.get_int("--hidden", 4096, 1, std::int64_t{1} << 20);
  c.dtype = *parse_dtype(args.get_choice("--dtype", "bf16", {"bf16", "fp16", "fp32"}));
  c.gpus_per_node =
      static_cast<int>(args.get_int("--gpus-per-node", out.hardware.gpus_per_node, 1, 1024));
  const std::string diagram_path = args.get("--diagram", "");
  const std::string save_path = args.get("--save-program", "");

  Program program = build_pipeline(c);
  OutputFiles files;
  if (!save_path.empty()) files.stage(save_path, program_to_text(program), "--save-program");
  const SimulationResult result = run_simulation(std::move(program), out.hardware, out.provenance,
                                                 !out.trace_path.empty(), started, out.network);
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
