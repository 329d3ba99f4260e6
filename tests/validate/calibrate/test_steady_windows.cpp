#include <doctest/doctest.h>

#include "sim/error.hpp"
#include "validate/calibrate/steady_windows.hpp"

using namespace meshsim;

TEST_CASE("steady windows: a run is steady when both readings beside it are near the fastest") {
  // Fastest reading 1.0, limit 1.1 at 10 %: run 0 lies between 1.0 and 1.05 (steady), run 1
  // between 1.05 and 1.3 (not), run 2 between 1.3 and 1.1 (not: 1.3 is over), run 3 between 1.1
  // and 1.0 (steady: at the limit counts).
  const std::vector<bool> steady = steady_between({1.0, 1.05, 1.3, 1.1, 1.0}, 0.10);
  CHECK(steady == std::vector<bool>{true, false, false, true});
  CHECK(steady_between({2.0}, 0.10).empty());
  // A uniformly slow machine is steady: the limit is relative to its own fastest reading.
  CHECK(steady_between({4.0, 4.2, 4.1}, 0.10) == std::vector<bool>{true, true});
}

TEST_CASE("steady windows: the runs after the warm-up split into steady and disturbed") {
  const KeptRuns kept = split_runs({9.0, 1.0, 2.0, 3.0, 4.0}, {true, true, false, true, false}, 1);
  CHECK(kept.steady == std::vector<double>{1.0, 3.0});
  CHECK(kept.disturbed == std::vector<double>{2.0, 4.0});
  CHECK_THROWS_AS(split_runs({1.0}, {true, false}, 0), InvariantError);
}
