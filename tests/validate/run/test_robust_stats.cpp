#include <doctest/doctest.h>

#include <algorithm>

#include "sim/error.hpp"
#include "validate/run/robust_stats.hpp"

using namespace meshsim;

TEST_CASE("robust statistics: the median for throughput, the low quantile for latency") {
  // Ten makespans of a quiet machine near 10 ms and two slowed by another job (30, 50 ms):
  // sorted 9.0 9.5 9.8 10.0 10.1 10.2 10.4 10.6 11.0 11.2 30 50.
  const std::vector<double> s = {10.0, 30.0, 9.5, 10.2, 11.0, 9.0,
                                 10.4, 50.0, 9.8, 10.6, 10.1, 11.2};
  const RobustSummary t = summarize(s, MeasurementKind::throughput);
  CHECK(t.repeats == 12);
  CHECK(t.estimate == doctest::Approx(10.3));  // (10.2 + 10.4) / 2: the two slow runs move it
                                               // by one rank, the mean would be 15.2
  CHECK(t.p10 == 9.5);                         // nearest rank ceil(0.1 x 12) = 2nd
  CHECK(t.p90 == 30.0);                        // ceil(0.9 x 12) = 11th
  const RobustSummary l = summarize(s, MeasurementKind::latency);
  CHECK(l.estimate == 9.5);  // the 10th percentile, not the minimum 9.0
  CHECK(l.p10 == l.estimate);
  CHECK_THROWS_AS(summarize({}, MeasurementKind::latency), InvariantError);
}

TEST_CASE("robust statistics: below 10 repeats the low quantile is the minimum") {
  // ceil(0.1 x 5) = 1st of 5.
  const RobustSummary l = summarize({4.0, 3.0, 7.0, 3.5, 9.0}, MeasurementKind::latency);
  CHECK(l.estimate == 3.0);
  CHECK(l.p90 == 9.0);  // ceil(0.9 x 5) = 5th
  CHECK(l.repeats == 5);
}

TEST_CASE("robust statistics: the warm-up is dropped") {
  CHECK(drop_warmup({100.0, 1.0, 2.0}, 1) == std::vector<double>{1.0, 2.0});
  CHECK(drop_warmup({100.0, 1.0}, 0).size() == 2);
  CHECK(drop_warmup({100.0}, 1).empty());
  // A cold first run (100) never reaches the estimate: median of {1, 2} = 1.5.
  CHECK(summarize(drop_warmup({100.0, 1.0, 2.0}, 1), MeasurementKind::throughput).estimate == 1.5);
}

TEST_CASE("interleaved order: every configuration once per round, rotating the first") {
  // 3 configurations, 3 rounds: 0 1 2 | 1 2 0 | 2 0 1 (a Latin square).
  CHECK(interleaved_order(3, 3) == std::vector<int>{0, 1, 2, 1, 2, 0, 2, 0, 1});
  const std::vector<int> o = interleaved_order(4, 6);
  REQUIRE(o.size() == 24);
  for (int round = 0; round < 6; ++round) {
    std::vector<int> r(o.begin() + round * 4, o.begin() + round * 4 + 4);
    std::sort(r.begin(), r.end());
    CHECK(r == std::vector<int>{0, 1, 2, 3});  // each configuration once per round
  }
  // Never back to back for 3 or more configurations: the last of round r is (r + c - 1) mod c,
  // the first of round r + 1 is (r + 1) mod c, equal only for c = 2.
  for (std::size_t i = 1; i < o.size(); ++i) CHECK(o[i] != o[i - 1]);
  CHECK(interleaved_order(0, 5).empty());
  CHECK(interleaved_order(1, 3) == std::vector<int>{0, 0, 0});
}
