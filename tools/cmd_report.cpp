// meshsim report: turn the JSON of `meshsim sweep --out results.json` into one self-contained
// HTML page (tools/report_html.hpp).
#include <ostream>
#include <string>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/json_fields.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/report_html.hpp"

namespace meshsim {

int run_report_command(std::span<const std::string> argv, const CommandContext& ctx) {
  const std::vector<OptionSpec> specs = {
      {"--html", "FILE", "write the report as one self-contained HTML page (required)",
       OutputKind::file},
  };
  // The results files come first; anything starting with "-" there is a flag (--help).
  std::size_t inputs = 0;
  while (inputs < argv.size() && !argv[inputs].empty() && argv[inputs][0] != '-') ++inputs;
  const bool has_input = inputs > 0;
  const Args args("report", specs, argv.subspan(inputs));
  if (args.help_requested()) {
    std::string help = args.help_text(
        "Render the results of 'meshsim sweep --out RESULTS.json' as one HTML page with no "
        "scripts and nothing fetched from the network: the step time of every plan that fits, "
        "the memory of every plan against the GPU's capacity (OOM plans marked), the "
        "Pareto frontier of step time against memory per GPU, the critical-path breakdown of the "
        "five fastest plans and a table of the top 20. Several results files (sweeps of one "
        "model at different GPU counts, e.g. --gpus 256, 512, 1024) add the step time vs GPUs "
        "frontier; the rest of the page is the first file's.",
        "meshsim sweep --model llama3-70b --gpus 1024 --out results.json && meshsim report "
        "results.json --html report.html");
    const std::string generic = "usage: meshsim report [flags]";
    if (help.starts_with(generic)) {
      help.replace(0, generic.size(),
                   "usage: meshsim report RESULTS.json [MORE.json ...] --html FILE");
    }
    ctx.out << help;
    return 0;
  }
  if (!has_input) {
    throw InputError(
        "report: expected the sweep results file first: meshsim report RESULTS.json --html "
        "FILE");
  }
  if (!args.has("--html")) {
    throw InputError(
        "report: --html FILE is required (where to write the page): meshsim report RESULTS.json "
        "--html report.html");
  }
  const std::string html_path = args.get("--html", "");
  if (html_path.empty()) throw InputError("report: --html expects a file name");
  std::vector<std::pair<nlohmann::json, std::string>> sweeps;
  for (std::size_t i = 0; i < inputs; ++i) {
    sweeps.emplace_back(parse_json_text(read_text_file(argv[i]), argv[i]), argv[i]);
  }
  const std::string page = sweep_report_html(sweeps);
  OutputFiles files;
  files.stage(html_path, page, "--html");
  files.commit();
  ctx.out << fmt::format("report written to {}\n", html_path);
  return 0;
}

}  // namespace meshsim
