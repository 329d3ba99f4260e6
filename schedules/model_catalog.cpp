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
  for (auto& m : moe_builtin_models()) out.push_back(std::move(m));
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
  json j{
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
  if (m.kv_channels > 0) j["kv_channels"] = m.kv_channels;
  if (m.moe) j["moe"] = to_json(*m.moe);
  if (m.mla) j["mla"] = to_json(*m.mla);
  if (m.mtp_layers > 0) j["mtp_layers"] = m.mtp_layers;
  return j;
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
  if (m.kv_channels < 0 || m.kv_channels > kMaxHidden) {
    field_error(origin, "kv_channels",
                fmt::format("expected 0 to {}, got {}", kMaxHidden, m.kv_channels));
  }
  if (m.kv_channels == 0 && m.hidden % m.heads != 0) {
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
  if (m.moe) check_moe(*m.moe, m.layers, origin);
  if (m.mla) check_mla(*m.mla, origin);
  if (m.mtp_layers < 0 || m.mtp_layers > 64) {
    field_error(origin, "mtp_layers", fmt::format("expected 0 to 64, got {}", m.mtp_layers));
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
                   "position_embedding", "dropout", "kv_channels", "moe", "mla", "mtp_layers"});
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
  if (top.has("kv_channels")) m.kv_channels = top["kv_channels"].as_int(0, kMaxHidden);
  if (top.has("moe")) m.moe = moe_from_json(top["moe"], m.hidden);
  if (top.has("mla")) m.mla = mla_from_json(top["mla"]);
  if (top.has("mtp_layers")) m.mtp_layers = static_cast<int>(top["mtp_layers"].as_int(0, 64));
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

std::int64_t attention_matrices(const TransformerModel& m) {
  if (m.mla) return mla_parameters(m) - m.mla->q_lora_rank - m.mla->kv_lora_rank;
  return 2 * m.hidden * m.q_width() + 2 * m.hidden * m.kv_hidden();
}

ParameterCount count_parameters(const TransformerModel& m) {
  const std::int64_t h = m.hidden, kv = m.kv_hidden(), q = m.q_width(), f = m.ffn_hidden,
                     v = m.vocab;
  const std::int64_t norm = m.norm == NormKind::layernorm ? 2 * h : h;
  ParameterCount c;
  c.attention =
      m.mla ? mla_parameters(m) : attention_matrices(m) + (m.linear_bias ? q + 2 * kv + h : 0);
  c.mlp = (m.gated_mlp ? 3 : 2) * h * f + (m.linear_bias ? (m.gated_mlp ? 2 * f : f) + h : 0);
  c.norms = 2 * norm;
  c.per_layer = c.attention + c.mlp + c.norms;
  c.embedding = v * h + (m.position == PositionEmbedding::learned ? m.seq_len * h : 0);
  c.final_norm = norm;
  c.output_head = m.tied_embeddings ? 0 : v * h;
  c.moe_layers = moe_layer_count(m);
  std::int64_t layers = m.layers * c.per_layer;
  if (m.moe) {
    c.moe_mlp = moe_mlp_parameters(m);
    c.routed_expert = routed_expert_parameters(m);
    layers += c.moe_layers * (c.moe_mlp - c.mlp);
    const std::int64_t last_layer =
        c.attention + c.norms + (is_moe_layer(m, m.layers - 1) ? c.moe_mlp : c.mlp);
    c.mtp = m.mtp_layers * (3 * norm + 2 * h * h + last_layer);
  }
  c.total = layers + c.embedding + c.final_norm + c.output_head;
  c.active =
      c.total -
      (m.moe ? std::int64_t{c.moe_layers} * (m.moe->experts - m.moe->top_k) * c.routed_expert : 0);
  return c;
}

std::int64_t matmul_parameters(const TransformerModel& m) {
  const std::int64_t dense =
      attention_matrices(m) + (m.gated_mlp ? 3 : 2) * m.hidden * m.ffn_hidden;
  const int moe_layers = moe_layer_count(m);
  const std::int64_t moe = m.moe ? attention_matrices(m) + moe_active_matmul_parameters(m) : 0;
  return (m.layers - moe_layers) * dense + moe_layers * moe + m.vocab * m.hidden;
}

double training_flops_per_token(const TransformerModel& m, std::int64_t seq, AttentionFlops mask) {
  const double s = static_cast<double>(seq);
  // The core's channels per (query, key) pair, halved: (d_qk + d_v)·a / 2, = h for plain
  // multi-head attention with head_dim = hidden / heads (4·h FLOPs forward per pair).
  const double width =
      m.mla ? static_cast<double>(m.heads * (m.mla->qk_head_dim() + m.mla->v_head_dim)) / 2.0
            : static_cast<double>(m.q_width());
  const double lh = static_cast<double>(m.layers) * width;
  const double attention = mask == AttentionFlops::full ? 12.0 * lh * s : 6.0 * lh * (s + 1.0);
  return 6.0 * static_cast<double>(matmul_parameters(m)) + attention;
}

}  // namespace meshsim
