#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include <fmt/format.h>

#include "tools/model_flag.hpp"

using namespace meshsim;

TEST_CASE("--model: a Hugging Face config says what it read and what it ignored") {
  std::ostringstream err;
  const std::string dir = fmt::format("{}/data/hf/Qwen2-7B", MESHSIM_SOURCE_DIR);
  const TransformerModel m = load_model_flag(dir, err);
  CHECK(m.name == "Qwen2-7B");
  CHECK(m.hidden == 3584);
  // One line for the architecture and the ignored fields (sorted), one for the q/k/v biases:
  // 28 layers x (3584 + 2 x 4 x 128) = 129,024 parameters.
  CHECK(err.str() ==
        fmt::format("meshsim: --model {0}: Qwen2ForCausalLM read as 'Qwen2-7B'; ignored fields: "
                    "bos_token_id, eos_token_id, initializer_range, max_window_layers, "
                    "rms_norm_eps, torch_dtype, transformers_version, use_cache\n"
                    "meshsim: --model {0}: Qwen2's q, k, v biases are not modelled (129024 "
                    "parameters left out)\n",
                    dir));
}

TEST_CASE("--model: built-ins and meshsim's model JSON load quietly") {
  std::ostringstream err;
  CHECK(load_model_flag("llama3-8b", err) == *builtin_model("llama3-8b"));
  CHECK(err.str().empty());
}
