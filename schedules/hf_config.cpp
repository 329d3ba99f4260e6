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

// architectures[0] and model_type of the dense architectures read here.
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kDense = {{
    {"LlamaForCausalLM", "llama"},
    {"MistralForCausalLM", "mistral"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen3ForCausalLM", "qwen3"},
}};
// Mixture-of-experts and multi-head latent attention: not modelled yet.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kNotYet = {{
    {"MixtralForCausalLM", "mixtral"},
    {"Qwen2MoeForCausalLM", "qwen2_moe"},
    {"Qwen3MoeForCausalLM", "qwen3_moe"},
    {"DeepseekV2ForCausalLM", "deepseek_v2"},
    {"DeepseekV3ForCausalLM", "deepseek_v3"},
    {"GptOssForCausalLM", "gpt_oss"},
}};

// The fields model_from_hf_config reads; the others are reported as ignored.
constexpr std::array<std::string_view, 16> kRead = {
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
  return fmt::format("{}, {}, {}, {}", kDense[0].first, kDense[1].first, kDense[2].first,
                     kDense[3].first);
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
        fmt::format("{}: not supported yet: {} (mixture-of-experts or multi-head "
                    "latent attention; meshsim reads the dense {})",
                    origin, moe, dense_names()));
  }
  const JsonField named = top.has("architectures") ? top["architectures"] : top["model_type"];
  named.fail(fmt::format("one of {} (Hugging Face dense decoders), got '{}'", dense_names(),
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
  if (m.hidden % m.heads != 0) {
    top["num_attention_heads"].fail(fmt::format("a divisor of hidden_size ({})", m.hidden));
  }
  if (m.heads % m.kv_heads != 0) {
    top["num_key_value_heads"].fail(fmt::format("a divisor of num_attention_heads ({})", m.heads));
  }
  if (top.has("head_dim") && !top["head_dim"].raw().is_null() &&
      top["head_dim"].as_int(1, kMax) != m.hidden / m.heads) {
    top["head_dim"].fail(fmt::format(
        "hidden_size / num_attention_heads = {} (meshsim's heads have hidden / heads channels)",
        m.hidden / m.heads));
  }
}

// Biases and norms meshsim's layer does not have, stated with the parameters they leave out.
std::vector<std::string> approximations(const JsonField& top, const TransformerModel& m,
                                        std::string_view architecture) {
  std::vector<std::string> notes;
  if (architecture == "Qwen2ForCausalLM") {
    notes.push_back(fmt::format("Qwen2's q, k, v biases are not modelled ({} parameters left out)",
                                std::int64_t{m.layers} * (m.hidden + 2 * m.kv_hidden())));
  }
  if (architecture == "Qwen3ForCausalLM") {
    notes.push_back(
        fmt::format("Qwen3's q_norm and k_norm are not modelled ({} parameters left out)",
                    std::int64_t{m.layers} * 2 * m.head_dim()));
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
  m.gated_mlp = true;  // SwiGLU: gate_proj, up_proj, down_proj
  m.norm = NormKind::rmsnorm;
  m.position = PositionEmbedding::rope;
  m.tied_embeddings = flag_of(top, "tie_word_embeddings");
  m.linear_bias = flag_of(top, "attention_bias") && flag_of(top, "mlp_bias");
  m.dropout = top.has("attention_dropout") && top["attention_dropout"].as_number() > 0;
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
