#include <doctest/doctest.h>

#include "sim/hardware_profile.hpp"
#include "sim/step_metrics.hpp"
#include "tiny_programs.hpp"

using namespace meshsim;
using meshsim::testing::exchange;
using meshsim::testing::vector_kernel;

namespace {

// A 2 x 2 mesh (tp fastest, then pp): rank 0 computes, all-reduces over tp and sends to its pp
// neighbour; the timeline is written by hand.
struct Fixture {
  Program program;
  Timeline timeline;
};

Fixture fixture() {
  ProgramBuilder b(Mesh({{"tp", 2}, {"pp", 2}}, 8), false, "breakdown");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("comm");
  const GroupId tp = b.group("tp", {0, 1});
  b.add(0, compute, "kernel", {}, vector_kernel());  // op 0
  b.add(0, comm, "ar", {}, CollectiveCall{CollectiveKind::all_reduce, tp, 64, DType::bf16});
  b.add(0, comm, "send", {}, exchange(2, 2, 64));  // op 2: pp neighbour
  Fixture f;
  f.program = std::move(b).finish();
  // kernel [0, 10); all-reduce posted at 5, moving [8, 14); exchange posted 14, moving [20, 30).
  f.timeline.ops = {{0, -1, 10}, {5, 8, 14}, {14, 20, 30}};
  return f;
}

}  // namespace

TEST_CASE("comm_dim: a collective's group dimension, a transfer's crossed mesh dimension") {
  const Fixture f = fixture();
  CHECK(comm_dim(f.program, f.program.ops[0]).empty());
  CHECK(comm_dim(f.program, f.program.ops[1]) == "tp");
  CHECK(comm_dim(f.program, f.program.ops[2]) == "pp");  // rank 0 -> rank 2: pp index 0 -> 1
}

TEST_CASE("time_breakdown: exposed communication per dimension, net of compute") {
  const Fixture f = fixture();
  const TimeBreakdown b = time_breakdown(f.program, f.timeline, 40);
  // Only rank 0 runs ops. Compute [0, 10) = 10 ns; tp moves [8, 14): 4 ns exposed; pp moves
  // [20, 30): 10 ns exposed; the rest of the 40 ns makespan (16 ns) is waiting.
  CHECK(b.compute == doctest::Approx(10e-9));
  CHECK(b.exposed_of("tp") == doctest::Approx(4e-9));
  CHECK(b.exposed_of("pp") == doctest::Approx(10e-9));
  CHECK(b.exposed_of("dp") == 0.0);
  CHECK(b.bubble == doctest::Approx(16e-9));
}

TEST_CASE("evaluate_step: tokens/s and MFU from the step time") {
  SimulationResult r;
  r.metrics.makespan = 2'000'000'000;  // 2 s
  const HardwareProfile hw = load_hardware("h100-sxm");
  const double peak = hw.peak_flops[static_cast<std::size_t>(DType::bf16)];
  // 1e6 tokens in 2 s on 8 GPUs, 6e9 FLOPs per token: MFU = 6e9 x 5e5 / (8 x peak).
  // Counting full attention, 7e9 FLOPs per token: 7e9 x 5e5 / (8 x peak).
  const StepEvaluation e = evaluate_step(r, StepWork{1e6, 6e9, 8, 7e9}, hw);
  CHECK(e.step_time_s == doctest::Approx(2.0));
  CHECK(e.tokens_per_s == doctest::Approx(5e5));
  CHECK(e.mfu == doctest::Approx(6e9 * 5e5 / (8 * peak)));
  CHECK(e.mfu_full_attention == doctest::Approx(7e9 * 5e5 / (8 * peak)));
}
