#include "schedules/moe_model.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/model_catalog.hpp"
#include "sim/error.hpp"
#include "sim/json_fields.hpp"

namespace meshsim {

using nlohmann::json;

namespace {

constexpr std::int64_t kMaxWidth = std::int64_t{1} << 24;

[[noreturn]] void block_error(std::string_view origin, std::string_view field,
                              std::string_view what) {
  throw InputError(fmt::format("{}: field '{}': {}", origin, field, what));
}

std::int64_t matrices(const TransformerModel& m, std::int64_t ffn) {
  return (m.gated_mlp ? 3 : 2) * m.hidden * ffn;
}

}  // namespace

bool is_moe_layer(const TransformerModel& m, int layer) {
  if (!m.moe || layer < m.moe->first_dense_layers) return false;
  return (layer - m.moe->first_dense_layers) % m.moe->layer_freq == 0;
}

int moe_layer_count(const TransformerModel& m) {
  if (!m.moe || m.layers <= m.moe->first_dense_layers) return 0;
  const int rest = m.layers - m.moe->first_dense_layers;
  return (rest + m.moe->layer_freq - 1) / m.moe->layer_freq;
}

json to_json(const MoeBlock& b) {
  json j{{"experts", b.experts},       {"top_k", b.top_k},
         {"expert_ffn", b.expert_ffn}, {"shared_experts", b.shared_experts},
         {"shared_ffn", b.shared_ffn}, {"first_dense_layers", b.first_dense_layers},
         {"layer_freq", b.layer_freq}};
  if (b.router_groups > 0) {
    j["router_groups"] = b.router_groups;
    j["router_group_topk"] = b.router_group_topk;
  }
  return j;
}

json to_json(const MlaBlock& b) {
  return json{{"q_lora_rank", b.q_lora_rank},
              {"kv_lora_rank", b.kv_lora_rank},
              {"qk_nope_head_dim", b.qk_nope_head_dim},
              {"qk_rope_head_dim", b.qk_rope_head_dim},
              {"v_head_dim", b.v_head_dim}};
}

MoeBlock moe_from_json(const JsonField& f, std::int64_t /*hidden*/) {
  if (!f.raw().is_object()) f.fail("an object (the MoE block)");
  f.expect_keys({"experts", "top_k", "expert_ffn", "shared_experts", "shared_ffn",
                 "first_dense_layers", "layer_freq", "router_groups", "router_group_topk"});
  MoeBlock b;
  b.experts = static_cast<int>(f["experts"].as_int(1, kMaxExperts));
  b.top_k = static_cast<int>(f["top_k"].as_int(1, kMaxExperts));
  b.expert_ffn = f["expert_ffn"].as_int(1, kMaxWidth);
  if (f.has("shared_experts")) {
    b.shared_experts = static_cast<int>(f["shared_experts"].as_int(0, kMaxExperts));
  }
  if (f.has("shared_ffn")) b.shared_ffn = f["shared_ffn"].as_int(0, kMaxWidth);
  if (f.has("first_dense_layers")) {
    b.first_dense_layers = static_cast<int>(f["first_dense_layers"].as_int(0, 65536));
  }
  if (f.has("layer_freq")) b.layer_freq = static_cast<int>(f["layer_freq"].as_int(1, 65536));
  if (f.has("router_groups") != f.has("router_group_topk")) {
    f.fail("router_groups and router_group_topk together (group-limited routing) or neither");
  }
  if (f.has("router_groups")) {
    b.router_groups = static_cast<int>(f["router_groups"].as_int(1, kMaxExperts));
    b.router_group_topk = static_cast<int>(f["router_group_topk"].as_int(1, kMaxExperts));
  }
  return b;
}

MlaBlock mla_from_json(const JsonField& f) {
  if (!f.raw().is_object()) f.fail("an object (the MLA block)");
  f.expect_keys(
      {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  MlaBlock b;
  b.q_lora_rank = f["q_lora_rank"].as_int(0, kMaxWidth);
  b.kv_lora_rank = f["kv_lora_rank"].as_int(1, kMaxWidth);
  b.qk_nope_head_dim = f["qk_nope_head_dim"].as_int(1, kMaxWidth);
  b.qk_rope_head_dim = f["qk_rope_head_dim"].as_int(0, kMaxWidth);
  b.v_head_dim = f["v_head_dim"].as_int(1, kMaxWidth);
  return b;
}

void check_moe(const MoeBlock& b, int layers, std::string_view origin) {
  if (b.experts < 1 || b.experts > kMaxExperts) {
    block_error(origin, "moe.experts",
                fmt::format("expected 1 to {}, got {}", kMaxExperts, b.experts));
  }
  if (b.top_k < 1 || b.top_k > b.experts) {
    block_error(origin, "moe.top_k",
                fmt::format("expected 1 to experts ({}), got {}", b.experts, b.top_k));
  }
  if (b.expert_ffn < 1 || b.expert_ffn > kMaxWidth) {
    block_error(origin, "moe.expert_ffn",
                fmt::format("expected 1 to {}, got {}", kMaxWidth, b.expert_ffn));
  }
  if (b.shared_experts < 0 || (b.shared_experts > 0) != (b.shared_ffn > 0)) {
    block_error(origin, "moe.shared_ffn",
                fmt::format("expected > 0 exactly when shared_experts > 0 (shared_experts {}, "
                            "shared_ffn {})",
                            b.shared_experts, b.shared_ffn));
  }
  if (b.first_dense_layers < 0 || b.first_dense_layers >= layers) {
    block_error(
        origin, "moe.first_dense_layers",
        fmt::format("expected 0 to layers - 1 ({}), got {}", layers - 1, b.first_dense_layers));
  }
  if (b.layer_freq < 1) {
    block_error(origin, "moe.layer_freq", fmt::format("expected >= 1, got {}", b.layer_freq));
  }
  if (b.router_groups == 0) return;
  if (b.router_groups < 0 || b.experts % b.router_groups != 0) {
    block_error(
        origin, "moe.router_groups",
        fmt::format("expected a divisor of experts ({}), got {}", b.experts, b.router_groups));
  }
  const int per_group = b.experts / b.router_groups;
  if (b.router_group_topk < 1 || b.router_group_topk > b.router_groups ||
      b.top_k > b.router_group_topk * per_group) {
    block_error(origin, "moe.router_group_topk",
                fmt::format("expected 1 to router_groups ({}) groups holding at least top_k ({}) "
                            "experts, got {}",
                            b.router_groups, b.top_k, b.router_group_topk));
  }
}

void check_mla(const MlaBlock& b, std::string_view origin) {
  if (b.kv_lora_rank < 1) block_error(origin, "mla.kv_lora_rank", "expected >= 1");
  if (b.qk_nope_head_dim < 1) block_error(origin, "mla.qk_nope_head_dim", "expected >= 1");
  if (b.v_head_dim < 1) block_error(origin, "mla.v_head_dim", "expected >= 1");
  if (b.q_lora_rank < 0 || b.qk_rope_head_dim < 0) {
    block_error(origin, "mla.q_lora_rank", "expected q_lora_rank and qk_rope_head_dim >= 0");
  }
}

std::int64_t routed_expert_parameters(const TransformerModel& m) {
  const std::int64_t f = m.moe->expert_ffn;
  const std::int64_t bias = m.linear_bias ? (m.gated_mlp ? 2 * f : f) + m.hidden : 0;
  return matrices(m, f) + bias;
}

std::int64_t moe_mlp_parameters(const TransformerModel& m) {
  const MoeBlock& b = *m.moe;
  const std::int64_t f = b.shared_ffn;
  const std::int64_t shared_bias = m.linear_bias ? (m.gated_mlp ? 2 * f : f) + m.hidden : 0;
  const std::int64_t router = m.hidden * b.experts + (m.linear_bias ? b.experts : 0);
  return b.experts * routed_expert_parameters(m) +
         b.shared_experts * (matrices(m, f) + shared_bias) + router;
}

std::int64_t moe_active_matmul_parameters(const TransformerModel& m) {
  const MoeBlock& b = *m.moe;
  return m.hidden * b.experts + b.top_k * matrices(m, b.expert_ffn) +
         b.shared_experts * matrices(m, b.shared_ffn);
}

std::int64_t mla_parameters(const TransformerModel& m) {
  const MlaBlock& b = *m.mla;
  const std::int64_t h = m.hidden, a = m.heads;
  const std::int64_t q =
      b.q_lora_rank > 0 ? h * b.q_lora_rank + b.q_lora_rank + b.q_lora_rank * a * b.qk_head_dim()
                        : h * a * b.qk_head_dim();
  const std::int64_t kv = h * (b.kv_lora_rank + b.qk_rope_head_dim) + b.kv_lora_rank +
                          b.kv_lora_rank * a * (b.qk_nope_head_dim + b.v_head_dim);
  return q + kv + a * b.v_head_dim * h;
}

}  // namespace meshsim
