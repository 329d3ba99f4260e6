#include <doctest/doctest.h>

#include <string>

#include "sim/error.hpp"
#include "sim/json_fields.hpp"

using namespace meshsim;

TEST_CASE("text that is not JSON, or holds a number past double, is an InputError") {
  CHECK_THROWS_AS(parse_json_text("{\"a\": ", "f.json"), InputError);
  // 1e99999 is valid JSON syntax but overflows double (nlohmann's out_of_range.406, found by the
  // parser fuzz run): one line naming the file, not an internal error.
  try {
    parse_json_text("{\"hidden\": 1e99999}", "f.json");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.starts_with("f.json: not valid JSON: "));
    CHECK(what.find("number overflow") != std::string::npos);
  }
  CHECK(parse_json_text("{\"hidden\": 1e300}", "f.json")["hidden"] == 1e300);
}
