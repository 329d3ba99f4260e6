#include <doctest/doctest.h>

#include <string>

#include "sim/error.hpp"

using namespace meshsim;

TEST_CASE("render_fields: every `field` in a message in the front end's words") {
  const auto upper = [](std::string_view f) { return "<" + std::string(f) + ">"; };
  CHECK(render_fields("`tp` 3 must divide `heads` 32", upper) == "<tp> 3 must divide <heads> 32");
  CHECK(render_fields("no fields here", upper) == "no fields here");
  CHECK(render_fields("an unpaired ` stays", upper) == "an unpaired ` stays");
}

TEST_CASE("require_positive names the field") {
  CHECK_THROWS_WITH_AS(require_positive(0, "mbs"), "`mbs` must be a positive integer, got 0",
                       InputError);
  CHECK_NOTHROW(require_positive(1, "mbs"));
}

TEST_CASE("an internal error names its source file relative to the source tree") {
  std::string what;
  try {
    MESHSIM_CHECK(1 + 1 == 3, "arithmetic");
  } catch (const InvariantError& e) {
    what = e.what();
  }
  // -fmacro-prefix-map strips the build machine's path from __FILE__ (CMakeLists.txt).
  CHECK(what.starts_with("internal error at tests/sim/test_error.cpp:"));
  CHECK(what.ends_with(": arithmetic (1 + 1 == 3)"));
}
