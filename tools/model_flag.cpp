#include "tools/model_flag.hpp"

#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "schedules/hf_config.hpp"

namespace meshsim {

TransformerModel load_model_flag(std::string_view value, std::ostream& err) {
  LoadedModel loaded = load_any_model(value);
  if (!loaded.hf_architecture.empty()) {
    err << fmt::format(
        "meshsim: --model {}: {} read as '{}'; ignored fields: {}\n", value, loaded.hf_architecture,
        loaded.model.name,
        loaded.ignored.empty() ? "none" : fmt::format("{}", fmt::join(loaded.ignored, ", ")));
    for (const auto& note : loaded.notes)
      err << fmt::format("meshsim: --model {}: {}\n", value, note);
  }
  return std::move(loaded.model);
}

}  // namespace meshsim
