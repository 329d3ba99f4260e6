// The layer emitters (schedules/step_layers.cpp) through the steps they build: the attention
// core's ops, the memory-bound passes' operands, and what a materialized core costs.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/error.hpp"
#include "sim/run.hpp"
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

namespace {

// One Llama 3 70B layer (h 8192, 64 heads, 8 KV heads, SwiGLU f 28672; Meta's config) with a
// small vocabulary, seq 8192, tp 8 on one H100 node (132 SMs), sequence parallel.
TransformerModel llama70b_layer() {
  TransformerModel m = *builtin_model("llama3-70b");
  m.layers = 1;
  m.vocab = 1024;
  m.seq_len = 8192;
  return m;
}

StepPlan overlap_plan(bool on) {
  StepPlan p = plan_of(8, 1, 1, 1, 1);
  p.tp_comm_overlap = on;
  p.gpu_sms = 132;
  return p;
}

// Rank 0's compute ops by name: (start, end).
std::vector<std::pair<std::string, std::pair<Nanos, Nanos>>> compute_windows(
    const SimulationResult& r) {
  std::vector<std::pair<std::string, std::pair<Nanos, Nanos>>> out;
  for (const Op& op : r.program.ops) {
    if (op.rank != 0 || !op.is_compute()) continue;
    const auto& t = r.timeline.ops[static_cast<std::size_t>(op.id)];
    out.emplace_back(op.name, std::pair{t.start, t.end});
  }
  return out;
}

Nanos compute_sum(const SimulationResult& r) {
  Nanos s = 0;
  for (const auto& [name, w] : compute_windows(r)) s += w.second - w.first;
  return s;
}

}  // namespace

TEST_CASE("step layers: TP overlap hides the MLP-up all-gather behind its chunk GEMMs") {
  const HardwareProfile hw = *builtin_hardware("h100-sxm");
  const SimulationResult r =
      run_simulation(build_training_step(llama70b_layer(), overlap_plan(true), 8), hw);
  // The ring: mlp up's 8 chunk GEMMs [T/8 = 1024, 2 x 28672 / 8 = 7168, 8192] (120 GFLOP each,
  // ~150 us) beside 7 exchanges of a [1024, 8192] bf16 shard: 16.8 MB over NVLink at 370 GB/s plus
  // one 3.4 us NVLink step = 48.7 us. The compute stream waits for the ring only in the gaps
  // between chunk GEMMs; their sum is bounded by one chunk's transfer + latency.
  const double chunk_transfer_s = 3.4e-6 + 1024.0 * 8192 * 2 / 370e9;
  Nanos gaps = 0, previous_end = -1;
  int chunks = 0;
  for (const auto& [name, w] : compute_windows(r)) {
    if (name.rfind("mlp up gemm ", 0) != 0) continue;
    if (previous_end >= 0) gaps += w.first - previous_end;
    previous_end = w.second;
    ++chunks;
  }
  CHECK(chunks == 8);
  CHECK(static_cast<double>(gaps) <= chunk_transfer_s * 1e9 + 1);
  // Every exchange is a userbuffers permute on the TP communication stream.
  int exchanges = 0;
  for (const Op& op : r.program.ops) {
    if (op.name.find("ring exchange") == std::string::npos) continue;
    ++exchanges;
    CHECK(r.program.streams[static_cast<std::size_t>(op.stream)] == "tp_comm");
    const auto& c = std::get<CollectiveCall>(op.body);
    CHECK(c.algo == CollectiveAlgo::userbuffers);
    CHECK(c.kind == CollectiveKind::permute);
  }
  // 7 per ring: qkv and mlp up forward, proj and mlp down dgrad.
  CHECK(exchanges == 4 * 7);
}

TEST_CASE("step layers: TP overlap is never slower than the split GEMMs' extra time") {
  const HardwareProfile hw = *builtin_hardware("h100-sxm");
  const TransformerModel m = llama70b_layer();
  const SimulationResult off = run_simulation(build_training_step(m, overlap_plan(false), 8), hw);
  const SimulationResult on = run_simulation(build_training_step(m, overlap_plan(true), 8), hw);
  // Without the flag: NCCL collectives only, every GEMM on all SMs.
  for (const Op& op : off.program.ops) {
    if (const auto* c = std::get_if<CollectiveCall>(&op.body)) {
      CHECK(c->algo != CollectiveAlgo::userbuffers);
    } else if (const auto* k = std::get_if<KernelCall>(&op.body)) {
      CHECK(k->sm_share == 1.0);
    }
  }
  // With it, the compute stream runs the same work as chunks (each GEMM costed at its own shape
  // by the efficiency model, plus a launch each) and some GEMMs on 116 of 132 SMs: that extra
  // compute is all the overlap can lose; the communication it hides is the gain.
  const Nanos extra = compute_sum(on) - compute_sum(off);
  CHECK(extra > 0);
  CHECK(on.metrics.makespan <= off.metrics.makespan + extra);
  // Here the hidden communication outweighs it: the step is faster.
  CHECK(on.metrics.makespan < off.metrics.makespan);
}

TEST_CASE("step layers: TP overlap needs tp > 1 with SP, bf16 and the GPU's SM count") {
  const TransformerModel m = llama70b_layer();
  StepPlan p = overlap_plan(true);
  p.sequence_parallel = false;
  CHECK_THROWS_WITH_AS(check_step_plan(m, p),
                       doctest::Contains("`tp_comm_overlap` needs `tp` > 1 with sequence "
                                         "parallelism (got tp 8, sequence parallelism off)"),
                       InputError);
  p = overlap_plan(true);
  p.precision = Precision::fp8_delayed;  // per-tensor scaling: TE overlaps it
  CHECK_NOTHROW(check_step_plan(m, p));
  p.precision = Precision::fp8_current;
  CHECK_NOTHROW(check_step_plan(m, p));
  p.precision = Precision::mxfp8;  // TE >= 2.2 raises NotImplementedError for block scaling
  CHECK_THROWS_WITH_AS(check_step_plan(m, p),
                       doctest::Contains("takes per-tensor FP8 scaling only), got `precision` "
                                         "mxfp8"),
                       InputError);
  p = overlap_plan(false);
  p.tp_overlap_rs = TpOverlapRs::ring_exchange;
  CHECK_THROWS_WITH_AS(check_step_plan(m, p),
                       doctest::Contains("`tp_overlap_rs` ring-exchange needs `tp_comm_overlap`"),
                       InputError);
  p = overlap_plan(true);
  p.gpu_sms = 0;
  CHECK_THROWS_WITH_AS(check_step_plan(m, p), doctest::Contains("`gpu_sms` > 16"), InputError);
  p = overlap_plan(true);
  p.tp = 2;
  p.seq = 8194;  // 4097 tokens per TP rank under SP, but 8194 is not a multiple of 4 chunks
  CHECK_THROWS_WITH_AS(check_step_plan(m, p),
                       doctest::Contains("the 8194 tokens of a microbatch (mbs x seq / cp) must "
                                         "be divisible by the 4 chunks"),
                       InputError);
  p.seq = 8192;
  CHECK_NOTHROW(check_step_plan(m, p));
}

TEST_CASE("step layers: TP overlap folds: one built TP rank times the whole ring exactly") {
  // tiny(2) at tp 2: 32 tokens, 16 per TP rank, 4 pipelined chunks of 8 rows. Folded, each ring
  // step is a permute on a one-member group timed as the 2-rank TP group; unfolded, both ranks
  // run it: the same analytical times, the same step to the nanosecond.
  const HardwareProfile hw = *builtin_hardware("h100-sxm");
  StepPlan p = plan_of(2, 2, 1, 2, 8);
  p.tp_comm_overlap = true;
  p.gpu_sms = 132;
  const Nanos folded = step_time(tiny(2), p, hw);
  p.fold_tp = false;
  p.fold_dp = false;
  CHECK(step_time(tiny(2), p, hw) == folded);
  p.tp_comm_overlap = false;
  CHECK(step_time(tiny(2), p, hw) != folded);
}

TEST_CASE(
    "step layers: FP8 parameters need per-tensor FP8, the distributed optimizer, a dense model") {
  const TransformerModel m = llama70b_layer();
  StepPlan p = overlap_plan(false);
  p.fp8_param_gather = true;
  CHECK_THROWS_WITH_AS(check_step_plan(m, p),
                       doctest::Contains("`fp8_param_gather` needs per-tensor FP8 linears"),
                       InputError);
  p.precision = Precision::fp8_current;
  CHECK_THROWS_WITH_AS(check_step_plan(m, p),
                       doctest::Contains("modelled with the distributed optimizer"), InputError);
  p.distributed_optimizer = true;
  CHECK_NOTHROW(check_step_plan(m, p));
}
