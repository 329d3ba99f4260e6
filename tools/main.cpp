// meshsim: simulate distributed LLM training steps. Dispatches to the sub-commands and turns
// errors into one line on stderr with the documented exit codes (2: bad input, 3: internal).
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "tools/commands.hpp"
#include "tools/exit_codes.hpp"
#include "tools/field_flags.hpp"
#include "tools/memory_policy.hpp"

namespace {

struct SubCommand {
  const char* name;
  const char* summary;
  int (*run)(std::span<const std::string>, const meshsim::CommandContext&);
};

constexpr SubCommand kCommands[] = {
    {"ring-attention", "simulate a ring-attention (context-parallel) step",
     meshsim::run_ring_attention_command},
    {"sweep", "search the parallel plans of a model on N GPUs: memory, step time, MFU, ranked",
     meshsim::run_sweep_command},
    {"pipeline", "simulate a pipeline-parallel schedule (gpipe, 1f1b, interleaved, zb-h1, ...)",
     meshsim::run_pipeline_command},
    {"step", "simulate a whole training step of a transformer (tp, pp, cp, dp; memory, MFU)",
     meshsim::run_step_command},
    {"explain",
     "rank the inputs that move a step's time most (each profile number and plan knob +-10 %)",
     meshsim::run_explain_command},
    {"tp-linear", "simulate a tensor-parallel (column or row) linear layer, forward and backward",
     meshsim::run_tp_linear_command},
    {"collective", "time a collective nccl-tests style (time, algbw, busbw; --sweep sizes)",
     meshsim::run_collective_command},
    {"simulate", "simulate a saved schedule graph (Program JSON or Chakra execution trace)",
     meshsim::run_simulate_command},
    {"export", "write a workload's schedule graph as a Chakra execution trace (one file per rank)",
     meshsim::run_export_command},
    {"validate", "run a workload's schedule graph for real under MPI and measure it",
     meshsim::run_validate_command},
    {"calibrate", "fit a hardware profile to microbenchmarks run for real under MPI",
     meshsim::run_calibrate_command},
    {"report", "render sweep results (sweep --out FILE.json) as one HTML page",
     meshsim::run_report_command},
    {"compare", "simulate published training runs and compare with what they measured",
     meshsim::run_compare_command},
    {"hardware", "print a hardware profile as JSON with the public source of every figure",
     meshsim::run_hardware_command},
    {"model", "print a model (built-in or file) as JSON in the schema --model reads",
     meshsim::run_model_command},
};

void print_usage(std::ostream& out) {
  out << "usage: meshsim <command> [flags]\n\n"
         "meshsim " MESHSIM_VERSION
         " simulates distributed LLM training steps: how long a step takes on a mesh,\n"
         "where the time goes, and a Chrome/Perfetto trace of every op.\n\ncommands:\n";
  for (const auto& c : kCommands) out << fmt::format("  {:<16} {}\n", c.name, c.summary);
  out << "\nrun 'meshsim <command> --help' for its flags.\n\nexample:\n"
         "  meshsim ring-attention --cp 8 --seq 131072 --trace ring.json\n";
}

}  // namespace

int main(int argc, char** argv) {
  meshsim::keep_freed_memory();
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command_line = "meshsim";
  for (const auto& a : args) command_line += " " + a;
  if (args.empty()) {
    print_usage(std::cerr);
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(std::cout);
    return 0;
  }
  if (args[0] == "--version") {
    std::cout << "meshsim " MESHSIM_VERSION "\n";
    return 0;
  }
  const meshsim::CommandContext ctx{command_line, std::cout, std::cerr};
  for (const auto& c : kCommands) {
    if (args[0] != c.name) continue;
    try {
      return c.run(std::span<const std::string>(args).subspan(1), ctx);
    } catch (const meshsim::InputError& e) {
      // One write per line: under mpirun every rank's stderr shares the terminal.
      std::cerr << fmt::format("meshsim: error: {}\n", meshsim::in_flag_words(c.name, e.what()));
      return meshsim::kExitBadInput;
    } catch (const std::bad_alloc&) {
      std::cerr << "meshsim: error: out of memory\n";
      return meshsim::kExitOutOfMemory;
    } catch (const std::exception& e) {
      std::cerr << fmt::format("meshsim: internal error: {}\n", e.what());
      return meshsim::kExitInternalError;
    }
  }
  std::cerr << fmt::format("meshsim: error: unknown command '{}' (see meshsim --help)\n", args[0]);
  return 2;
}
