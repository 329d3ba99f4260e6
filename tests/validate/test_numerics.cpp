#include <doctest/doctest.h>

#include "validate/numerics.hpp"

using namespace meshsim;

TEST_CASE("the numerics hook reports nothing until the reference is wired, and says why") {
  RingAttentionConfig c;
  c.cp = 1;
  c.seq = 8;
  const Workload w{c};
  const NumericsOutcome o = check_numerics(w, tensor_layout(w), {}, 1, false);
  CHECK_FALSE(o.report.has_value());
  CHECK(o.not_computed_because.find("not computed") == 0);
}
