#include <doctest/doctest.h>

#include <vector>

#include "schedules/sharding.hpp"
#include "sim/error.hpp"

using namespace meshsim;

TEST_CASE("sharding: ZeRO bytes per parameter follow the ZeRO paper's formulas") {
  // Rajbhandari et al. 2020, Figure 1: mixed-precision Adam, K = 12, fp16 parameters and
  // gradients (2 bytes each): baseline (2 + 2 + K) = 16, P_os 2 + 2 + K/N, P_os+g 2 + (2 + K)/N,
  // P_os+g+p (2 + 2 + K)/N. The paper's example: N = 64.
  const ParameterBytes paper{2, 2, 12};
  for (double n : {1.0, 8.0, 64.0, 1024.0}) {
    CAPTURE(n);
    CHECK(sharded_bytes_per_parameter(0, n, paper).total() == doctest::Approx(16.0));
    CHECK(sharded_bytes_per_parameter(1, n, paper).total() == doctest::Approx(2 + 2 + 12 / n));
    CHECK(sharded_bytes_per_parameter(2, n, paper).total() == doctest::Approx(2 + (2 + 12) / n));
    CHECK(sharded_bytes_per_parameter(3, n, paper).total() == doctest::Approx((2 + 2 + 12) / n));
  }
  // The paper's 7.5B example at N = 64: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB.
  const double psi = 7.5e9;
  CHECK(sharded_state(psi, 0, 64, paper).total() / 1e9 == doctest::Approx(120.0));
  CHECK(sharded_state(psi, 1, 64, paper).total() / 1e9 == doctest::Approx(31.4).epsilon(0.01));
  CHECK(sharded_state(psi, 2, 64, paper).total() / 1e9 == doctest::Approx(16.6).epsilon(0.01));
  CHECK(sharded_state(psi, 3, 64, paper).total() / 1e9 == doctest::Approx(1.9).epsilon(0.02));
  // FSDP2's fp32 parameter shard + fp32 gradient shard + Adam m, v: 16 / N.
  CHECK(sharded_bytes_per_parameter(3, 8, kFsdp2Bytes).total() == doctest::Approx(2.0));
}

TEST_CASE("sharding: unsharded unit buffers of ZeRO-3 / FSDP") {
  // Units of 10, 30 and 20 parameters gathered in the parameter dtype (e = 2).
  const std::vector<FsdpUnit> units = {{10, 20}, {30, 60}, {20, 40}};
  ShardingPlan s;
  s.zero = 3;
  // Two largest units gathered (30 + 20) x e, the largest's gradient in e plus its fp32
  // reduce-scatter input: 30 x (2 + 4).
  CHECK(unsharded_unit_bytes(s, units, 2) == doctest::Approx(50 * 2 + 30 * 6));
  // no_sync: all 60 parameters stay gathered for the step (x e) and every gradient is accumulated
  // unsharded in fp32 (x 4), plus the largest unit's gradient before its upcast (x e).
  s.no_sync = true;
  CHECK(unsharded_unit_bytes(s, units, 2) == doctest::Approx(60 * (2 + 4) + 30 * 2));
  s.no_sync = false;
  s.reshard_after_forward = false;  // all 60 parameters stay gathered
  CHECK(unsharded_unit_bytes(s, units, 2) == doctest::Approx(60 * 2 + 30 * 6));
  s.zero = 2;  // parameters not sharded: nothing gathered
  CHECK(unsharded_unit_bytes(s, units, 2) == 0);
}

TEST_CASE("sharding: units gathered in FP8 hold 1 byte per linear weight, their gradients e + 4") {
  // A 30-parameter unit of which 28 are linear weights gathered in FP8: 28 x 1 + 2 x 2 = 32 bytes;
  // a 20-parameter unit gathered in e: 40 bytes; a 10-parameter one in FP8 (8 linear): 12.
  const std::vector<FsdpUnit> units = {{10, 12}, {30, 32}, {20, 40}};
  ShardingPlan s;
  s.zero = 3;
  // The two largest gathered buffers (40 + 32), the largest unit's gradient by its 30 parameters.
  CHECK(unsharded_unit_bytes(s, units, 2) == doctest::Approx(40 + 32 + 30 * (2 + 4)));
  s.no_sync = true;  // all gathered (84 bytes), 60 fp32 gradients, the largest's in e
  CHECK(unsharded_unit_bytes(s, units, 2) == doctest::Approx(84 + 60 * 4 + 30 * 2));
  s.no_sync = false;
  s.reshard_after_forward = false;
  CHECK(unsharded_unit_bytes(s, units, 2) == doctest::Approx(84 + 30 * 6));
}

TEST_CASE("sharding: bad plans name the field") {
  ShardingPlan s;
  s.zero = 4;
  CHECK_THROWS_WITH_AS(check_sharding(s, 8), "`zero` must be 0, 1, 2 or 3 (got 4)", InputError);
  s.zero = 3;
  s.replicate = 3;
  CHECK_THROWS_AS(check_sharding(s, 8), InputError);  // 3 does not divide dp 8
  s.replicate = 2;
  CHECK_NOTHROW(check_sharding(s, 8));
  s.zero = 1;
  CHECK_THROWS_AS(check_sharding(s, 8), InputError);  // hsdp without zero 3
  CHECK(describe_sharding(ShardingPlan{3, true, 2, false}) == "hsdp 2, no reshard after forward");
  // no_sync is a ZeRO-3 / FSDP choice.
  s.replicate = 1;
  s.no_sync = true;
  CHECK_THROWS_WITH_AS(check_sharding(s, 8), doctest::Contains("`fsdp_no_sync`"), InputError);
  CHECK(describe_sharding(ShardingPlan{3, true, 1, true, true}) == "fsdp, no sync");
  CHECK(gathers_once_per_step(ShardingPlan{3, true, 1, true, true}));
  CHECK_FALSE(gathers_once_per_step(ShardingPlan{3, true, 1, true, false}));
  CHECK_FALSE(gathers_once_per_step(ShardingPlan{2, false, 1, true, true}));
}
