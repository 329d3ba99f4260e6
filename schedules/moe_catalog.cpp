// The built-in MoE models (schedules/moe_model.hpp), each from its public configuration:
//  - mixtral-8x7b: huggingface.co/mistralai/Mixtral-8x7B-v0.1 config.json (32 layers, hidden 4096,
//    32 heads, 8 KV heads, intermediate 14336, 8 local experts, 2 per token, vocabulary 32000,
//    max positions 32768); 46.7B parameters (mistral.ai/news/mixtral-of-experts).
//  - mixtral-8x22b: huggingface.co/mistralai/Mixtral-8x22B-v0.1 config.json (56 layers, hidden
//    6144, 48 heads, 8 KV heads, intermediate 16384, 8 experts, top 2, vocabulary 32000, max
//    positions 65536); 141B total (mistral.ai/news/mixtral-8x22b).
//  - qwen2-57b-a14b: huggingface.co/Qwen/Qwen2-57B-A14B config.json (28 layers, hidden 3584, 28
//    heads, 4 KV heads, 64 experts of 2560, top 8, one shared expert of 20480, vocabulary 151936);
//    context 32,768 (Qwen2 Technical Report §3.2); 57B total. The q/k/v biases and the shared
//    expert's sigmoid gate (h + 2 x 512 + h per layer, 0.0004 % of the total) are not modelled.
//  - qwen3-30b-a3b, qwen3-235b-a22b: huggingface.co/Qwen/Qwen3-30B-A3B and Qwen3-235B-A22B
//    config.json (48 / 94 layers, hidden 2048 / 4096, 32 / 64 heads, 4 KV heads, head_dim 128,
//    128 experts of 768 / 1536, top 8, no shared expert, vocabulary 151936); pre-training
//    context 32,768 (Qwen3 Technical Report §3.1); 30.5B / 235B total. The per-head q/k RMSNorm
//    weights (256 per layer) are not modelled.
//  - deepseek-v3: huggingface.co/deepseek-ai/DeepSeek-V3 config.json and the DeepSeek-V3
//    Technical Report §4.2 (61 layers, hidden 7168, 128 heads, MLA q_lora_rank 1536,
//    kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, dense
//    intermediate 18432 for the first 3 layers, 256 routed experts of 2048, top 8, 1 shared
//    expert of 2048, vocabulary 129280, 1 MTP module, sequence 4096, node-limited routing with
//    n_group 8 and topk_group 4: each token's experts within its 4 best of 8 groups of 32);
//    671B total, 37B activated (the 14B of the MTP module counted apart, as the report does).
//  - gpt-oss-120b: huggingface.co/openai/gpt-oss-120b config.json (36 layers, hidden 2880, 64
//    heads, 8 KV heads, head_dim 64, 128 experts of 2880, top 4, biases on attention, experts and
//    router, vocabulary 201088, initial context 4096); 116.8B total (the gpt-oss model card).
//    Attention sinks (64 per layer) are not modelled.
//  - llama4-scout: huggingface.co/meta-llama/Llama-4-Scout-17B-16E config.json text_config (48
//    layers, hidden 5120, 40 heads, 8 KV heads, head_dim 128, 16 experts of 8192, top 1, one
//    shared expert of 8192, every layer MoE (interleave_moe_layer_step 1), vocabulary 202048);
//    109B total counts the vision encoder too, which a text training step does not have.
#include <vector>

#include "schedules/model_catalog.hpp"

namespace meshsim {

namespace {

TransformerModel moe_model(std::string name, int layers, std::int64_t hidden, std::int64_t heads,
                           std::int64_t kv_heads, std::int64_t vocab, std::int64_t seq_len,
                           MoeBlock moe) {
  // ffn_hidden: the expert FFN, unless the model has dense layers (first_dense_layers > 0).
  return TransformerModel{.name = std::move(name),
                          .layers = layers,
                          .hidden = hidden,
                          .heads = heads,
                          .kv_heads = kv_heads,
                          .ffn_hidden = moe.expert_ffn,
                          .vocab = vocab,
                          .seq_len = seq_len,
                          .moe = moe,
                          .mla = std::nullopt,
                          .mtp_layers = 0};
}

MoeBlock routed(int experts, int top_k, std::int64_t ffn, int shared = 0,
                std::int64_t shared_ffn = 0) {
  MoeBlock b;
  b.experts = experts;
  b.top_k = top_k;
  b.expert_ffn = ffn;
  b.shared_experts = shared;
  b.shared_ffn = shared_ffn;
  return b;
}

}  // namespace

std::vector<TransformerModel> moe_builtin_models() {
  std::vector<TransformerModel> out;
  out.push_back(moe_model("mixtral-8x7b", 32, 4096, 32, 8, 32000, 32768, routed(8, 2, 14336)));
  out.push_back(moe_model("mixtral-8x22b", 56, 6144, 48, 8, 32000, 65536, routed(8, 2, 16384)));
  out.push_back(
      moe_model("qwen2-57b-a14b", 28, 3584, 28, 4, 151936, 32768, routed(64, 8, 2560, 1, 20480)));
  TransformerModel q30 =
      moe_model("qwen3-30b-a3b", 48, 2048, 32, 4, 151936, 32768, routed(128, 8, 768));
  q30.kv_channels = 128;
  out.push_back(std::move(q30));
  TransformerModel q235 =
      moe_model("qwen3-235b-a22b", 94, 4096, 64, 4, 151936, 32768, routed(128, 8, 1536));
  q235.kv_channels = 128;
  out.push_back(std::move(q235));
  MoeBlock ds = routed(256, 8, 2048, 1, 2048);
  ds.first_dense_layers = 3;
  ds.router_groups = 8;
  ds.router_group_topk = 4;
  TransformerModel v3 = moe_model("deepseek-v3", 61, 7168, 128, 128, 129280, 4096, ds);
  v3.ffn_hidden = 18432;
  v3.mla = MlaBlock{1536, 512, 128, 64, 128};
  v3.mtp_layers = 1;
  out.push_back(std::move(v3));
  TransformerModel oss =
      moe_model("gpt-oss-120b", 36, 2880, 64, 8, 201088, 4096, routed(128, 4, 2880));
  oss.kv_channels = 64;
  oss.linear_bias = true;
  out.push_back(std::move(oss));
  TransformerModel scout =
      moe_model("llama4-scout", 48, 5120, 40, 8, 202048, 8192, routed(16, 1, 8192, 1, 8192));
  out.push_back(std::move(scout));
  return out;
}

}  // namespace meshsim
