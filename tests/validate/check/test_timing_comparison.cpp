#include <doctest/doctest.h>

#include "tests/sim/tiny_programs.hpp"
#include "validate/check/timing_comparison.hpp"

using namespace meshsim;

namespace {

// Four compute ops on one rank, one stream.
Program four_ops() {
  ProgramBuilder b(Mesh({{"dp", 1}}, 8), true, "four ops");
  const StreamId s = b.stream("compute");
  for (int i = 0; i < 4; ++i) b.add(0, s, "op" + std::to_string(i), {}, testing::vector_kernel(1));
  return std::move(b).finish();
}

Timeline timeline(const std::vector<Nanos>& durations) {
  Timeline t;
  Nanos at = 0;
  for (Nanos d : durations) {
    t.ops.push_back(OpTiming{at, -1, at + d});
    at += d;
  }
  t.makespan = at;
  return t;
}

}  // namespace

TEST_CASE("compare_timings: per-op and makespan errors, median, p90 and the worst op named") {
  const Program p = four_ops();
  // predicted 100, 200, 300, 400 vs measured 100, 100, 200, 800:
  // errors 0, +1, +0.5, -0.5; |errors| sorted 0, 0.5, 0.5, 1.
  const TimingComparison c =
      compare_timings(p, timeline({100, 200, 300, 400}), timeline({100, 100, 200, 800}));
  CHECK(c.predicted_makespan == 1000);
  CHECK(c.measured_makespan == 1200);
  CHECK(c.makespan_error == doctest::Approx(-200.0 / 1200.0));
  REQUIRE(c.ops.size() == 4);
  CHECK(c.ops[1].error == doctest::Approx(1.0));
  CHECK(c.ops[3].error == doctest::Approx(-0.5));
  CHECK(c.compute.ops == 4);
  CHECK(c.compute.median == doctest::Approx(0.5));  // nearest rank: ceil(0.5 * 4) = 2nd
  CHECK(c.compute.p90 == doctest::Approx(1.0));     // ceil(0.9 * 4) = 4th
  CHECK(c.compute.worst == doctest::Approx(1.0));
  CHECK(c.compute.worst_op == 1);
  CHECK(c.comm.ops == 0);
  const std::string text = timing_comparison_text(p, c, "--json", 2);
  CHECK(text.find("predicted 0.001 ms, measured 0.001 ms, error -16.7%") != std::string::npos);
  CHECK(text.find("worst 100.0% (rank 0 'op1')") != std::string::npos);
  CHECK(text.find("(2 more ops in --json)") != std::string::npos);
  const auto j = timing_comparison_json(p, c);
  CHECK(j["predicted_makespan_s"].get<double>() == doctest::Approx(1e-6));
  CHECK(j["measured_makespan_s"].get<double>() == doctest::Approx(1.2e-6));
  CHECK(j["ops"].size() == 4);
  CHECK(j["compute_ops"]["worst_op"] == "rank 0 'op1'");
}
