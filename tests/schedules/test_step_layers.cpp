// The layer emitters (schedules/step_layers.cpp) through the steps they build: the attention
// core's ops, the memory-bound passes' operands, and what a materialized core costs.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/error.hpp"
#include "tests/schedules/tiny_models.hpp"

using namespace meshsim;

namespace {

TransformerModel tiny(int layers) {
  return test::tiny_gqa_model(layers);
}
using test::plan_of;
using test::step_time;

}  // namespace

TEST_CASE("step layers: the materialized attention core, op by op") {
  // tiny(1): b 1, 4 heads, d 16, s 32, no dropout; tp 1: the core on 4 heads of 32 tokens.
  StepPlan p = plan_of(1, 1, 1, 1, 1);
  p.attention = AttentionCore::materialized;
  const Program prog = build_training_step(tiny(1), p, 8);
  std::vector<std::pair<std::string, KernelCall>> core;
  for (const Op& op : prog.ops) {
    if (op.name.rfind("attn ", 0) != 0 || op.name.rfind("attn norm", 0) == 0 ||
        op.name.find("residual") != std::string::npos) {
      continue;
    }
    core.emplace_back(op.name, std::get<KernelCall>(op.body));
  }
  // Forward: scores, softmax, context; backward: dprobs, dv, softmax bwd, dq, dk (no dropout).
  REQUIRE(core.size() == 8);
  CHECK(core[0].first == "attn scores");
  // Q K^T for b x heads = 4 query rows blocks of s = 32: m = 4 x 32, n = s, k = d.
  CHECK(std::get<GemmShape>(core[0].second.shape) == GemmShape{128, 32, 16});
  CHECK(core[1].first == "attn softmax");
  CHECK(std::get<VectorShape>(core[1].second.shape).elements == 4 * 32 * 32);  // b·a·s·s
  CHECK(core[2].first == "attn context");
  CHECK(std::get<GemmShape>(core[2].second.shape) == GemmShape{128, 16, 32});  // P V
  CHECK(core[5].first == "attn softmax bwd");
  // Softmax backward reads P and dP and writes dS: 3 operands; its forward 2 (read, write).
  CHECK(std::get<VectorShape>(core[5].second.shape) == VectorShape{4 * 32 * 32, 3, 0});
  CHECK(std::get<VectorShape>(core[1].second.shape).operands == 2);
  CHECK(core[7].first == "attn dk");
  // With dropout, one more score pass each way.
  TransformerModel dropped = tiny(1);
  dropped.dropout = true;
  int passes = 0;
  for (const Op& op : build_training_step(dropped, p, 8).ops) {
    if (op.name != "attn dropout" && op.name != "attn dropout bwd") continue;
    ++passes;
    // Read one score tensor, write one, and the 1-byte keep mask (written, then read back).
    CHECK(std::get<VectorShape>(std::get<KernelCall>(op.body).shape) ==
          VectorShape{4 * 32 * 32, 2, 1});
  }
  CHECK(passes == 2);
}

TEST_CASE("step layers: norm and MLP activation passes move their operands") {
  // tiny(1): h 64, f 128 (SwiGLU), s 32, b 1; tp 1 pp 1: 32 tokens on the rank.
  const TransformerModel m = tiny(1);
  const Program prog = build_training_step(m, plan_of(1, 1, 1, 1, 1), 8);
  auto shape_of = [&](const std::string& name) {
    for (const Op& op : prog.ops) {
      if (op.name == name) return std::get<VectorShape>(std::get<KernelCall>(op.body).shape);
    }
    FAIL("no op " << name);
    return VectorShape{};
  };
  const std::int64_t tokens = m.seq_len;
  CHECK(shape_of("attn norm") == VectorShape{tokens * m.hidden, 2, 0});      // read x, write y
  CHECK(shape_of("attn norm bwd") == VectorShape{tokens * m.hidden, 3, 0});  // x, dy -> dx
  // SwiGLU over f outputs: read gate and up, write their product; backward reads gate, up and dy
  // and writes both halves' gradients.
  CHECK(shape_of("activation") == VectorShape{tokens * m.ffn_hidden, 3, 0});
  CHECK(shape_of("activation bwd") == VectorShape{tokens * m.ffn_hidden, 5, 0});
}

TEST_CASE("step layers: a materialized core costs its score passes (slower than flash)") {
  const HardwareProfile hw = *builtin_hardware("a100-sxm");
  StepPlan p = plan_of(1, 1, 1, 1, 2);
  const Nanos flash = step_time(tiny(2), p, hw);
  p.attention = AttentionCore::materialized;
  CHECK(step_time(tiny(2), p, hw) > flash);
  p.cp = 2;
  CHECK_THROWS_WITH_AS(check_step_plan(tiny(2), p),
                       doctest::Contains("`attention` materialized needs `cp` 1"), InputError);
}
