#include <doctest/doctest.h>

#include <cstdint>
#include <variant>

#include "schedules/cross_entropy.hpp"
#include "schedules/memory_model.hpp"
#include "schedules/model_catalog.hpp"
#include "schedules/training_step.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/kernel_call.hpp"

using namespace meshsim;

namespace {

// torchtitan's Llama 3 8B run: 8 GPUs, FSDP, mbs 2 x 8192 tokens, op-level selective recompute.
MemoryPlan torchtitan_8b(CrossEntropy loss) {
  MemoryPlan p;
  p.dp = 8;
  p.seq = 8192;
  p.microbatch_size = 2;
  p.recompute = Recompute::selective_op;
  p.distributed_optimizer = true;
  p.sharding.zero = 3;
  p.sharding.fsdp = true;
  p.cross_entropy = loss;
  return p;
}

}  // namespace

TEST_CASE("cross entropy: names round-trip; anything else is refused") {
  for (auto c : {CrossEntropy::vocab_parallel, CrossEntropy::torch_fp32}) {
    CHECK(parse_cross_entropy(to_string(c)) == c);
  }
  CHECK(to_string(CrossEntropy::torch_fp32) == "torch-fp32");
  CHECK_FALSE(parse_cross_entropy("fused").has_value());
}

TEST_CASE("cross entropy: the loss kernel moves 2 bf16 operands plus the fp32 passes per logit") {
  // llama3-8b on one GPU, mbs 1, seq 1024: the loss runs over 1024 x 128256 logits. Its bytes:
  // vocab-parallel 1024 · 128256 · (2 · 2 + 48) (cross_entropy.cpp's pass list).
  const TransformerModel m = *builtin_model("llama3-8b");
  StepPlan plan;
  plan.seq = 1024;
  plan.global_batch = 1;
  for (auto loss : {CrossEntropy::vocab_parallel, CrossEntropy::torch_fp32}) {
    plan.cross_entropy = loss;
    const Program program = build_training_step(m, plan, 8);
    double bytes = -1;
    for (const Op& op : program.ops) {
      const auto* call = std::get_if<KernelCall>(&op.body);
      if (call != nullptr && call->kind == KernelKind::loss) bytes = kernel_bytes(*call);
    }
    const double per_logit = loss == CrossEntropy::vocab_parallel ? 52 : 48;
    CHECK(bytes == 1024.0 * 128256.0 * per_logit);
  }
}

TEST_CASE("cross entropy: torch-fp32 adds its backward's two fp32 gradients to the last stage") {
  // s·b·V/t = 8192 · 2 · 128256 = 2,101,346,304 logits; PyTorch's backward holds nll_loss's dense
  // fp32 gradient and log_softmax's fp32 input gradient beside the saved output: 8 bytes each.
  const TransformerModel m = *builtin_model("llama3-8b");
  HardwareProfile hw = load_hardware("h100-sxm");
  hw.memory_bytes = 96e9;
  const MemoryEstimate megatron =
      estimate_memory(m, torchtitan_8b(CrossEntropy::vocab_parallel), hw);
  const MemoryEstimate torch = estimate_memory(m, torchtitan_8b(CrossEntropy::torch_fp32), hw);
  const StageMemory& st = torch.stages.at(0);
  CHECK(st.loss_working == 8.0 * 2'101'346'304.0);
  CHECK(megatron.stages.at(0).loss_working == 0.0);
  // Both keep the same 4-byte softmax / log-softmax output per logit; the transient counts where
  // it exceeds the recompute of one layer (it does here: 16.8 GB against about 1 GB).
  REQUIRE(st.loss_working > st.recompute_working);
  CHECK(torch.peak_bytes - megatron.peak_bytes ==
        doctest::Approx(st.loss_working - st.recompute_working));
}
