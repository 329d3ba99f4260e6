// meshsim hardware [NAME|FILE]: a hardware profile as JSON (every figure and, for the built-ins,
// its public source), to read or to copy as the starting point of a custom profile; --list names
// the built-ins.
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "sim/compute_model.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"

namespace meshsim {

int run_hardware_command(std::span<const std::string> argv, const CommandContext& ctx) {
  // The profile comes first, as `meshsim hardware NAME [flags]`.
  const bool has_name = !argv.empty() && !argv[0].starts_with("-");
  const std::vector<OptionSpec> specs = {
      {"--list", "", "name the built-in profiles, one per line"},
      {"--attention-kernel", "NAME", "the profile with this attention kernel family selected"},
  };
  const Args args("hardware", specs, has_name ? argv.subspan(1) : argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Print a hardware profile (a built-in name or a JSON file) as JSON in the schema "
        "--hardware reads: peaks, memory, efficiency tables, attention kernel families, network, "
        "and for the built-ins the public source of every figure (\"sources\"). Save it, edit "
        "it, and pass the file to --hardware.",
        "meshsim hardware a100-sxm > my-a100.json");
    return 0;
  }
  if (args.has("--list")) {
    for (const auto& name : builtin_hardware_names()) ctx.out << name << "\n";
    return 0;
  }
  if (!has_name) {
    throw InputError(fmt::format(
        "hardware: expected a profile first: meshsim hardware NAME|FILE (built-ins: {})",
        fmt::join(builtin_hardware_names(), ", ")));
  }
  HardwareProfile hw = load_hardware(argv[0]);
  if (args.has("--attention-kernel")) {
    hw = select_attention_kernel(std::move(hw), args.get("--attention-kernel", ""),
                                 "--attention-kernel");
  }
  ctx.out << to_json(hw).dump(2) << "\n";
  return 0;
}

}  // namespace meshsim
