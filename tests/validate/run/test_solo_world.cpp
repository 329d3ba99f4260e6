#include <doctest/doctest.h>

#include "validate/run/executor.hpp"
#include "validate/run/solo_world.hpp"

using namespace meshsim;

TEST_CASE("the one-process world gathers to itself and unwinds instead of aborting") {
  SoloWorld w;
  CHECK(w.rank() == 0);
  CHECK(w.size() == 1);
  CHECK(w.can_unwind());
  CHECK(w.gather({1, 2}) == std::vector<std::vector<std::int64_t>>{{1, 2}});
  CHECK(w.all_true(true));
  CHECK_FALSE(w.all_true(false));
  CHECK_THROWS_AS(w.abort(1), ExecutionError);
}
