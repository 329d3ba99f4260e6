#include <doctest/doctest.h>

#include "schedules/step_plan.hpp"
#include "sim/error.hpp"

using namespace meshsim;

namespace {

StepPlan plan(int tp, int pp, int cp, int dp, std::int64_t gbs) {
  StepPlan p;
  p.tp = tp;
  p.pp = pp;
  p.cp = cp;
  p.dp = dp;
  p.global_batch = gbs;
  return p;
}

}  // namespace

TEST_CASE("step plan: world size, microbatches, sequence and pipeline shape") {
  const TransformerModel m = *builtin_model("llama3-8b");
  StepPlan p = plan(2, 4, 2, 8, 256);
  p.microbatch_size = 2;
  CHECK(world_size(p) == 2 * 4 * 2 * 8);
  CHECK(microbatches(p) == 256 / (8 * 2));  // gbs / (dp x mbs)
  CHECK(step_seq(m, p) == m.seq_len);
  p.seq = 4096;
  CHECK(step_seq(m, p) == 4096);
  const PipelineShape s = step_shape(p);
  CHECK(s.stages == 4);
  CHECK(s.microbatches == 16);
  CHECK(s.chunks == 1);
}

TEST_CASE("step plan: the size estimate and its guard") {
  const TransformerModel m = *builtin_model("llama3-8b");  // 32 layers
  StepPlan p = plan(8, 4, 2, 16, 1024);
  // built ranks (tp folded, dp folded) pp x cp = 8; microbatches 64; 8 layers per pipeline rank;
  // 48 + 8 cp = 64 ops per layer.
  CHECK(estimated_ops(m, p, true) == 8 * 64 * 8 * 64);
  CHECK(estimated_ops(m, p, false) == 8 * 8 * 64 * 8 * 64);
  CHECK_NOTHROW(check_step_size(m, p, true));
  p.fold_dp = false;
  p.global_batch = 1 << 20;  // 65536 microbatches
  CHECK_THROWS_AS(check_step_size(m, p, false), InputError);
}

TEST_CASE("step plan: batch sizes past 2^30 sequences are refused before any arithmetic") {
  // dp 32 x mbs 2^62 wraps int64 to 0: the divisibility check would divide by zero.
  StepPlan p;
  p.dp = 32;
  p.microbatch_size = std::int64_t{1} << 62;
  p.global_batch = 512;
  CHECK_THROWS_WITH_AS(check_step_plan(load_model("llama3-8b"), p),
                       "`mbs` must be at most 1073741824 sequences, got 4611686018427387904",
                       InputError);
  p.microbatch_size = 1;
  p.global_batch = (std::int64_t{1} << 30) + 32;
  CHECK_THROWS_AS(check_step_plan(load_model("llama3-8b"), p), InputError);
}
