#pragma once
// Hugging Face model configs (the Hub's config.json) as meshsim models, for the dense decoder
// architectures whose layers are meshsim's (RMSNorm, SwiGLU, RoPE, GQA): LlamaForCausalLM,
// MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM. Fields read (transformers' names):
//   hidden_size -> hidden, num_hidden_layers -> layers, num_attention_heads -> heads,
//   num_key_value_heads -> kv_heads (default: num_attention_heads, as transformers),
//   intermediate_size -> ffn_hidden, vocab_size -> vocab, tie_word_embeddings -> tied_embeddings
//   (default false), max_position_embeddings -> seq_len, attention_dropout -> dropout (> 0),
//   attention_bias and mlp_bias (Llama: both -> linear_bias), head_dim (must be hidden_size /
//   num_attention_heads), rope_theta and rope_scaling (checked; RoPE's cost does not depend on
//   them), architectures and model_type.
// Every other field is reported as ignored. Mixture-of-experts and MLA architectures (Mixtral,
// Qwen2/3-MoE, DeepSeek-V2/V3, GPT-OSS) are refused by name.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "schedules/model_catalog.hpp"

namespace meshsim {

// A Hugging Face config rather than meshsim's model JSON: it has "architectures" or
// "model_type", or "hidden_size" and "num_hidden_layers", and no "schema_version".
bool is_hf_config(const nlohmann::json& j);

struct HfModel {
  TransformerModel model;
  std::string architecture;          // "LlamaForCausalLM"
  std::vector<std::string> ignored;  // fields not read, in file order ("torch_dtype", ...)
  std::vector<std::string> notes;    // fields read but approximated (Qwen2's q/k/v biases)
};

// The model of a config (origin names the file in errors; `name` becomes the model's name).
// Throws InputError naming the field, or "not supported yet: <architecture>".
HfModel model_from_hf_config(const nlohmann::json& j, std::string_view origin,
                             std::string_view name);

struct LoadedModel {
  TransformerModel model;
  std::string hf_architecture;  // empty unless read from a Hugging Face config
  std::vector<std::string> ignored;
  std::vector<std::string> notes;
};

// load_model (a built-in or meshsim's model JSON), or a Hugging Face config.json, or a directory
// holding one (the model is then named after the directory).
LoadedModel load_any_model(std::string_view name_or_path);

}  // namespace meshsim
