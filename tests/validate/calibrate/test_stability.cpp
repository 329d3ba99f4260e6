#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "validate/calibrate/stability.hpp"

using namespace meshsim;

namespace {

// Ten repeats of a reference kernel taking `ms` milliseconds, within +-1 % (an idle core).
StabilityCheckpoint steady(std::string phase, double ms, double load = 0.5) {
  StabilityCheckpoint c{std::move(phase), {}, load};
  for (int i = 0; i < 10; ++i) c.reference_s.push_back(ms * 1e-3 * (0.99 + 0.002 * i));
  return c;
}

}  // namespace

TEST_CASE("stability: a steady reference kernel at every checkpoint is stable") {
  const std::vector<StabilityCheckpoint> cs = {steady("start", 4.0), steady("after compute", 4.0),
                                               steady("after p2p", 4.0)};
  const StabilityVerdict v = judge_stability(cs, 2, 2);
  CHECK(v.stable);
  // Every checkpoint's median is 4.0 x 0.999 (mean of the 5th and 6th of 10): no drift.
  CHECK(v.drift == doctest::Approx(0.0).epsilon(1e-12));
  // Nearest rank of 10: p10 = 1st = 4 x 0.990, p90 = 9th = 4 x 1.006: spread 1.006 / 0.990 - 1
  // = 1.6 %.
  CHECK(v.spread == doctest::Approx(1.006 / 0.990 - 1));
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
        "reference kernel drift 20 % (limit 10 %) and spread 2 % (limit 25 %) over 2 "
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

TEST_CASE("stability: time slices lost within one checkpoint are spread, and unstable") {
  // 7 repeats at 4 ms, 3 preempted at 6 ms: median 4 ms (no drift against 4 ms), but p10 = 4,
  // p90 = 6 (9th of 10): spread 50 % > 25 %.
  StabilityCheckpoint c{"after collective", {}, 2.5};
  for (int i = 0; i < 7; ++i) c.reference_s.push_back(4e-3);
  for (int i = 0; i < 3; ++i) c.reference_s.push_back(6e-3);
  StabilityCheckpoint start{"start", std::vector<double>(10, 4e-3), -1};
  const StabilityVerdict v = judge_stability({start, c}, 2, 2);
  CHECK_FALSE(v.stable);
  CHECK(v.drift == doctest::Approx(0.0));
  CHECK(v.spread == doctest::Approx(0.5));
  CHECK_THROWS_AS(judge_stability({}, 2, 2), InvariantError);
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
  CHECK(j["checkpoints"][0]["repeats"] == 10);
  CHECK(j["max_drift"] == kMaxDrift);
}
