#pragma once
// The Mixture-of-Experts and Multi-head Latent Attention blocks of a transformer model
// (ARCHITECTURE.md §4.4), in Megatron-Core's vocabulary, their JSON form, which layers are MoE
// layers, and the built-in MoE models with the public configuration each comes from.
//
// MoE layer (Megatron-Core's MoELayer; Hugging Face's Mixtral / Qwen2-MoE / Qwen3-MoE / DeepSeek-V3
// / GPT-OSS / Llama 4 blocks): a router (h x E linear, top-k of E routed experts per token), E
// routed experts of FFN size f_e (gated: 3·h·f_e parameters each, else 2·h·f_e), S shared experts
// of FFN size f_s every token passes through. Layers: the first `first_dense_layers` are dense
// (DeepSeek's first_k_dense_replace), then every `layer_freq`-th layer is an MoE layer (Megatron's
// --moe-layer-freq N: layer l is MoE iff (l - first_dense_layers) mod N = 0), the others dense.
//
// With router_groups equal to the nodes of the EP group this is DeepSeek-V3's node-limited routing
// (each token reaches experts on at most router_group_topk nodes; Megatron-Core's
// TransformerConfig docstring of moe_router_num_groups).
//
// MLA (DeepSeek-V2/V3's multi-head latent attention, Megatron-Core's MLASelfAttention): queries
// through a rank-q_lora_rank latent (0: one h x a·(d_nope + d_rope) projection), keys and values
// through a rank-kv_lora_rank latent plus one shared d_rope RoPE key; per head d_nope + d_rope
// query/key channels and d_v value channels.
#include <cstdint>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace meshsim {

class JsonField;
struct TransformerModel;

struct MoeBlock {
  int experts = 0;              // E routed experts per MoE layer (num_moe_experts)
  int top_k = 0;                // k experts per token (moe_router_topk)
  std::int64_t expert_ffn = 0;  // f_e: each routed expert's FFN size (moe_ffn_hidden_size)
  int shared_experts = 0;       // S shared experts
  std::int64_t shared_ffn = 0;  // f_s: each shared expert's FFN size
  int first_dense_layers = 0;   // dense layers before the first MoE layer
  int layer_freq = 1;           // one MoE layer every layer_freq layers after those
  // Group-limited routing (Megatron's --moe-router-num-groups / --moe-router-group-topk,
  // DeepSeek-V3's n_group / topk_group): the experts split into router_groups equal groups, a
  // token's top_k experts chosen within its router_group_topk best groups. 0: not group-limited.
  int router_groups = 0;
  int router_group_topk = 0;
  bool operator==(const MoeBlock&) const = default;
};

struct MlaBlock {
  std::int64_t q_lora_rank = 0;  // 0: queries projected directly from h
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  std::int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  bool operator==(const MlaBlock&) const = default;
};

// Whether layer l (0-based) of the model is an MoE layer; false for a dense model.
bool is_moe_layer(const TransformerModel& model, int layer);
// MoE layers among the model's layers (0 for a dense model).
int moe_layer_count(const TransformerModel& model);

nlohmann::json to_json(const MoeBlock& moe);
nlohmann::json to_json(const MlaBlock& mla);
// Read and check the blocks of a model file (InputError naming the field path).
MoeBlock moe_from_json(const JsonField& f, std::int64_t hidden);
MlaBlock mla_from_json(const JsonField& f);
// InputError naming `moe.<field>` / `mla.<field>` when a block breaks its rules.
// The most routed experts a model may have (check_moe).
inline constexpr std::int64_t kMaxExperts = 1 << 16;
void check_moe(const MoeBlock& moe, int layers, std::string_view origin);
void check_mla(const MlaBlock& mla, std::string_view origin);

// Parameters of one MoE layer's MLP part: E routed experts, S shared experts and the router
// (h·E), with biases when the model has them (expert up and down biases, router bias E).
std::int64_t moe_mlp_parameters(const TransformerModel& model);
// Parameters of one routed expert (biases included when the model has them).
std::int64_t routed_expert_parameters(const TransformerModel& model);
// Weight-matrix parameters of one MoE layer's MLP a token multiplies through: the router, its k
// routed experts and the shared experts (no biases).
std::int64_t moe_active_matmul_parameters(const TransformerModel& model);
// Parameters of one MLA attention block: q down (h·r_q) + its RMSNorm r_q + q up
// (r_q·a·d_qk), or h·a·d_qk when r_q = 0; kv down h·(r_kv + d_rope) + its RMSNorm r_kv; kv up
// r_kv·a·(d_nope + d_v); output a·d_v·h.
std::int64_t mla_parameters(const TransformerModel& model);

}  // namespace meshsim
