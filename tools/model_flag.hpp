#pragma once
// --model NAME|FILE|DIR for the commands that take a transformer model: a built-in, meshsim's
// model JSON, or a Hugging Face config.json (or its folder), schedules/hf_config.hpp.
#include <iosfwd>
#include <string_view>

#include "schedules/model_catalog.hpp"

namespace meshsim {

// The model; for a Hugging Face config, one line on `err` naming the architecture read and the
// fields ignored, and one per approximation.
TransformerModel load_model_flag(std::string_view value, std::ostream& err);

}  // namespace meshsim
