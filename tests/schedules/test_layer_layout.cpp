// Layers per stage given by the user (LayerLayout, schedules/memory_model.hpp): Megatron's
// --decoder-first/last-pipeline-num-layers and a per-stage list, 0-layer stages included.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "schedules/memory_model.hpp"
#include "schedules/training_step.hpp"
#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "tests/schedules/device_hardware.hpp"
#include "tests/schedules/tiny_models.hpp"

using namespace meshsim;

namespace {

TransformerModel tiny(int layers) {
  return test::tiny_gqa_model(layers);
}

PipelineShape shape_of(PipelineSchedule s, int pp, int chunks) {
  return PipelineShape{s, pp, 2 * pp, chunks, 0};
}

LayerLayout listed(std::vector<int> per_stage) {
  LayerLayout l;
  l.layers_per_stage = std::move(per_stage);
  return l;
}

std::string message_of(int layers, const PipelineShape& shape, const LayerLayout& layout) {
  try {
    split_layers(layers, shape, layout);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Every kernel 1 us, every transfer and collective free (the step time of unit op times).
Nanos unit_makespan(const Program& prog) {
  const HardwareProfile hw = testing::device_hardware();
  const CommPlan plan = validate_program(prog);
  Durations d = estimate_durations(prog, plan, hw);
  for (std::size_t i = 0; i < prog.ops.size(); ++i) d.ops[i] = prog.ops[i].is_compute() ? 1000 : 0;
  for (auto& t : d.transfers) t = 0;
  for (auto& c : d.collectives) c = 0;
  d.comm_interference = 1.0;
  return simulate(prog, plan, d).makespan;
}

}  // namespace

TEST_CASE("layer layout: the rule when nothing is given") {
  const PipelineShape s = shape_of(PipelineSchedule::one_f_one_b, 16, 1);
  CHECK(split_layers(126, s, LayerLayout{}) == split_layers(126, 16));
}

TEST_CASE("layer layout: Megatron's first/last pipeline-rank layers") {
  // 30 layers on pp 4, first 6 and last 6: the 2 middle ranks share 30 - 12 = 18, 9 each.
  LayerLayout l;
  l.decoder_first_pipeline_num_layers = 6;
  l.decoder_last_pipeline_num_layers = 6;
  CHECK(split_layers(30, shape_of(PipelineSchedule::one_f_one_b, 4, 1), l).layers ==
        std::vector<int>{6, 9, 9, 6});
  l.decoder_first_pipeline_num_layers = 2;
  l.decoder_last_pipeline_num_layers = 2;
  // Interleaved pp 4 x vp 2, 20 layers, first 2 and last 2: middle ranks (20 - 4) / 2 = 8, each
  // rank's layers halved over its 2 chunks (rank 0: 1, ranks 1 and 2: 4, rank 3: 1); global
  // stage c·p + r: chunk 0 of ranks 0..3, then chunk 1 of ranks 0..3.
  CHECK(split_layers(20, shape_of(PipelineSchedule::interleaved, 4, 2), l).layers ==
        std::vector<int>{1, 4, 4, 1, 1, 4, 4, 1});
  // Only the first given: 31 layers on pp 4, first 7, the other 3 ranks 24 / 3 = 8.
  LayerLayout first;
  first.decoder_first_pipeline_num_layers = 7;
  CHECK(split_layers(31, shape_of(PipelineSchedule::one_f_one_b, 4, 1), first).layers ==
        std::vector<int>{7, 8, 8, 8});
  // 30 - 6 - 5 = 19 does not divide over 2 ranks.
  l.decoder_first_pipeline_num_layers = 6;
  l.decoder_last_pipeline_num_layers = 5;
  CHECK(message_of(30, shape_of(PipelineSchedule::one_f_one_b, 4, 1), l) ==
        "`decoder_first_pipeline_num_layers` / `decoder_last_pipeline_num_layers` leave 19 of the "
        "model's 30 layers for the 2 other pipeline ranks: they must share them evenly "
        "(Megatron-Core's rule)");
  // Rank 0's 3 layers do not halve over 2 chunks.
  LayerLayout odd;
  odd.decoder_first_pipeline_num_layers = 3;
  CHECK(message_of(27, shape_of(PipelineSchedule::interleaved, 4, 2), odd) ==
        "pipeline rank 0 would hold 3 layers, not divisible over its 2 chunks (`vp`): Megatron "
        "splits a rank's layers evenly over its virtual stages");
}

TEST_CASE("layer layout: any count per global stage, 0 included (Zero Bubble's 1F1B-I)") {
  // 22 layers on pp 8 with one layer per chunk: vp 3, 24 chunks, the first and the last global
  // stage empty; rank r holds stages r, 8 + r, 16 + r: 2, 3, 3, 3, 3, 3, 3, 2 layers.
  std::vector<int> per_stage(24, 1);
  per_stage.front() = per_stage.back() = 0;
  const PipelineShape s = shape_of(PipelineSchedule::interleaved, 8, 3);
  const LayerSplit split = split_layers(22, s, listed(per_stage));
  CHECK(split.layers == per_stage);
  CHECK(split.uneven);
  std::vector<int> per_rank;
  for (int r = 0; r < 8; ++r) {
    int n = 0;
    for (int c = 0; c < 3; ++c)
      n += split.layers.at(static_cast<std::size_t>(global_stage(s, r, c)));
    per_rank.push_back(n);
  }
  CHECK(per_rank == std::vector<int>{2, 3, 3, 3, 3, 3, 3, 2});
  CHECK(message_of(22, s, listed({1, 2})) ==
        "`layers_per_stage` has 2 entries, the plan has 24 global pipeline stages (pp x chunks per "
        "rank): one entry per stage, in model order");
  per_stage[1] = 2;
  CHECK(message_of(22, s, listed(per_stage)) ==
        "`layers_per_stage` sums to 23, the model has 22 "
        "layers");
  per_stage[1] = -1;
  CHECK(message_of(22, s, listed(per_stage)) ==
        "`layers_per_stage` entry 1 is -1: a stage holds 0 or more layers");
  LayerLayout both = listed(std::vector<int>(24, 1));
  both.decoder_last_pipeline_num_layers = 1;
  CHECK(message_of(24, s, both) ==
        "`layers_per_stage` cannot be combined with `decoder_first_pipeline_num_layers` or "
        "`decoder_last_pipeline_num_layers`: it already gives every stage's layers");
}

TEST_CASE("layer layout: memory per stage follows the layers") {
  // pp 2, 1F1B, m 4: rank 0 holds min(p - r, m) = 2 microbatches in flight, rank 1 one.
  // Layers {2, 0}: rank 0 = 2 layers + embedding, rank 1 = the head only.
  const TransformerModel m = tiny(2);
  const HardwareProfile hw = testing::device_hardware();
  MemoryPlan p;
  p.pp = 2;
  p.microbatches = 4;
  const MemoryEstimate even = estimate_memory(m, p, hw);
  p.layout = listed({2, 0});
  const MemoryEstimate given = estimate_memory(m, p, hw);
  const ActivationTerms a = activation_terms(m, p);
  CHECK(given.stages[0].chunk_layers == std::vector<int>{2});
  CHECK(given.stages[1].chunk_layers == std::vector<int>{0});
  // One layer's parameters move from rank 1 to rank 0 (the even split holds one on each).
  const std::int64_t moved = given.stages[0].parameters - even.stages[0].parameters;
  CHECK(moved > 0);
  CHECK(even.stages[1].parameters - given.stages[1].parameters == moved);
  // Activations: inflight x (layers x per-layer + the stage's extra).
  CHECK(given.stages[0].activations ==
        doctest::Approx(2 * (2 * a.layer_stored + a.embedding_extra)));
  CHECK(given.stages[1].activations == doctest::Approx(1 * a.output_extra));
}

TEST_CASE("layer layout: step time with unit op times (tp 2, pp 2, 1F1B, 8 microbatches)") {
  // Every kernel 1 us, communication free; per layer 11 forward and 15 backward kernels (tp 2,
  // test_training_step's count), the first stage adds the embedding (1 forward, 1 gradient), the
  // last the final norm, head and loss (3 forward, 3 backward); per rank the grad-buffer memset
  // first, the grad norm and the optimizer last (1 each).
  const TransformerModel m = tiny(2);
  StepPlan p;
  p.tp = 2;
  p.pp = 2;
  p.global_batch = 8;
  const int gpn = load_hardware("h100-sxm").gpus_per_node;
  // Layers {2, 0}: rank 0 is the bottleneck and never waits (rank 1 needs 3 + 3 us per
  // microbatch): memset 1 + 8 x (F 1 + 22, B 30 + 1) + grad norm 1 + optimizer 1 = 435 us.
  p.layout = listed({2, 0});
  CHECK(unit_makespan(build_training_step(m, p, gpn)) == 435000);
  // Layers {0, 2}: rank 1 busy from its first input at 2 us (rank 0's memset and embedding):
  // 8 x (F 22 + 3, B 3 + 30) = 464 us, then rank 0's last embedding gradient, grad norm and
  // optimizer: 2 + 464 + 1 + 1 + 1 = 469 us.
  p.layout = listed({0, 2});
  CHECK(unit_makespan(build_training_step(m, p, gpn)) == 469000);
}
