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
