// The layer kernels of schedules/layer_kernels.hpp: their bytes per element as counted from
// torchtitan's model code (norms.py, model.py) and PyTorch's autograd formulas, what the step
// emits for them, and what they keep in memory.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <variant>

#include "schedules/layer_kernels.hpp"
#include "schedules/memory_model.hpp"
#include "schedules/model_catalog.hpp"
#include "schedules/moe_memory.hpp"
#include "schedules/training_step.hpp"
#include "sim/kernel_call.hpp"

using namespace meshsim;

namespace {

constexpr double kBf16 = 2;

double bytes_per_element(PassBytes p) {
  return p.operands * kBf16 + p.fp32_bytes;
}

// Bytes of each layer-0 kernel of microbatch 0 on rank 0, by name.
std::map<std::string, double> layer0_bytes(const TransformerModel& m, const StepPlan& plan) {
  std::map<std::string, double> out;
  for (const Op& op : build_training_step(m, plan, 8).ops) {
    const auto* call = std::get_if<KernelCall>(&op.body);
    if (op.rank != 0 || call == nullptr || op.labels.layer != 0 || op.labels.microbatch != 0)
      continue;
    out[op.name.str()] = kernel_bytes(*call);
  }
  return out;
}

StepPlan one_gpu(LayerKernels k) {
  StepPlan plan;
  plan.seq = 1024;
  plan.global_batch = 1;
  plan.layer_kernels = k;
  return plan;
}

}  // namespace

TEST_CASE("layer kernels: names round-trip; anything else is refused") {
  for (auto k : {LayerKernels::fused, LayerKernels::torch_eager, LayerKernels::torch_compile}) {
    CHECK(parse_layer_kernels(to_string(k)) == k);
  }
  CHECK(to_string(LayerKernels::torch_eager) == "torch-eager");
  CHECK_FALSE(parse_layer_kernels("eager").has_value());
}

TEST_CASE("layer kernels: bytes per element, pass by pass") {
  // Fused: RMSNorm read x, write y (4 B), backward read x, dy, write dx (6 B); SwiGLU 3 / 5
  // operands; RoPE read, write (4 B) both ways.
  for (auto k : {LayerKernels::fused, LayerKernels::torch_compile}) {
    CHECK(bytes_per_element(norm_pass(k, NormKind::rmsnorm, false)) == 4);
    CHECK(bytes_per_element(norm_pass(k, NormKind::rmsnorm, true)) == 6);
    CHECK(bytes_per_element(gated_activation_pass(k, false)) == 6);
    CHECK(bytes_per_element(gated_activation_pass(k, true)) == 10);
    CHECK(bytes_per_element(rope_pass(k, false)) == 4);
  }
  const auto eager = LayerKernels::torch_eager;
  // RMSNorm forward: cast 2 + 4, pow 4 + 4, mean 4, mul 4 + 4, type_as 4 + 2, weight 2 + 2 = 36.
  CHECK(bytes_per_element(norm_pass(eager, NormKind::rmsnorm, false)) == 36);
  // Backward: weight mul 4 + (4 + 2 + 2), cast 2 + 4, rsqrt mul 8 + 12 + 4, mean 4, pow 8 + 8 +
  // 12, sum of the two gradients 12, cast back 4 + 2 = 92.
  CHECK(bytes_per_element(norm_pass(eager, NormKind::rmsnorm, true)) == 92);
  // nn.LayerNorm is one ATen kernel in eager mode too.
  CHECK(norm_pass(eager, NormKind::layernorm, true) ==
        norm_pass(LayerKernels::fused, NormKind::layernorm, true));
  // SwiGLU: silu 2 + 2, product 2 + 2 + 2 = 10; backward 6 + 6 + 6 = 18.
  CHECK(bytes_per_element(gated_activation_pass(eager, false)) == 10);
  CHECK(bytes_per_element(gated_activation_pass(eager, true)) == 18);
  // RoPE: upcast 2 + 4, complex multiply 4 + 4, type_as 4 + 2 = 20, the same backward.
  CHECK(bytes_per_element(rope_pass(eager, false)) == 20);
  CHECK(bytes_per_element(rope_pass(eager, true)) == 20);
  CHECK_FALSE(repeats_kv_heads(LayerKernels::fused));
  CHECK(repeats_kv_heads(LayerKernels::torch_compile));
  CHECK(saves_repeated_kv(eager));
  CHECK_FALSE(saves_repeated_kv(LayerKernels::torch_compile));
}

TEST_CASE("layer kernels: the step's norm, RoPE, SwiGLU and repeat_kv kernels move those bytes") {
  // llama3-8b on one GPU, mbs 1, seq 1024: T = 1024 tokens, h = 4096, 32 query and 8 KV heads of
  // 128, ffn 14336.
  const TransformerModel m = *builtin_model("llama3-8b");
  const double t = 1024, h = 4096, kv = 8 * 128, f = 14336;
  const auto fused = layer0_bytes(m, one_gpu(LayerKernels::fused));
  const auto eager = layer0_bytes(m, one_gpu(LayerKernels::torch_eager));
  const auto compiled = layer0_bytes(m, one_gpu(LayerKernels::torch_compile));
  CHECK(fused.at("attn norm") == t * h * 4);
  CHECK(eager.at("attn norm") == t * h * 36);
  CHECK(eager.at("attn norm bwd") == t * h * 92);
  CHECK(compiled.at("attn norm") == t * h * 4);
  // RoPE over Q and K: T x (h + kv) elements.
  CHECK(fused.at("rope") == t * (h + kv) * 4);
  CHECK(fused.at("rope bwd") == t * (h + kv) * 4);
  CHECK(eager.at("rope") == t * (h + kv) * 20);
  CHECK(eager.at("activation") == t * f * 10);
  CHECK(eager.at("activation bwd") == t * f * 18);
  // repeat_kv: read K and V (2 T kv), write them 4 times over (n_rep = 32 / 8): 2 T kv (1 + 4)
  // bf16 elements, forward and backward; none with the fused kernels.
  CHECK(eager.at("repeat kv") == 2 * t * kv * 5 * kBf16);
  CHECK(eager.at("repeat kv bwd") == 2 * t * kv * 5 * kBf16);
  CHECK(compiled.at("repeat kv") == 2 * t * kv * 5 * kBf16);
  CHECK_FALSE(fused.contains("repeat kv"));
}

TEST_CASE(
    "layer kernels: an eager layer keeps its fp32 norm input, SwiGLU's third tensor and "
    "the expanded K and V") {
  const TransformerModel m = *builtin_model("llama3-8b");
  MemoryPlan p;
  p.seq = 1024;
  const ActivationTerms fused = activation_terms(m, p);
  p.layer_kernels = LayerKernels::torch_eager;
  const ActivationTerms eager = activation_terms(m, p);
  p.layer_kernels = LayerKernels::torch_compile;
  const ActivationTerms compiled = activation_terms(m, p);
  // Per layer, sb = 1024 tokens: 2 norms x 4 B x sbh + 2 B x sb x ffn + K and V expanded from 8
  // to 32 heads, 2 x 2 B x sb x (4096 - 1024).
  const double sb = 1024;
  const double extra = 2 * 4 * sb * 4096 + 2 * sb * 14336 + 2 * 2 * sb * (4096 - 1024);
  CHECK(eager.layer_none - fused.layer_none == doctest::Approx(extra));
  CHECK(compiled.layer_none == fused.layer_none);
  // torchtitan's op-level policy saves none of them: they are recomputed, so working memory.
  p.recompute = Recompute::selective_op;
  p.layer_kernels = LayerKernels::fused;
  const ActivationTerms fused_op = activation_terms(m, p);
  p.layer_kernels = LayerKernels::torch_eager;
  const ActivationTerms eager_op = activation_terms(m, p);
  CHECK(eager_op.layer_stored == fused_op.layer_stored);
  CHECK(eager_op.layer_working - fused_op.layer_working == doctest::Approx(extra));
}

TEST_CASE(
    "layer kernels: eager MoE layers keep SiLU's third tensor per routed copy, not per "
    "dense MLP") {
  // qwen3-30b-a3b (h 2048, 32 query and 4 KV heads of 128, 128 experts of 768, top 8, no dense
  // layer): per token and MoE layer, eager keeps 2 norms x 4 B x h + K and V expanded from 4 to 32
  // heads (2 x 2 B x (4096 - 512)) + 2 B x top 8 x 768 of the routed copies' SiLU outputs.
  const TransformerModel m = *builtin_model("qwen3-30b-a3b");
  MemoryPlan p;
  p.seq = 4096;
  p.ep = 8;
  p.dp = 8;
  const auto layer = [&](LayerKernels k) {
    p.layer_kernels = k;
    return activation_terms(m, p).layer_none + moe_memory(m, p).activation_delta;
  };
  const double sb = 4096;
  const double per_token = 2 * 4 * 2048 + 2 * 2 * (4096 - 512) + 2 * 8 * 768;
  CHECK(layer(LayerKernels::torch_eager) - layer(LayerKernels::fused) ==
        doctest::Approx(sb * per_token));
}

TEST_CASE("layer kernels: a CP ring of expanded K/V buffers heads_q K/V heads") {
  // llama3-8b, cp 4, seq 131072: KV_r = 2 b s (heads / t) d e with s = 32768 per rank, 32 query
  // heads when repeat_kv expands them, 8 KV heads otherwise.
  const TransformerModel m = *builtin_model("llama3-8b");
  MemoryPlan p;
  p.cp = 4;
  p.seq = 131072;
  CHECK(activation_terms(m, p).kv_rank == 2.0 * 32768 * 8 * 128 * 2);
  p.layer_kernels = LayerKernels::torch_compile;
  CHECK(activation_terms(m, p).kv_rank == 2.0 * 32768 * 32 * 128 * 2);
}
