#pragma once
// Transformer models for whole training steps (ARCHITECTURE.md §4.4): the shape of a decoder-only
// model, built-ins from the published configurations, JSON files with a schema version, the exact
// parameter count and the model FLOPs per token that MFU divides by.
//
// Built-ins (published configurations):
//  - llama3-8b, llama3-70b, llama3-405b: "The Llama 3 Herd of Models" (2024), Table 3 — RMSNorm,
//    SwiGLU, RoPE, GQA with 8 KV heads, vocabulary 128,256, untied embeddings, no dropout;
//    pre-training sequence 8,192.
//  - gpt3-175b: "Language Models are Few-Shot Learners" (2020), Table 2.1 — 96 layers, d_model
//    12,288, 96 heads, FFN 4 x d_model with GELU, LayerNorm, biases on every linear layer, learned
//    position embeddings over the 2,048-token context, GPT-2's vocabulary (50,257) tied with the
//    output head; dropout as in Megatron-LM's GPT recipes (0.1).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "schedules/moe_model.hpp"

namespace meshsim {

inline constexpr int kModelSchemaVersion = 1;

enum class NormKind : std::uint8_t { rmsnorm, layernorm };  // h or 2h (scale + bias) parameters
enum class PositionEmbedding : std::uint8_t { rope, learned };
std::string_view to_string(NormKind n);           // "rmsnorm", "layernorm"
std::string_view to_string(PositionEmbedding p);  // "rope", "learned"
std::optional<NormKind> parse_norm_kind(std::string_view s);
std::optional<PositionEmbedding> parse_position_embedding(std::string_view s);

struct TransformerModel {
  std::string name;
  int layers = 0;
  std::int64_t hidden = 0;       // h = heads x head_dim
  std::int64_t heads = 0;        // a: query heads
  std::int64_t kv_heads = 0;     // GQA groups; == heads for multi-head attention
  std::int64_t ffn_hidden = 0;   // f
  std::int64_t vocab = 0;        // V (not padded)
  std::int64_t seq_len = 0;      // default training sequence; rows of a learned position table
  bool gated_mlp = true;         // SwiGLU: gate, up and down matrices; else up and down (GELU)
  bool tied_embeddings = false;  // the output head reuses the input embedding matrix
  NormKind norm = NormKind::rmsnorm;
  bool linear_bias = false;  // biases on the QKV, projection, MLP up and down linears
  PositionEmbedding position = PositionEmbedding::rope;
  bool dropout = false;  // dropout layers (their 1-byte masks count as activations)
  // Channels per attention head when not hidden / heads (Megatron's --kv-channels; Qwen3 and
  // GPT-OSS set head_dim explicitly); 0: hidden / heads.
  std::int64_t kv_channels = 0;
  std::optional<MoeBlock> moe;  // Mixture-of-Experts layers (schedules/moe_model.hpp)
  std::optional<MlaBlock> mla;  // multi-head latent attention instead of GQA
  int mtp_layers = 0;           // multi-token prediction modules (DeepSeek-V3: 1)

  std::int64_t head_dim() const { return kv_channels > 0 ? kv_channels : hidden / heads; }
  std::int64_t q_width() const { return heads * head_dim(); }       // width of Q (and of the core)
  std::int64_t kv_hidden() const { return kv_heads * head_dim(); }  // width of K (and of V)
  bool operator==(const TransformerModel&) const = default;
};

// JSON schema:
//   "schema_version": 1, "name": "llama3-70b", "layers": 80, "hidden": 8192, "heads": 64,
//   "kv_heads": 8, "ffn_hidden": 28672, "vocab": 128256, "seq_len": 8192, "gated_mlp": true,
//   "tied_embeddings": false — all required; optional with defaults: "norm": "rmsnorm" |
//   "layernorm" (rmsnorm), "linear_bias": false, "position_embedding": "rope" | "learned" (rope),
//   "dropout": false, "kv_channels": 0 (head dim; 0 = hidden / heads), "moe": {"experts",
//   "top_k", "expert_ffn", "shared_experts", "shared_ffn", "first_dense_layers", "layer_freq"},
//   "mla": {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
//   "v_head_dim"}, "mtp_layers": 0 (schedules/moe_model.hpp; written only when set). Rules:
//   hidden divisible by heads unless kv_channels is given, heads divisible by kv_heads.
nlohmann::json to_json(const TransformerModel& model);
// Throws InputError naming the field ("m.json: field 'kv_heads': expected a divisor of heads ...").
TransformerModel model_from_json(const nlohmann::json& j, std::string_view origin);
// Throws InputError naming the field for a shape that breaks the rules above.
void check_model(const TransformerModel& model, std::string_view origin);

std::vector<std::string> builtin_model_names();
// The Mixture-of-Experts built-ins, with their sources (schedules/moe_catalog.cpp).
std::vector<TransformerModel> moe_builtin_models();
std::optional<TransformerModel> builtin_model(std::string_view name);
// NAME of a built-in, or a path to a JSON file. Throws InputError with the origin in the message.
TransformerModel load_model(std::string_view name_or_path);

// Exact parameter count, h = hidden, a = heads, d = head_dim, h_q = a·d (= h unless
// kv_channels), h_kv = kv_heads x d, f = ffn_hidden:
//   per layer  attention  q h·h_q + k h·h_kv + v h·h_kv + o h_q·h (+ biases h_q + 2·h_kv + h);
//                         MLA: mla_parameters (schedules/moe_model.hpp)
//              mlp        3·h·f gated, 2·h·f otherwise   (+ biases 2f + h gated, f + h otherwise)
//              norms      2 x (h RMSNorm | 2h LayerNorm)
//   embedding  V·h (+ seq_len·h learned positions); final norm h | 2h;
//   output head V·h unless tied (no bias).
//   MoE models: MoE layers (is_moe_layer) have moe_mlp_parameters instead of the dense MLP;
//   MTP modules (DeepSeek-V3 §2.2) each: 2 input norms, the 2h x h projection, one layer of the
//   model's last kind and a final norm, sharing the embedding and the head (counted apart from
//   `total`, as the DeepSeek-V3 report counts 671B + 14B).
struct ParameterCount {
  std::int64_t attention = 0;  // per layer, biases included
  std::int64_t mlp = 0;        // per layer, biases included
  std::int64_t norms = 0;      // per layer
  std::int64_t per_layer = 0;  // attention + mlp + norms
  std::int64_t embedding = 0;  // word (+ position) embeddings
  std::int64_t final_norm = 0;
  std::int64_t output_head = 0;  // 0 when tied
  std::int64_t total = 0;        // every layer + embedding + final_norm + output_head
  // MoE models (0 otherwise):
  int moe_layers = 0;
  std::int64_t moe_mlp = 0;        // per MoE layer: routed + shared experts + router
  std::int64_t routed_expert = 0;  // one routed expert
  std::int64_t mtp = 0;            // the MTP modules (not in total)
  std::int64_t active = 0;         // per token: total less the routed experts it skips
};
ParameterCount count_parameters(const TransformerModel& model);
// Attention weight matrices of one layer, no biases or norms: Q and O h x (heads x head_dim), K and
// V h x (kv heads x head_dim); MLA's down- and up-projections and output.
std::int64_t attention_matrices(const TransformerModel& model);

// Weight-matrix parameters every token multiplies through: layers x (attention + MLP matrices,
// no biases or norms; an MoE layer's router, k routed and the shared experts) + the output head V·h
// (the logits GEMM runs whether or not it is tied). The input embedding is a lookup and costs no
// matmul FLOPs.
std::int64_t matmul_parameters(const TransformerModel& model);

// Which (query, key) pairs the attention term counts.
enum class AttentionFlops : std::uint8_t {
  causal,  // the pairs a causal kernel computes: (s + 1) / 2 keys per query on average
  full,    // all s keys per query (PaLM's appendix B and Megatron-LM's 2021 formula)
};

// Model FLOPs of one training token (forward + backward, no recompute) at sequence length `seq`:
//   6 x matmul_parameters  +  attention
// with attention = 3 (forward + backward) x 4·h (QK^T and PV, 2 FLOPs per multiply-add over the
// a·d = h query channels) per (query, key) pair, per layer:
//   full:   12 · L · h · s          (PaLM: 6N + 12·L·H·Q·T)
//   causal:  6 · L · h · (s + 1)    (the mean keys per query are (s + 1) / 2; i.e. PaLM's term
//                                    halved, up to the diagonal)
// GQA does not change the term (scores and outputs are per query head). meshsim's MFU uses causal:
// the step Programs compute causal attention (the ring builder's pairs are exactly s(s+1)/2 per
// sequence), and counting the masked half would credit the plan with work no kernel does — at
// 128k tokens that half is most of the FLOPs.
double training_flops_per_token(const TransformerModel& model, std::int64_t seq,
                                AttentionFlops mask = AttentionFlops::causal);

}  // namespace meshsim
