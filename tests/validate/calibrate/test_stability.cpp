#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "validate/calibrate/stability.hpp"

using namespace meshsim;

namespace {

// Two ranks, each timing 20 repeats of a reference kernel taking `ms` milliseconds within +-1 %
// (idle cores): repeat i takes ms x (0.990 + 0.001 i).
StabilityCheckpoint steady(std::string phase, double ms, double load = 0.5) {
  StabilityCheckpoint c{std::move(phase), {}, load};
  for (int rank = 0; rank < 2; ++rank) {
    auto& repeats = c.reference_s.emplace_back();
    for (int i = 0; i < 20; ++i) repeats.push_back(ms * 1e-3 * (0.990 + 0.001 * i));
  }
  return c;
}

// Rank 0 steady at 4 ms; rank 1 loses a time slice in `slow` of its 20 repeats (6 ms).
StabilityCheckpoint preempted(std::string phase, int slow, double load = 2.5) {
  StabilityCheckpoint c{std::move(phase), {std::vector<double>(20, 4e-3), {}}, load};
  for (int i = 0; i < 20; ++i) c.reference_s[1].push_back(i < 20 - slow ? 4e-3 : 6e-3);
  return c;
}

}  // namespace

TEST_CASE("stability: a steady reference kernel at every checkpoint is stable") {
  const std::vector<StabilityCheckpoint> cs = {steady("start", 4.0), steady("after compute", 4.0),
                                               steady("after p2p", 4.0)};
  const StabilityVerdict v = judge_stability(cs, 2, 2);
  CHECK(v.stable);
  // Every checkpoint's pooled median is 4.0 x 0.9995 (the 20th and 21st of 40): no drift.
  CHECK(v.drift == doctest::Approx(0.0).epsilon(1e-12));
  // Nearest rank of 20: p25 = 5th = 4 x 0.994, p75 = 15th = 4 x 1.004: spread 1.004 / 0.994 - 1
  // = 1.0 % on each rank and checkpoint.
  CHECK(v.spread == doctest::Approx(1.004 / 0.994 - 1));
  CHECK(v.max_load == 0.5);
}

TEST_CASE("stability: the machine slowing between phases is drift, and unstable") {
  // A competing job lands after the compute phase: the reference kernel takes 4.8 ms instead of
  // 4.0 ms, drift 4.8 / 4.0 - 1 = 20 % > 10 %.
  const std::vector<StabilityCheckpoint> cs = {steady("start", 4.0, 1.9),
                                               steady("after compute", 4.8, 3.77)};
  const StabilityVerdict v = judge_stability(cs, 2, 2);
  CHECK_FALSE(v.stable);
  CHECK(v.drift == doctest::Approx(0.2));
  CHECK(v.max_load == 3.77);
  CHECK(v.summary ==
        "reference kernel drift 20 % (limit 10 %) and spread 1 % (limit 25 %) over 2 "
        "checkpoints; load average up to 3.77 on 2 cores, 2 of them our ranks");
  const auto refusal = stability_refusal(v, 3, false);
  REQUIRE(refusal.has_value());
  CHECK(refusal->find("load average up to 3.77") != std::string::npos);
  CHECK(refusal->find("--force") != std::string::npos);
  CHECK(refusal->find("(3 attempts)") != std::string::npos);
  CHECK_FALSE(stability_refusal(v, 3, true).has_value());  // --force writes it anyway
}

TEST_CASE("stability: drift up to the limit is tolerated") {
  // 4.36 / 4.0 - 1 = 9 %: under the limit, stable; 4.44 ms is 11 %, over it.
  CHECK(judge_stability({steady("start", 4.0), steady("end", 4.36)}, 2, 2).stable);
  CHECK_FALSE(judge_stability({steady("start", 4.0), steady("end", 4.44)}, 2, 2).stable);
  CHECK_FALSE(
      stability_refusal(judge_stability({steady("start", 4.0)}, 2, 2), 1, false).has_value());
}

TEST_CASE("stability: time slices lost at most checkpoints are spread, and unstable") {
  // Rank 1 loses a slice in 6 of 20 repeats: sorted, 14 at 4 ms then 6 at 6 ms, p25 = 5th = 4,
  // p75 = 15th = 6: spread 50 % > 25 %; rank 0 is steady (0 %); the checkpoint takes the larger.
  CHECK(checkpoint_spread(preempted("x", 6)) == doctest::Approx(0.5));
  // 5 of 20 slow: the 15th is still 4 ms, spread 0 (a quarter of the repeats is tolerated).
  CHECK(checkpoint_spread(preempted("x", 5)) == doctest::Approx(0.0));
  // Two of three checkpoints preempted: the median checkpoint spread is 50 %. The pooled medians
  // are all 4 ms (at most 6 of 40 repeats slow): no drift.
  const StabilityVerdict v =
      judge_stability({steady("start", 4.0 / 0.9995), preempted("a", 6), preempted("b", 6)}, 2, 2);
  CHECK_FALSE(v.stable);
  CHECK(v.drift == doctest::Approx(0.0));
  CHECK(v.spread == doctest::Approx(0.5));
  CHECK_THROWS_AS(judge_stability({}, 2, 2), InvariantError);
}

TEST_CASE("stability: one noisy checkpoint of three is forgiven") {
  // Spreads 1.0 %, 50 %, 1.0 %: the median is 1.0 %, under 25 %; the calibration's own robust
  // estimators absorb a lost slice.
  const StabilityVerdict v =
      judge_stability({steady("start", 4.0), preempted("a", 6), steady("end", 4.0)}, 2, 2);
  CHECK(v.stable);
  CHECK(v.spread == doctest::Approx(1.004 / 0.994 - 1));
}

TEST_CASE("stability: the 1-minute load average from /proc/loadavg; the JSON record") {
  CHECK(parse_loadavg("3.77 4.43 3.99 3/412 12345\n") == 3.77);
  CHECK(parse_loadavg("0.00 0.01 0.05 1/100 7") == 0.0);
  CHECK_FALSE(parse_loadavg("").has_value());
  CHECK_FALSE(parse_loadavg("busy 1 2").has_value());
  CHECK_FALSE(parse_loadavg("3.7x 1 2").has_value());
  const std::vector<StabilityCheckpoint> cs = {steady("start", 4.0)};
  const auto j = stability_json(cs, judge_stability(cs, 2, 2));
  CHECK(j["stable"] == true);
  CHECK(j["checkpoints"].size() == 1);
  CHECK(j["checkpoints"][0]["repeats"] == 40);  // 2 ranks x 20
  CHECK(j["checkpoints"][0]["spread"] == doctest::Approx(1.004 / 0.994 - 1));
  CHECK(j["max_drift"] == kMaxDrift);
}

TEST_CASE("stability: a checkpoint's reading is the median of every rank's repeats") {
  StabilityCheckpoint c;
  c.reference_s = {{3.0, 1.0, 2.0}, {5.0, 4.0}};  // pooled 1..5: median 3
  CHECK(reference_reading(c) == doctest::Approx(3.0));
  CHECK_THROWS_AS(reference_reading(StabilityCheckpoint{}), InvariantError);
}
