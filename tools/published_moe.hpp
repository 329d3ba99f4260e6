#pragma once
// The Mixture-of-Experts fields of a published run (data/published/README.md: `model.moe`,
// `model.mla`, `model.head_dim`, `parallel.ep`, `parallel.etp`, `parallel.dispatcher`) as the
// model's MoeBlock / MlaBlock and the plan's MoePlan, by these rules (tools/published_runs.hpp
// holds the others):
//   model.moe    {num_experts, top_k, expert_ffn_hidden} required (null: skipped);
//                shared_experts null: 0; shared_expert_ffn_hidden null with shared experts:
//                skipped (sizes differ between models: DeepSeek-V3 2,048 = its routed experts',
//                Qwen2-57B-A14B 20,480 against 2,560); dense_layers_first null: 0; every layer
//                after those an MoE layer. The model is Llama-style (RMSNorm, SwiGLU experts,
//                RoPE, untied embeddings), as Mixtral, Qwen-MoE, DeepSeek-V3 and their
//                Megatron-Core recipes are.
//   model.mla    all five of q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim,
//                v_head_dim (null: skipped).
//   model.head_dim  the attention head's channels (Megatron's --kv-channels).
//   parallel.ep  null: 1; above 1 on a model without experts: skipped.
//   parallel.etp null: tp (Megatron-Core's default for --expert-tensor-parallel-size).
//   parallel.dispatcher  words "alltoall" / "all-to-all", "allgather" / "all-gather", "flex" /
//                "deepep" / "hybridep" (flex); null: alltoall, the dispatcher of Megatron-Core's
//                MoE quick start (megatron/core/transformer/moe/README.md); others skipped.
//   sp           null with tp > 1 on an MoE model: on (the same README: "When using MoE with
//                expert parallelism and tensor parallelism, sequence parallelism must be
//                enabled").
//   routing      uniform (the schema has no routing skew); no capacity factor (dropless).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/model_catalog.hpp"
#include "schedules/step_plan.hpp"
#include "tools/published_runs.hpp"

namespace meshsim {

// Whether the row's model has a `moe` or `mla` block (then it is Llama-style, as above).
bool published_moe_style(const nlohmann::json& model_fields);

// Fills model.moe, model.mla and model.kv_channels from the row's `model` object; the reason to
// skip otherwise. Notes list the conventions applied.
std::optional<SkippedRun> published_moe_model(const nlohmann::json& model_fields,
                                              TransformerModel& model,
                                              std::vector<std::string>& notes);

// Fills plan.moe (and sp by the rule above) from the row's `parallel` object, for `model`.
std::optional<SkippedRun> published_moe_plan(const nlohmann::json& parallel,
                                             const TransformerModel& model, StepPlan& plan,
                                             std::vector<std::string>& notes);

}  // namespace meshsim
