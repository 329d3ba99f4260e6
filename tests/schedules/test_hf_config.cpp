#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/hf_config.hpp"
#include "schedules/model_catalog.hpp"
#include "sim/error.hpp"
#include "sim/json_fields.hpp"

using namespace meshsim;
using nlohmann::json;

namespace {

// data/hf/<name>/config.json: the Hub's config files (data/hf/README.md).
std::string hf_dir(std::string_view name) {
  return fmt::format("{}/data/hf/{}", MESHSIM_SOURCE_DIR, name);
}

std::string error_of(const json& j) {
  try {
    (void)model_from_hf_config(j, "config.json", "m");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A minimal Llama config (the Llama 3 8B shape) to change one field of.
json llama() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"hidden_size", 4096},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 8},
          {"intermediate_size", 14336},
          {"vocab_size", 128256},
          {"max_position_embeddings", 8192}};
}

}  // namespace

TEST_CASE("hf config: Llama 3 8B reads as the built-in llama3-8b, 8.03B parameters") {
  const LoadedModel m = load_any_model(hf_dir("Meta-Llama-3-8B"));
  CHECK(m.hf_architecture == "LlamaForCausalLM");
  CHECK(m.model.name == "Meta-Llama-3-8B");  // the folder's name
  // The same shape as the built-in (Llama 3 Herd, Table 3), so the same exact count: 32 x
  // 218,112,000 + 2 x 128,256 x 4,096 + 4,096 = 8,030,261,248 (the model card: 8.03B).
  TransformerModel builtin = *builtin_model("llama3-8b");
  builtin.name = m.model.name;
  CHECK(m.model == builtin);
  CHECK(count_parameters(m.model).total == 8'030'261'248);
  CHECK(m.ignored == std::vector<std::string>{"bos_token_id", "eos_token_id", "initializer_range",
                                              "pretraining_tp", "rms_norm_eps", "torch_dtype",
                                              "transformers_version", "use_cache"});
  CHECK(m.notes.empty());
  // The file itself works too, named after its folder.
  CHECK(load_any_model(hf_dir("Meta-Llama-3-8B") + "/config.json").model == m.model);
}

TEST_CASE("hf config: Mistral, Qwen2 and Qwen3 give the model cards' parameter counts") {
  // Mistral 7B: 32 x 218,112,000 + 2 x 32,000 x 4,096 + 4,096 = 7,241,732,096 (card: 7.24B).
  const LoadedModel mistral = load_any_model(hf_dir("Mistral-7B-v0.1"));
  CHECK(mistral.hf_architecture == "MistralForCausalLM");
  CHECK(count_parameters(mistral.model).total == 7'241'732'096);
  CHECK(mistral.model.seq_len == 32768);
  // Its 4,096-token sliding window is stated as not modelled.
  REQUIRE(mistral.notes.size() == 1);
  CHECK(mistral.notes[0].find("sliding_window 4096 is not modelled") != std::string::npos);
  // Qwen2 7B: per layer 2 x 3584^2 + 2 x 3584 x 512 + 3 x 3584 x 18944 + 2 x 3584 = 233,053,184;
  // 28 of them + 2 x 152,064 x 3,584 + 3,584 = 7,615,487,488 (card: 7.62B); its q, k, v biases,
  // 28 x (3584 + 2 x 512) = 129,024, are stated as left out.
  const LoadedModel qwen2 = load_any_model(hf_dir("Qwen2-7B"));
  CHECK(count_parameters(qwen2.model).total == 7'615'487'488);
  REQUIRE(qwen2.notes.size() == 1);
  CHECK(qwen2.notes[0].find("129024 parameters left out") != std::string::npos);
  // Qwen3 8B (head_dim 128 = 4096 / 32): 36 x 192,946,176 + 2 x 151,936 x 4,096 + 4,096 =
  // 8,190,726,144 (card: 8.2B); without the embedding and head 6,946,066,432 (card: 6.95B).
  const LoadedModel qwen3 = load_any_model(hf_dir("Qwen3-8B"));
  const ParameterCount c3 = count_parameters(qwen3.model);
  CHECK(c3.total == 8'190'726'144);
  CHECK(c3.total - c3.embedding - c3.output_head == 6'946'066'432);
  REQUIRE(qwen3.notes.size() == 1);
  CHECK(qwen3.notes[0].find("9216 parameters left out") != std::string::npos);  // 36 x 2 x 128
}

TEST_CASE("hf config: Mixtral and Qwen3-MoE configs give the model cards' parameter counts") {
  // Mixtral 8x7B: 32 layers of 8 SwiGLU experts of 14336 (top 2) and GQA attention; the card's
  // 46.7B total (mistral.ai/news/mixtral-of-experts), the same count as the built-in model.
  const LoadedModel mixtral = load_any_model(hf_dir("Mixtral-8x7B-v0.1"));
  REQUIRE(mixtral.model.moe);
  CHECK(mixtral.model.moe->experts == 8);
  CHECK(mixtral.model.moe->top_k == 2);
  CHECK(mixtral.model.moe->expert_ffn == 14336);
  const std::int64_t mixtral_total = count_parameters(mixtral.model).total;
  CHECK(mixtral_total == count_parameters(*builtin_model("mixtral-8x7b")).total);
  CHECK(static_cast<double>(mixtral_total) == doctest::Approx(46.7e9).epsilon(0.001));
  // Qwen3-30B-A3B: head_dim 128 over 32 heads of a 2048 hidden (kv_channels), 128 experts of
  // 768, top 8; the card's 30.5B total.
  const LoadedModel q30 = load_any_model(hf_dir("Qwen3-30B-A3B"));
  REQUIRE(q30.model.moe);
  CHECK(q30.model.kv_channels == 128);
  CHECK(q30.model.moe->experts == 128);
  const std::int64_t q30_total = count_parameters(q30.model).total;
  CHECK(q30_total == count_parameters(*builtin_model("qwen3-30b-a3b")).total);
  CHECK(static_cast<double>(q30_total) == doctest::Approx(30.5e9).epsilon(0.002));
}

TEST_CASE("hf config: MLA and attention-sink architectures are refused by name") {
  json deepseek = llama();
  deepseek["architectures"] = {"DeepseekV3ForCausalLM"};
  CHECK(error_of(deepseek).find("not supported yet: DeepseekV3ForCausalLM") != std::string::npos);
  json oss = llama();
  oss.erase("architectures");
  oss["model_type"] = "gpt_oss";
  CHECK(error_of(oss).find("not supported yet: GptOssForCausalLM") != std::string::npos);
  // An MoE config without its expert fields names the missing one.
  json qwen_moe = llama();
  qwen_moe["architectures"] = {"Qwen3MoeForCausalLM"};
  CHECK(error_of(qwen_moe).find("num_experts") != std::string::npos);
  // Layers without experts (mlp_only_layers) are not expressed.
  json sparse = qwen_moe;
  sparse["num_experts"] = 8;
  sparse["num_experts_per_tok"] = 2;
  sparse["moe_intermediate_size"] = 64;
  sparse["mlp_only_layers"] = {0};
  CHECK(error_of(sparse).find("mlp_only_layers") != std::string::npos);
}

TEST_CASE("hf config: bad fields name the field in the config's words") {
  json j = llama();
  j["architectures"] = {"BertModel"};
  CHECK(error_of(j).find("field 'architectures': expected one of LlamaForCausalLM") !=
        std::string::npos);
  j = llama();
  j.erase("architectures");
  CHECK(error_of(j).find("field 'architectures': missing") != std::string::npos);
  j = llama();
  j["num_key_value_heads"] = 5;
  CHECK(error_of(j).find("field 'num_key_value_heads': expected a divisor of "
                         "num_attention_heads (32)") != std::string::npos);
  j = llama();
  j["hidden_size"] = "4096";
  CHECK(error_of(j).find("field 'hidden_size'") != std::string::npos);
  j = llama();
  j.erase("vocab_size");
  CHECK(error_of(j).find("field 'vocab_size': missing") != std::string::npos);
  j = llama();
  j["hidden_act"] = "gelu";  // the layer is SwiGLU
  CHECK(error_of(j).find("field 'hidden_act': expected \"silu\"") != std::string::npos);
  j = llama();
  j["attention_dropout"] = 1.5;
  CHECK(error_of(j).find("field 'attention_dropout': expected a probability") != std::string::npos);
  j = llama();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", -2}};
  CHECK(error_of(j).find("rope_scaling.factor") != std::string::npos);
  j = llama();
  j["head_dim"] = 0;
  CHECK(error_of(j).find("field 'head_dim'") != std::string::npos);
  // Qwen3-0.6B style: heads x head_dim != hidden_size is the model's kv_channels.
  j["head_dim"] = 256;
  CHECK(model_from_hf_config(j, "config.json", "m").model.kv_channels == 256);
}

TEST_CASE("hf config: defaults and flags follow transformers") {
  json j = llama();
  j.erase("num_key_value_heads");  // LlamaConfig: defaults to num_attention_heads
  HfModel m = model_from_hf_config(j, "config.json", "m");
  CHECK(m.model.kv_heads == 32);
  CHECK_FALSE(m.model.tied_embeddings);  // tie_word_embeddings defaults to false
  j = llama();
  j["tie_word_embeddings"] = true;
  j["attention_bias"] = true;
  j["mlp_bias"] = true;
  m = model_from_hf_config(j, "config.json", "m");
  CHECK(m.model.tied_embeddings);
  CHECK(m.model.linear_bias);
  CHECK(m.notes.empty());
  CHECK(m.ignored.empty());
  // meshsim's own model JSON is not a Hugging Face config.
  CHECK_FALSE(is_hf_config(json{{"schema_version", 1}, {"name", "x"}, {"layers", 2}}));
  CHECK(is_hf_config(llama()));
}

TEST_CASE("hf config: a folder without config.json is an input error") {
  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("meshsim-hf-empty-{}", getpid());
  std::filesystem::create_directories(dir);
  std::string error;
  try {
    (void)load_any_model(dir.string());
  } catch (const InputError& e) {
    error = e.what();
  }
  CHECK(error.find("a directory without a config.json") != std::string::npos);
  std::filesystem::remove_all(dir);
  // Built-ins still load by name.
  CHECK(load_any_model("llama3-70b").model == *builtin_model("llama3-70b"));
}
