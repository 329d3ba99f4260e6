#include <doctest/doctest.h>

#include "schedules/training_step.hpp"
#include "sim/comm_volume.hpp"
#include "sim/run.hpp"
#include "tests/schedules/device_hardware.hpp"
#include "tests/schedules/tiny_moe.hpp"

using namespace meshsim;
using meshsim::test::count_named;
using meshsim::test::dim_index;
using meshsim::test::plan;
using meshsim::test::tiny_moe;

TEST_CASE("step deepep: flex moves DeepEP's volume, RDMA and NVLink all-to-alls over two nodes") {
  const TransformerModel m = tiny_moe(5);  // 4 MoE layers, 8 experts top 2, h 64, seq 32
  StepPlan p = plan(1, 1, 8, 8, 64);       // 8 microbatches of 1 x 32 tokens
  p.moe.dispatcher = TokenDispatcher::flex;
  const int gpus_per_node = 4;  // ep 8 = 2 nodes x 4 ranks
  const Program prog = build_training_step(m, p, gpus_per_node);
  // Per rank, MoE layer, microbatch and each of the 4 passes (dispatch, combine, forward and
  // backward): NVLink buffer T · ep · P(rank) · h · e = 32 · 8 · 2/8 · 64 · 2 = 8,192 bytes, 3/4
  // leaving; RDMA buffer T · nodes · P(node) · h · e = 32 · 2 · 22/28 · 128 = 6,437 (rounded),
  // 1/2 leaving (tests/schedules/test_deepep_volume.cpp for the shares).
  const double per_pass = 8192.0 * 3 / 4 + 6437.0 / 2;
  CHECK(comm_bytes_per_rank(prog)[dim_index("ep")] ==
        doctest::Approx(4 * 8 * 4 * per_pass).epsilon(1e-4));
  CHECK(count_named(prog, "rdma all-to-all") == 4 * 8 * 4);
  CHECK(count_named(prog, "nvlink all-to-all") == 4 * 8 * 4);
  // The alltoall dispatcher moves T · k copies (32 · 2 · 64 · 2 = 8,192 bytes, 7/8 leaving): more.
  StepPlan a = p;
  a.moe.dispatcher = TokenDispatcher::alltoall;
  const Program plain = build_training_step(m, a, gpus_per_node);
  CHECK(comm_bytes_per_rank(plain)[dim_index("ep")] ==
        doctest::Approx(4 * 8 * 4 * 8192.0 * 7 / 8).epsilon(1e-4));
  // One node (8 GPUs per node): one all-to-all of the NVLink volume, 7/8 of 32 · 8 · 2/8 · 128.
  const Program one_node = build_training_step(m, p, 8);
  CHECK(count_named(one_node, "rdma") == 0);
  CHECK(comm_bytes_per_rank(one_node)[dim_index("ep")] ==
        doctest::Approx(4 * 8 * 4 * 8192.0 * 7 / 8).epsilon(1e-4));
  const HardwareProfile hw = testing::device_hardware();
  CHECK(run_simulation(prog, hw).metrics.makespan > 0);
}
