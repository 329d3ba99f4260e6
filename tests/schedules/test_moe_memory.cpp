#include <doctest/doctest.h>

#include "schedules/moe_memory.hpp"
#include "schedules/step_plan.hpp"
#include "sim/hardware_profile.hpp"

using namespace meshsim;

namespace {

// Mixtral 8x7B's plan of these tests: 8 GPUs, one expert each (ep 8), 4096 tokens.
MemoryPlan ep8_plan() {
  MemoryPlan p;
  p.tp = 1;
  p.dp = 8;
  p.ep = 8;
  p.seq = 4096;
  p.distributed_optimizer = true;
  return p;
}

}  // namespace

TEST_CASE("moe memory: experts sharded over ep, optimizer over edp") {
  const TransformerModel m = *builtin_model("mixtral-8x7b");
  MemoryPlan p = ep8_plan();
  const MoeMemory mm = moe_memory(m, p);
  // one local expert: 3 · 4096 · 14336 = 176,160,768
  CHECK(mm.expert_params == 176'160'768);
  CHECK(mm.expert_data_parallel == 1);  // tp·cp·dp / (etp·ep) = 8 / 8
  // non-expert: attention 41,943,040 + router 4096·8 + norms 8192
  CHECK(mm.moe_layer_params == 41'943'040 + 32'768 + 8'192);
  // routed activations of 4096 tokens x 2 copies: 3·2·8192·14336 + 2·2·8192·4096 + 4·4096·8,
  // less the dense MLP term 3·2·4096·14336 (ffn_hidden = the expert FFN here)
  CHECK(mm.activation_delta == doctest::Approx(6.0 * 8192 * 14336 + 4.0 * 8192 * 4096 +
                                               4.0 * 4096 * 8 - 6.0 * 4096 * 14336));
  // dispatch buffers: 2 · 2 · 4096 · 2 · 4096
  CHECK(mm.dispatch_buffers == doctest::Approx(2.0 * 2 * 4096 * 2 * 4096));
  // The estimate: 32 layers, 4 local experts per rank at ep 2 would not fit; at ep 8 the
  // experts' weights are 32 x 176M x 2 bytes = 11.3 GB per rank.
  const MemoryEstimate est = estimate_memory(m, p, *builtin_hardware("h100-sxm"));
  CHECK(est.stages[0].expert_parameters == 32 * 176'160'768LL);
  CHECK(est.stages[0].moe_buffers == doctest::Approx(mm.dispatch_buffers));
}

TEST_CASE("moe memory: FP8 linears save the experts' GEMM inputs quantized") {
  const TransformerModel m = *builtin_model("mixtral-8x7b");
  MemoryPlan p = ep8_plan();
  p.precision = Precision::fp8_current;  // per-tensor FP8: 1 byte per element
  const MoeMemory mm = moe_memory(m, p);
  // 4096 tokens x 2 copies: gate/up outputs in bf16 (2 x 2 bytes) and the down input in FP8 (1)
  // per copy and expert feature; the permuted input in FP8 (1) and the experts' output in bf16
  // (2) per copy and hidden feature; fp32 router probabilities. Less the dense MLP as a dense
  // FP8 layer counts it: (2 x 2 + 1) bytes per token and feature.
  CHECK(mm.activation_delta == doctest::Approx(5.0 * 8192 * 14336 + 3.0 * 8192 * 4096 +
                                               4.0 * 4096 * 8 - 5.0 * 4096 * 14336));
  CHECK(mm.moe_linear_params == 41'943'040);  // attention only: no shared experts
  // TE's row- and column-wise FP8 copies of the rank's linear weights: per MoE layer the
  // attention's and the local expert's, 1 byte each, twice; 32 layers.
  const MemoryEstimate est = estimate_memory(m, p, *builtin_hardware("h100-sxm"));
  CHECK(est.stages[0].moe_layers == 32);
  CHECK(est.stages[0].quantized_weights ==
        doctest::Approx(2.0 * 32 * (41'943'040.0 + 176'160'768.0)));
}
