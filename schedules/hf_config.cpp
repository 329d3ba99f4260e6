#include "schedules/hf_config.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/json_fields.hpp"

namespace meshsim {
namespace {

using json = nlohmann::json;

// architectures[0] and model_type of the architectures read here: the dense decoders, then the
// mixture-of-experts ones whose attention is theirs (kMoeFirst on).
constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kDense = {{
    {"LlamaForCausalLM", "llama"},
    {"MistralForCausalLM", "mistral"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen3ForCausalLM", "qwen3"},
    {"MixtralForCausalLM", "mixtral"},
    {"Qwen2MoeForCausalLM", "qwen2_moe"},
    {"Qwen3MoeForCausalLM", "qwen3_moe"},
}};
constexpr std::size_t kMoeFirst = 4;
// Multi-head latent attention and attention sinks: not read yet (built-in models instead).
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kNotYet = {{
    {"DeepseekV2ForCausalLM", "deepseek_v2"},
    {"DeepseekV3ForCausalLM", "deepseek_v3"},
    {"GptOssForCausalLM", "gpt_oss"},
}};

// The fields model_from_hf_config reads; the others are reported as ignored.
constexpr std::array<std::string_view, 27> kRead = {
    "architectures",
    "model_type",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "vocab_size",
    "tie_word_embeddings",
    "max_position_embeddings",
    "attention_dropout",
    "attention_bias",
    "mlp_bias",
    "head_dim",
    "rope_theta",
    "rope_scaling",
    "num_local_experts",
    "num_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "decoder_sparse_step",
    "mlp_only_layers",
    "norm_topk_prob",
    "hidden_act",
    "sliding_window",
    "use_sliding_window",
};

template <std::size_t N>
std::string_view lookup(const std::array<std::pair<std::string_view, std::string_view>, N>& table,
                        std::string_view architecture, std::string_view model_type) {
  for (const auto& [arch, type] : table) {
    if (architecture == arch || (architecture.empty() && model_type == type)) return arch;
  }
  return {};
}

std::string dense_names() {
  std::string names;
  for (const auto& [arch, type] : kDense) names += (names.empty() ? "" : ", ") + std::string(arch);
  return names;
}

bool is_moe_architecture(std::string_view architecture) {
  for (std::size_t i = kMoeFirst; i < kDense.size(); ++i) {
    if (kDense[i].first == architecture) return true;
  }
  return false;
}

// The architecture: architectures[0], else the one model_type names.
std::string architecture_of(const JsonField& top, std::string_view origin) {
  std::string architecture, model_type;
  if (!top.has("architectures") && !top.has("model_type")) {
    throw InputError(
        fmt::format("{}: field 'architectures': missing (a Hugging Face config names "
                    "its architecture: one of {})",
                    origin, dense_names()));
  }
  if (top.has("architectures")) {
    const JsonField a = top["architectures"];
    if (!a.raw().is_array() || a.raw().empty() || !a.raw()[0].is_string()) {
      a.fail("a list of architecture names (\"LlamaForCausalLM\")");
    }
    architecture = a.raw()[0].get<std::string>();
  }
  if (top.has("model_type")) model_type = top["model_type"].as_string();
  if (const auto dense = lookup(kDense, architecture, model_type); !dense.empty()) {
    return std::string(dense);
  }
  if (const auto moe = lookup(kNotYet, architecture, model_type); !moe.empty()) {
    throw InputError(
        fmt::format("{}: not supported yet: {} (multi-head latent attention or attention "
                    "sinks; meshsim reads {}; the built-in deepseek-v3 and gpt-oss-120b model "
                    "those)",
                    origin, moe, dense_names()));
  }
  const JsonField named = top.has("architectures") ? top["architectures"] : top["model_type"];
  named.fail(fmt::format("one of {} (Hugging Face decoders), got '{}'", dense_names(),
                         architecture.empty() ? model_type : architecture));
}

bool flag_of(const JsonField& top, std::string_view key) {
  return top.has(key) && !top[key].raw().is_null() && top[key].as_bool();
}

// RoPE's parameters change no FLOP or byte: checked for type only.
void check_rope(const JsonField& top) {
  if (top.has("rope_theta")) top["rope_theta"].as_positive();
  if (top.has("rope_scaling")) {
    const JsonField s = top["rope_scaling"];
    if (!s.raw().is_null() && !s.raw().is_object()) s.fail("null or an object");
    if (s.raw().is_object() && s.has("factor")) s["factor"].as_positive();
  }
}

// The activation and dropout the layer runs: SwiGLU (silu), a dropout probability in [0, 1).
void check_layer_fields(const JsonField& top) {
  if (top.has("hidden_act") && top["hidden_act"].as_string() != "silu") {
    top["hidden_act"].fail("\"silu\" (the SwiGLU MLP these architectures run)");
  }
  if (top.has("attention_dropout") && !top["attention_dropout"].raw().is_null()) {
    const double p = top["attention_dropout"].as_number();
    if (p < 0 || p >= 1) top["attention_dropout"].fail("a probability in [0, 1)");
  }
}

// The shape fields, checked in the config's own words.
void read_shape(const JsonField& top, TransformerModel& m) {
  constexpr std::int64_t kMax = std::int64_t{1} << 30;
  m.hidden = top["hidden_size"].as_int(1, kMax);
  m.layers = static_cast<int>(top["num_hidden_layers"].as_int(1, 65536));
  m.heads = top["num_attention_heads"].as_int(1, m.hidden);
  m.kv_heads = top.has("num_key_value_heads") && !top["num_key_value_heads"].raw().is_null()
                   ? top["num_key_value_heads"].as_int(1, m.heads)
                   : m.heads;
  m.ffn_hidden = top["intermediate_size"].as_int(1, kMax);
  m.vocab = top["vocab_size"].as_int(1, kMax);
  m.seq_len = top["max_position_embeddings"].as_int(1, kMax);
  if (m.heads % m.kv_heads != 0) {
    top["num_key_value_heads"].fail(fmt::format("a divisor of num_attention_heads ({})", m.heads));
  }
  // A head size other than hidden / heads (Qwen3) is the model's kv_channels.
  if (top.has("head_dim") && !top["head_dim"].raw().is_null()) {
    const std::int64_t d = top["head_dim"].as_int(1, kMax);
    if (d != m.hidden / m.heads || m.hidden % m.heads != 0) m.kv_channels = d;
  }
  if (m.kv_channels == 0 && m.hidden % m.heads != 0) {
    top["num_attention_heads"].fail(
        fmt::format("a divisor of hidden_size ({}) when the config gives no head_dim", m.hidden));
  }
}

// The experts of Mixtral (num_local_experts of intermediate_size) and Qwen2/3-MoE (num_experts
// of moe_intermediate_size, Qwen2-MoE's one shared expert of shared_expert_intermediate_size);
// every layer an MoE layer (decoder_sparse_step 1, no mlp_only_layers, as the released models).
MoeBlock read_moe(const JsonField& top, const TransformerModel& m, std::string_view architecture) {
  constexpr std::int64_t kMax = std::int64_t{1} << 30;
  MoeBlock moe;
  const bool mixtral = architecture == "MixtralForCausalLM";
  moe.experts =
      static_cast<int>(top[mixtral ? "num_local_experts" : "num_experts"].as_int(1, 65536));
  moe.top_k = static_cast<int>(top["num_experts_per_tok"].as_int(1, moe.experts));
  moe.expert_ffn = mixtral ? m.ffn_hidden : top["moe_intermediate_size"].as_int(1, kMax);
  if (top.has("shared_expert_intermediate_size") &&
      !top["shared_expert_intermediate_size"].raw().is_null()) {
    const std::int64_t fs = top["shared_expert_intermediate_size"].as_int(0, kMax);
    if (fs > 0) {
      moe.shared_experts = 1;
      moe.shared_ffn = fs;
    }
  }
  if (top.has("decoder_sparse_step") && top["decoder_sparse_step"].as_int(1, 65536) != 1) {
    top["decoder_sparse_step"].fail("1 (an MoE block in every layer)");
  }
  if (top.has("mlp_only_layers") && !top["mlp_only_layers"].raw().is_null() &&
      !(top["mlp_only_layers"].raw().is_array() && top["mlp_only_layers"].raw().empty())) {
    top["mlp_only_layers"].fail("an empty list (an MoE block in every layer)");
  }
  return moe;
}

// Biases and norms meshsim's layer does not have, stated with the parameters they leave out.
std::vector<std::string> approximations(const JsonField& top, const TransformerModel& m,
                                        std::string_view architecture) {
  std::vector<std::string> notes;
  if (architecture == "Qwen2ForCausalLM") {
    notes.push_back(fmt::format("Qwen2's q, k, v biases are not modelled ({} parameters left out)",
                                std::int64_t{m.layers} * (m.hidden + 2 * m.kv_hidden())));
  }
  if (architecture == "Qwen2MoeForCausalLM") {
    notes.push_back(
        fmt::format("Qwen2-MoE's q, k, v biases and shared-expert gate are not modelled ({} "
                    "parameters left out)",
                    std::int64_t{m.layers} * (m.q_width() + 2 * m.kv_hidden() + m.hidden)));
  }
  if (architecture == "Qwen3ForCausalLM" || architecture == "Qwen3MoeForCausalLM") {
    notes.push_back(
        fmt::format("Qwen3's q_norm and k_norm are not modelled ({} parameters left out)",
                    std::int64_t{m.layers} * 2 * m.head_dim()));
  }
  if (top.has("sliding_window") && !top["sliding_window"].raw().is_null() &&
      !(top.has("use_sliding_window") && top["use_sliding_window"].raw().is_boolean() &&
        !top["use_sliding_window"].as_bool())) {
    notes.push_back(fmt::format(
        "sliding_window {} is not modelled: attention is costed as full causal attention over "
        "the sequence (pass --seq up to the window for a window-bound estimate)",
        top["sliding_window"].as_int(1, std::int64_t{1} << 30)));
  }
  if (flag_of(top, "attention_bias") != flag_of(top, "mlp_bias")) {
    notes.push_back(
        "attention_bias and mlp_bias differ: linear biases are modelled on every "
        "linear or none, here none");
  }
  return notes;
}

}  // namespace

bool is_hf_config(const json& j) {
  if (!j.is_object() || j.contains("schema_version")) return false;
  return j.contains("architectures") || j.contains("model_type") ||
         (j.contains("hidden_size") && j.contains("num_hidden_layers"));
}

HfModel model_from_hf_config(const json& j, std::string_view origin, std::string_view name) {
  const JsonField top(j, std::string(origin));
  if (!j.is_object()) top.fail("a JSON object (a Hugging Face config)");
  HfModel out;
  out.architecture = architecture_of(top, origin);
  TransformerModel& m = out.model;
  m.name = std::string(name);
  read_shape(top, m);
  if (is_moe_architecture(out.architecture)) m.moe = read_moe(top, m, out.architecture);
  m.gated_mlp = true;  // SwiGLU: gate_proj, up_proj, down_proj
  m.norm = NormKind::rmsnorm;
  m.position = PositionEmbedding::rope;
  m.tied_embeddings = flag_of(top, "tie_word_embeddings");
  m.linear_bias = flag_of(top, "attention_bias") && flag_of(top, "mlp_bias");
  check_layer_fields(top);
  m.dropout = top.has("attention_dropout") && !top["attention_dropout"].raw().is_null() &&
              top["attention_dropout"].as_number() > 0;
  check_rope(top);
  check_model(m, origin);
  out.notes = approximations(top, m, out.architecture);
  for (const auto& [key, value] : j.items()) {
    if (std::find(kRead.begin(), kRead.end(), key) == kRead.end()) out.ignored.push_back(key);
  }
  return out;
}

LoadedModel load_any_model(std::string_view name_or_path) {
  if (auto m = builtin_model(name_or_path)) return {*std::move(m), {}, {}, {}};
  std::filesystem::path path{std::string(name_or_path)};
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    path /= "config.json";
    if (!std::filesystem::is_regular_file(path, ec)) {
      throw InputError(fmt::format(
          "{}: a directory without a config.json (expected a Hugging Face model folder)",
          name_or_path));
    }
  }
  if (std::filesystem::is_regular_file(path, ec)) {
    const json j = parse_json_text(read_text_file(path.string()), path.string());
    if (is_hf_config(j)) {
      // Named after its folder (the Hub's repository name) when the file is config.json.
      const auto folder = std::filesystem::absolute(path, ec).parent_path().filename();
      const std::string name = path.filename() == "config.json" && !folder.empty()
                                   ? folder.string()
                                   : path.stem().string();
      HfModel hf = model_from_hf_config(j, path.string(), name);
      return {std::move(hf.model), hf.architecture, std::move(hf.ignored), std::move(hf.notes)};
    }
  }
  return {load_model(name_or_path), {}, {}, {}};
}

}  // namespace meshsim
