// meshsim model [NAME|FILE]: a model as JSON in the schema --model reads
// (schedules/model_catalog.hpp), to read or to copy as the starting point of a custom model; --list
// names the built-ins.
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "schedules/model_catalog.hpp"
#include "sim/error.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"

namespace meshsim {

int run_model_command(std::span<const std::string> argv, const CommandContext& ctx) {
  // The model comes first, as `meshsim model NAME [flags]`.
  const bool has_name = !argv.empty() && !argv[0].starts_with("-");
  const std::vector<OptionSpec> specs = {{"--list", "", "name the built-in models, one per line"}};
  const Args args("model", specs, has_name ? argv.subspan(1) : argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Print a model (a built-in name or a JSON file) as JSON in the schema --model reads: "
        "layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len, gated_mlp, "
        "tied_embeddings, norm, biases, position embedding, dropout, kv_channels, and the moe, "
        "mla and mtp_layers of Mixture-of-Experts models. Save it, edit it, and pass the file "
        "to --model.",
        "meshsim model llama3-8b > my-model.json");
    return 0;
  }
  if (args.has("--list")) {
    for (const auto& name : builtin_model_names()) ctx.out << name << "\n";
    return 0;
  }
  if (!has_name) {
    throw InputError(
        fmt::format("model: expected a model first: meshsim model NAME|FILE (built-ins: {})",
                    fmt::join(builtin_model_names(), ", ")));
  }
  ctx.out << to_json(load_model(argv[0])).dump(2) << "\n";
  return 0;
}

}  // namespace meshsim
