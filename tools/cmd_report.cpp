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
  // The results file comes first; anything starting with "-" there is a flag (--help).
  const bool has_input = !argv.empty() && !argv[0].empty() && argv[0][0] != '-';
  const Args args("report", specs, has_input ? argv.subspan(1) : argv);
  if (args.help_requested()) {
    std::string help = args.help_text(
        "Render the results of 'meshsim sweep --out RESULTS.json' as one HTML page with no "
        "scripts and nothing fetched from the network: the step time of every plan that fits, "
        "the memory of every plan against the GPU's capacity (OOM plans marked), the "
        "critical-path breakdown of the five fastest plans and a table of the top 20.",
        "meshsim sweep --model llama3-70b --gpus 1024 --out results.json && meshsim report "
        "results.json --html report.html");
    const std::string generic = "usage: meshsim report [flags]";
    if (help.starts_with(generic)) {
      help.replace(0, generic.size(), "usage: meshsim report RESULTS.json --html FILE");
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
  const std::string input = argv[0];
  const std::string html_path = args.get("--html", "");
  if (html_path.empty()) throw InputError("report: --html expects a file name");
  const std::string page = sweep_report_html(parse_json_text(read_text_file(input), input), input);
  OutputFiles files;
  files.stage(html_path, page, "--html");
  files.commit();
  ctx.out << fmt::format("report written to {}\n", html_path);
  return 0;
}

}  // namespace meshsim
