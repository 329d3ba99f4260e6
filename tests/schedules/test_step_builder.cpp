#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "schedules/training_step.hpp"

using namespace meshsim;

namespace {

// GPT-style model: h 64, 4 heads, f 256, V 512, seq 32, 2 layers, LayerNorm, biases, tied.
TransformerModel gpt_tiny() {
  TransformerModel m;
  m.name = "gpt-tiny";
  m.layers = 2;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 256;
  m.vocab = 512;
  m.seq_len = 32;
  m.gated_mlp = false;
  m.tied_embeddings = true;
  m.norm = NormKind::layernorm;
  m.linear_bias = true;
  m.position = PositionEmbedding::learned;
  return m;
}

std::vector<const Op*> optimizer_ops(const Program& prog) {
  std::vector<const Op*> out;
  for (const Op& op : prog.ops) {
    if (op.labels.phase == Phase::optimizer && std::holds_alternative<KernelCall>(op.body)) {
      out.push_back(&op);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("step builder: fp16 unscales the fp32 gradients before the Adam step, bf16 does not") {
  StepPlan p;
  p.global_batch = 2;
  p.dtype = DType::bf16;
  const auto bf16 = optimizer_ops(build_training_step(gpt_tiny(), p, 8));
  REQUIRE(bf16.size() == 1);
  CHECK(bf16[0]->name == "optimizer step");
  p.dtype = DType::fp16;
  const auto fp16 = optimizer_ops(build_training_step(gpt_tiny(), p, 8));
  REQUIRE(fp16.size() == 2);
  CHECK(fp16[0]->name == "unscale grads");
  const auto& unscale = std::get<KernelCall>(fp16[0]->body);
  const auto& adam = std::get<KernelCall>(fp16[1]->body);
  CHECK(unscale.kind == KernelKind::elementwise);
  CHECK(unscale.dtype == DType::fp32);  // the main gradients are fp32
  // Both run over the same parameters: every parameter of the rank (tp = pp = dp = 1).
  const std::int64_t n = count_parameters(gpt_tiny()).total;
  CHECK(std::get<VectorShape>(unscale.shape).elements == n);
  CHECK(std::get<VectorShape>(adam.shape).elements == n);
}
