#include <doctest/doctest.h>

#include "sim/comm_plan.hpp"
#include "validate/check/workload_registry.hpp"
#include "validate/run/comm_args.hpp"
#include "validate/run/memory_estimate.hpp"
#include "validate/tensors/tensor_store.hpp"

using namespace meshsim;

namespace {

PipelineConfig pipeline(std::int64_t tokens, std::int64_t hidden, DType dtype) {
  PipelineConfig c;
  c.shape.stages = 4;
  c.shape.microbatches = 8;
  c.tokens = tokens;
  c.hidden = hidden;
  c.dtype = dtype;
  return c;
}

}  // namespace

TEST_CASE("memory estimate: a rank's slots and scratch are what its TensorStore allocates") {
  const Workload w{pipeline(16, 32, DType::fp32)};
  const Program p = build_program(w);
  const CommPlan plan = validate_program(p);
  for (int rank = 0; rank < p.world_size(); ++rank) {
    CAPTURE(rank);
    const auto scratch = comm_scratch_bytes(p, plan, rank);
    const TensorStore store(p, rank, scratch);
    const RankMemoryEstimate e = estimate_rank_memory(p, plan, tensor_layout(w), false, rank);
    // Slots are rounded up to the store's 64-byte alignment: at most 63 bytes more per slot.
    CHECK(e.slots >= store.total_slot_bytes());
    CHECK(e.slots < store.total_slot_bytes() + 64 * static_cast<std::int64_t>(p.slots.size()));
    CHECK(e.comm == store.total_scratch_bytes());
    CHECK(e.kernels == 0);  // every kernel of a workload names its slots
    CHECK(e.gather == 0);
  }
}

TEST_CASE("memory estimate: gathering adds to rank 0 only, and the peak is that rank's") {
  const Workload w{pipeline(16, 32, DType::fp64)};
  const Program p = build_program(w);
  const CommPlan plan = validate_program(p);
  const TensorLayout layout = tensor_layout(w);
  const RankMemoryEstimate r0 = estimate_rank_memory(p, plan, layout, true, 0);
  const RankMemoryEstimate r1 = estimate_rank_memory(p, plan, layout, true, 1);
  CHECK(r0.gather > 0);
  CHECK(r1.gather == 0);
  const RankMemoryEstimate peak = estimate_peak_memory(p, plan, layout, true);
  CHECK(peak.rank == 0);
  CHECK(peak.total() == r0.total());
}

TEST_CASE("memory estimate: the GPU-sized pipeline needs gigabytes, the laptop default not") {
  const auto total = [](std::int64_t tokens, std::int64_t hidden) {
    const Workload w{pipeline(tokens, hidden, DType::fp64)};
    const Program p = build_program(w);
    return estimate_peak_memory(p, validate_program(p), tensor_layout(w), true).total();
  };
  // 4096 x 4096 fp64: one activation is 4096 x 4096 x 8 B = 134 MB, and a stage holds at least
  // an input per microbatch (8): over 1 GB (issue 18: killed at about 7.2 GB per rank).
  CHECK(total(4096, 4096) > 1'000'000'000);
  // The validate default, 256 x 256 fp64: an activation and a weight are 0.5 MB each; even 8
  // microbatches x 4 stages of every tensor gathered stay far under 100 MB.
  CHECK(total(256, 256) < 100'000'000);
}

TEST_CASE("memory estimate: bytes are printed in decimal units with three digits") {
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1'250'000'000) == "1.25 GB");
  CHECK(format_bytes(72'400'000) == "72.4 MB");
  CHECK(format_bytes(512'000'000) == "512 MB");
}
