#include <chrono>
#include <optional>

#include <fmt/format.h>
#include <ostream>

#include "sim/error.hpp"
#include "sim/program_json.hpp"
#include "tools/commands.hpp"
#include "tools/simulate_outputs.hpp"
#include "traces/chakra_files.hpp"
#include "traces/chakra_reader.hpp"

namespace meshsim {

int run_simulate_command(std::span<const std::string> argv, const CommandContext& ctx) {
  std::vector<OptionSpec> specs = {
      {"--program", "FILE", "a schedule graph saved with --save-program"},
      {"--chakra", "DIR",
       "a Chakra execution trace instead: the folder of its <prefix>.<rank>.et files (with "
       "comm_group.json when its collectives name process groups), or DIR/<prefix>"},
  };
  for (auto& o : simulate_output_options()) specs.push_back(std::move(o));
  specs.push_back(host_op_option());
  const Args args("simulate", specs, argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Simulate a saved schedule graph (Program JSON, or a Chakra execution trace such as "
        "meshsim export writes) on a hardware profile.",
        "meshsim simulate --program ring.program.json --hardware h200-sxm --trace ring.json");
    return 0;
  }
  const std::string chakra = args.get("--chakra", "");
  const std::string path = chakra.empty() ? args.get("--program", "") : chakra;
  if (!args.has("--program") && !args.has("--chakra")) {
    throw InputError("--program FILE is required (or --chakra DIR)");
  }
  if (args.has("--program") && args.has("--chakra")) {
    throw InputError("--program and --chakra are alternatives: give one of them");
  }
  if (path.empty())
    throw InputError(chakra.empty() ? "--program: empty path" : "--chakra: empty path");
  OutputRequest out = read_output_request(args, ctx);
  Program program = chakra.empty() ? load_program_file(path)
                                   : program_from_chakra(read_chakra_files(path), out.hardware);
  const auto started = std::chrono::steady_clock::now();
  std::optional<TracedSimulation> result;
  try {
    result = run_traced_simulation(std::move(program), out.hardware, out.provenance,
                                   !out.trace_path.empty(), started, out.network);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));  // name the file at fault
  }
  OutputFiles files;
  return emit_outputs(*result, out, ctx, files);
}

}  // namespace meshsim
