// meshsim compare RUNS.json: published training runs simulated and set against what was measured
// (tools/compare_runs; the file's schema in data/published/README.md).
#include <filesystem>
#include <ostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/error.hpp"
#include "sim/json_fields.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"
#include "tools/compare_runs.hpp"
#include "tools/published_configs.hpp"
#include "tools/published_unread.hpp"

namespace meshsim {
namespace {

// The companion configs file: the flag's, none for 'none', else published_configs.json in the
// runs file's folder when it exists.
std::string configs_path(const std::string& runs_path, const std::string& flag) {
  if (flag == "none") return {};
  if (!flag.empty()) return flag;
  const auto beside = std::filesystem::path(runs_path).parent_path() / "published_configs.json";
  return std::filesystem::exists(beside) ? beside.string() : std::string();
}

}  // namespace

int run_compare_command(std::span<const std::string> argv, const CommandContext& ctx) {
  if (names_flag(argv, "--kineto")) return run_compare_kineto(argv, ctx);
  // The runs file comes first, as `meshsim compare RUNS.json [flags]`.
  const bool has_file = !argv.empty() && !argv[0].starts_with("-");
  const std::vector<OptionSpec> specs = {
      {"--configs", "FILE",
       "companion-source fields for rows that leave them null [published_configs.json beside "
       "RUNS.json, when present; 'none' for no file]"},
      {"--table", "NAME", "only the rows of this table (e.g. zero_bubble_table4, memory_rows)"},
      {"--json", "", "print one JSON object: {rows: [...], tables: {...}}"},
      {"--markdown", "", "print one Markdown table of the per-table summaries"},
      {"--kineto", "FILE",
       "instead: set a profiled step (PyTorch profiler trace) beside its simulation (its flags: "
       "compare --kineto FILE --help)"},
  };
  const Args args("compare", specs, has_file ? argv.subspan(1) : argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Simulate every published training run of RUNS.json as `meshsim step` would, in the "
        "run's own metric (iteration time, MFU, TFLOP/s or samples/s per GPU with the source's "
        "FLOP formula), and compare with what was measured: per row the error, per table the "
        "mean absolute percentage error, the worst row and the pairs kept in order. Rows meshsim "
        "cannot express are listed as skipped with the reason.",
        "meshsim compare data/published/published_runs.json --table zero_bubble_table4");
    return 0;
  }
  if (!has_file) {
    throw InputError("compare: expected the runs file first: meshsim compare RUNS.json [flags]");
  }
  const std::string& path = argv[0];
  PublishedRuns runs = read_published_runs(parse_json_text(read_text_file(path), path), path);
  for (const PublishedRun& run : runs.rows) {
    for (const std::string& field : unread_fields(run)) {
      ctx.err << fmt::format(
          "meshsim: warning: {}: row {}: field '{}' is not one meshsim reads (misspelled?); the "
          "row runs without it\n",
          path, run.id, field);
    }
  }
  const std::string configs = configs_path(path, args.get("--configs", ""));
  if (!configs.empty()) {
    apply_published_configs(runs, parse_json_text(read_text_file(configs), configs), configs);
  }
  if (args.has("--json") && args.has("--markdown")) {
    throw InputError("--json and --markdown are alternatives: choose one output");
  }
  const std::string table = args.get("--table", "");
  if (!table.empty()) {
    std::set<std::string> tables;
    for (const auto& r : runs.rows) tables.insert(r.table);
    if (!runs.memory_rows.empty()) tables.insert("memory_rows");
    if (!tables.contains(table)) {
      throw InputError(fmt::format("--table {}: no rows of that table in {} (tables: {})", table,
                                   path, fmt::join(tables, ", ")));
    }
  }
  const Comparison c = compare_published(runs, table);
  if (c.rows.empty()) {
    throw InputError(fmt::format("--table {}: no rows of that table in {}", table, path));
  }
  if (args.has("--json")) {
    ctx.out << comparison_json(c).dump(2) << "\n";
  } else if (args.has("--markdown")) {
    ctx.out << comparison_markdown(c);
  } else {
    ctx.out << comparison_text(c);
  }
  return 0;
}

}  // namespace meshsim
