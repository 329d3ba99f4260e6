#include <doctest/doctest.h>

#include "schedules/calibration_programs.hpp"
#include "sim/comm_plan.hpp"

using namespace meshsim;

TEST_CASE("calibration programs: categories by world size, all valid and deadlock-free") {
  for (int world : {1, 2, 3, 4}) {
    CAPTURE(world);
    CalibrationOptions o;
    o.world_size = world;
    o.ranks_per_node = world;
    o.quick = true;
    const auto programs = calibration_programs(o);
    CHECK(programs.size() == (world == 1 ? 1U : 4U));
    for (const auto& cp : programs) {
      CHECK(cp.program.world_size() == world);
      CHECK_NOTHROW(validate_program(cp.program));
      for (const auto& point : cp.points) CHECK_FALSE(point.ops.empty());
    }
  }
}

TEST_CASE("calibration programs: quick compute grid and repetitions") {
  CalibrationOptions o;
  o.world_size = 2;
  o.ranks_per_node = 2;
  o.quick = true;
  o.runs = 5;
  const auto cp = calibration_programs(o).at(0);
  REQUIRE(cp.category == BenchCategory::compute);
  // Quick: 2^3 GEMM shapes x 2 variants (nn, nt) + fused at m = n = k = 512 (linear_bwd none, gelu,
  // relu; gemm gelu, relu) + 3 other dtypes' GEMMs + 2 attention kinds x 2 masks x 2 blocks + 2
  // merges + 5 vector kernels x 3 sizes (one past the last-level cache) = 16 + 5 + 3 + 8 + 2 +
  // 15 = 49 points.
  CHECK(cp.points.size() == 49);
  // Each point: (1 warm-up + 5 runs) x 2 ranks ops.
  for (const auto& p : cp.points) CHECK(p.ops.size() == 12);
  CHECK(cp.program.ops.size() == 49 * 12);
}

TEST_CASE("calibration programs: full compute grid, its families in order") {
  CalibrationOptions o;
  o.world_size = 2;
  o.ranks_per_node = 2;
  o.dtype = DType::fp32;
  o.runs = 5;
  const auto cp = calibration_programs(o).at(0);
  REQUIRE(cp.category == BenchCategory::compute);
  // 3 variants x 3^3 GEMM shapes + 2^3 fused shapes x (3 linear_bwd + 2 gemm) + 3 other dtypes'
  // GEMMs + 2 attention kinds x 2 masks x 6 blocks + 6 merges + 5 vector kernels x 5 sizes
  // = 81 + 40 + 3 + 24 + 6 + 25 = 179 points of (1 warm-up + 5 runs) x 2 ranks ops.
  REQUIRE(cp.points.size() == 179);
  CHECK(cp.program.ops.size() == 179 * 12);
  CHECK(cp.program.ops.front().name == "gemm nn fp32 m64 n64 k64 #0");
  CHECK(cp.program.ops.front().rank == 0);
  // Rounds rotate: round 5's last point is (5 + 178) mod 179 = 4, the fifth GEMM shape.
  CHECK(cp.program.ops.back().name == "gemm nn fp32 m64 n256 k256 #5");
  CHECK(cp.program.ops.back().rank == 1);
  // The first point of each family.
  CHECK(cp.points[0].name == "gemm nn fp32 m64 n64 k64");
  CHECK(cp.points[81].name == "linear_bwd none fp32 m256 n256 k256");
  CHECK(cp.points[121].name == "gemm bf16 m512 n512 k512");
  CHECK(cp.points[124].name == "attention_fwd fp32 none t64");
  CHECK(cp.points[148].name == "lse_merge t64");
  CHECK(cp.points[154].name == "copy fp32 n1024");
  CHECK(cp.points[178].name == "optimizer_update fp32 n4194304");
}

TEST_CASE("calibration programs: repetitions interleaved in rotating rounds, warm-up first") {
  CalibrationOptions o;
  o.world_size = 2;
  o.ranks_per_node = 2;
  o.quick = true;
  o.runs = 5;
  const auto programs = calibration_programs(o);
  const auto& compute = programs.at(0);
  const std::size_t n = compute.points.size();  // 44, each once per round on 2 ranks
  const auto& ops = compute.program.ops;
  // Round 0 (the warm-up) runs every point once before any timed repetition.
  for (std::size_t i = 0; i < 2 * n; ++i) CHECK(ops[i].name.ends_with(" #0"));
  // Round 1 starts at point 1, round 2 at point 2.
  CHECK(ops[2 * n].name == compute.points[1].name + " #1");
  CHECK(ops[4 * n].name == compute.points[2].name + " #2");
  // A point's repetitions are a round apart, never back to back: rank 0's ops of point 0 lie at
  // least 2n - 2 ops apart (a round of 2n ops, less the rotation by one point).
  const auto& p0 = compute.points[0].ops;
  for (std::size_t k = 2; k < p0.size(); k += 2) CHECK(p0[k] - p0[k - 2] >= 2 * n - 2);
  // p2p and collectives rotate the same way: round 1 begins with the second size (a round of
  // p2p is 2 sizes x 4 ops: ping and pong on both ranks).
  const auto& p2p = programs.at(1);
  CHECK(p2p.points.size() == 2);
  CHECK(p2p.program.ops[8].name == p2p.points[1].name + " #1 ping");
  const auto& coll = programs.at(2);
  CHECK(coll.program.ops[2 * coll.points.size()].name == coll.points[1].name + " #1");
}

TEST_CASE("calibration programs: collectives for every group size dividing the world") {
  CalibrationOptions o;
  o.world_size = 4;
  o.ranks_per_node = 4;
  o.quick = true;
  const auto cps = calibration_programs(o);
  const auto& coll = cps.at(2);
  REQUIRE(coll.category == BenchCategory::collective);
  // g in {2, 4} (3 does not divide 4) x 4 kinds x 2 quick sizes = 16 points.
  CHECK(coll.points.size() == 16);
  int g2 = 0, g4 = 0;
  for (const auto& p : coll.points) (p.group_size == 2 ? g2 : g4) += 1;
  CHECK(g2 == 8);
  CHECK(g4 == 8);
  // p2p: pairs (0,1) and (2,3), 2 sizes; each pair's first rank records its ping and its pong
  // for each of the 6 repetitions: 2 pairs x 6 x 2 = 24 recorded ops per point.
  const auto& p2p = cps.at(1);
  REQUIRE(p2p.points.size() == 2);
  CHECK(p2p.points[0].ops.size() == 24);
}
