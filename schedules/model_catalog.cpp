#include "schedules/model_catalog.hpp"

#include <array>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/enum_names.hpp"
#include "sim/error.hpp"
#include "sim/json_fields.hpp"

namespace meshsim {

using nlohmann::json;

namespace {

constexpr std::array<std::string_view, 2> kNormNames = {"rmsnorm", "layernorm"};
constexpr std::array<std::string_view, 2> kPositionNames = {"rope", "learned"};

// Bounds that keep every parameter count below 2^63 (3·h·f·layers <= 2^62).
constexpr std::int64_t kMaxLayers = 65536;
constexpr std::int64_t kMaxHidden = std::int64_t{1} << 20;
constexpr std::int64_t kMaxFfn = std::int64_t{1} << 24;
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 30;
constexpr std::int64_t kMaxSeq = std::int64_t{1} << 30;

[[noreturn]] void field_error(std::string_view origin, std::string_view field,
                              std::string_view what) {
  throw InputError(fmt::format("{}: field '{}': {}", origin, field, what));
}

TransformerModel make(std::string name, int layers, std::int64_t hidden, std::int64_t heads,
                      std::int64_t kv_heads, std::int64_t ffn, std::int64_t vocab,
                      std::int64_t seq_len) {
  TransformerModel m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.seq_len = seq_len;
  return m;
}

std::vector<TransformerModel> builtins() {
  std::vector<TransformerModel> out;
  // Llama 3 (Table 3 of the Llama 3 paper): SwiGLU, RMSNorm, RoPE, untied, no dropout.
  out.push_back(make("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192));
  out.push_back(make("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192));
  out.push_back(make("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192));
  // GPT-3 175B: MHA, GELU (2 matrices), LayerNorm, biases, learned positions, tied, dropout.
  TransformerModel gpt3 = make("gpt3-175b", 96, 12288, 96, 96, 49152, 50257, 2048);
  gpt3.gated_mlp = false;
  gpt3.tied_embeddings = true;
  gpt3.norm = NormKind::layernorm;
  gpt3.linear_bias = true;
  gpt3.position = PositionEmbedding::learned;
  gpt3.dropout = true;
  out.push_back(std::move(gpt3));
  return out;
}

}  // namespace

std::string_view to_string(NormKind n) {
  return enum_name(kNormNames, n);
}
std::string_view to_string(PositionEmbedding p) {
  return enum_name(kPositionNames, p);
}
std::optional<NormKind> parse_norm_kind(std::string_view s) {
  return parse_enum_name<NormKind>(kNormNames, s);
}
std::optional<PositionEmbedding> parse_position_embedding(std::string_view s) {
  return parse_enum_name<PositionEmbedding>(kPositionNames, s);
}

json to_json(const TransformerModel& m) {
  return json{
      {"schema_version", kModelSchemaVersion},
      {"name", m.name},
      {"layers", m.layers},
      {"hidden", m.hidden},
      {"heads", m.heads},
      {"kv_heads", m.kv_heads},
      {"ffn_hidden", m.ffn_hidden},
      {"vocab", m.vocab},
      {"seq_len", m.seq_len},
      {"gated_mlp", m.gated_mlp},
      {"tied_embeddings", m.tied_embeddings},
      {"norm", to_string(m.norm)},
      {"linear_bias", m.linear_bias},
      {"position_embedding", to_string(m.position)},
      {"dropout", m.dropout},
  };
}

void check_model(const TransformerModel& m, std::string_view origin) {
  if (m.name.empty()) field_error(origin, "name", "expected a non-empty string");
  const auto range = [&](std::string_view field, std::int64_t v, std::int64_t max) {
    if (v < 1 || v > max) {
      field_error(origin, field, fmt::format("expected an integer in [1, {}], got {}", max, v));
    }
  };
  range("layers", m.layers, kMaxLayers);
  range("hidden", m.hidden, kMaxHidden);
  range("heads", m.heads, m.hidden);
  range("kv_heads", m.kv_heads, m.heads);
  range("ffn_hidden", m.ffn_hidden, kMaxFfn);
  range("vocab", m.vocab, kMaxVocab);
  range("seq_len", m.seq_len, kMaxSeq);
  if (m.hidden % m.heads != 0) {
    field_error(origin, "heads",
                fmt::format("expected a divisor of hidden ({}) so that every head has hidden / "
                            "heads channels, got {}",
                            m.hidden, m.heads));
  }
  if (m.heads % m.kv_heads != 0) {
    field_error(origin, "kv_heads",
                fmt::format("expected a divisor of heads ({}) (grouped-query attention shares "
                            "each KV head among heads / kv_heads query heads), got {}",
                            m.heads, m.kv_heads));
  }
}

TransformerModel model_from_json(const json& j, std::string_view origin) {
  const JsonField top(j, std::string(origin));
  if (!j.is_object()) top.fail("a JSON object (a model)");
  {
    const JsonField v = top["schema_version"];
    if (!v.raw().is_number_integer() || v.raw().get<std::int64_t>() != kModelSchemaVersion) {
      v.fail(fmt::format("{}", kModelSchemaVersion));
    }
  }
  top.expect_keys({"schema_version", "name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden",
                   "vocab", "seq_len", "gated_mlp", "tied_embeddings", "norm", "linear_bias",
                   "position_embedding", "dropout"});
  TransformerModel m;
  m.name = top["name"].as_string();
  if (m.name.empty()) top["name"].fail("a non-empty string");
  m.layers = static_cast<int>(top["layers"].as_int(1, kMaxLayers));
  m.hidden = top["hidden"].as_int(1, kMaxHidden);
  m.heads = top["heads"].as_int(1, kMaxHidden);
  m.kv_heads = top["kv_heads"].as_int(1, kMaxHidden);
  m.ffn_hidden = top["ffn_hidden"].as_int(1, kMaxFfn);
  m.vocab = top["vocab"].as_int(1, kMaxVocab);
  m.seq_len = top["seq_len"].as_int(1, kMaxSeq);
  m.gated_mlp = top["gated_mlp"].as_bool();
  m.tied_embeddings = top["tied_embeddings"].as_bool();
  if (top.has("norm")) {
    const JsonField f = top["norm"];
    const auto n = f.raw().is_string() ? parse_norm_kind(f.raw().get<std::string>()) : std::nullopt;
    if (!n) f.fail("\"rmsnorm\" or \"layernorm\"");
    m.norm = *n;
  }
  if (top.has("linear_bias")) m.linear_bias = top["linear_bias"].as_bool();
  if (top.has("position_embedding")) {
    const JsonField f = top["position_embedding"];
    const auto p =
        f.raw().is_string() ? parse_position_embedding(f.raw().get<std::string>()) : std::nullopt;
    if (!p) f.fail("\"rope\" or \"learned\"");
    m.position = *p;
  }
  if (top.has("dropout")) m.dropout = top["dropout"].as_bool();
  check_model(m, origin);
  return m;
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const auto& m : builtins()) names.push_back(m.name);
  return names;
}

std::optional<TransformerModel> builtin_model(std::string_view name) {
  for (auto& m : builtins()) {
    if (m.name == name) return std::move(m);
  }
  return std::nullopt;
}

TransformerModel load_model(std::string_view name_or_path) {
  if (auto m = builtin_model(name_or_path)) return *std::move(m);
  const std::string path(name_or_path);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::string names;
    for (const auto& n : builtin_model_names()) {
      names += fmt::format("{}{}", names.empty() ? "" : ", ", n);
    }
    throw InputError(fmt::format("{}: not a built-in model ({}) and not a readable JSON file",
                                 name_or_path, names));
  }
  return model_from_json(parse_json_text(read_text_file(path), path), path);
}

ParameterCount count_parameters(const TransformerModel& m) {
  const std::int64_t h = m.hidden, kv = m.kv_hidden(), f = m.ffn_hidden, v = m.vocab;
  const std::int64_t norm = m.norm == NormKind::layernorm ? 2 * h : h;
  ParameterCount c;
  c.attention = 2 * h * h + 2 * h * kv + (m.linear_bias ? 2 * h + 2 * kv : 0);
  c.mlp = (m.gated_mlp ? 3 : 2) * h * f + (m.linear_bias ? (m.gated_mlp ? 2 * f : f) + h : 0);
  c.norms = 2 * norm;
  c.per_layer = c.attention + c.mlp + c.norms;
  c.embedding = v * h + (m.position == PositionEmbedding::learned ? m.seq_len * h : 0);
  c.final_norm = norm;
  c.output_head = m.tied_embeddings ? 0 : v * h;
  c.total = m.layers * c.per_layer + c.embedding + c.final_norm + c.output_head;
  return c;
}

std::int64_t matmul_parameters(const TransformerModel& m) {
  const std::int64_t h = m.hidden;
  const std::int64_t per_layer =
      2 * h * h + 2 * h * m.kv_hidden() + (m.gated_mlp ? 3 : 2) * h * m.ffn_hidden;
  return m.layers * per_layer + m.vocab * h;
}

double training_flops_per_token(const TransformerModel& m, std::int64_t seq, AttentionFlops mask) {
  const double s = static_cast<double>(seq);
  const double lh = static_cast<double>(m.layers) * static_cast<double>(m.hidden);
  const double attention = mask == AttentionFlops::full ? 12.0 * lh * s : 6.0 * lh * (s + 1.0);
  return 6.0 * static_cast<double>(matmul_parameters(m)) + attention;
}

}  // namespace meshsim
