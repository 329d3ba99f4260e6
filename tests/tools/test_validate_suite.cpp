#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "sim/comm_plan.hpp"
#include "tools/validate_suite.hpp"

using namespace meshsim;

TEST_CASE("validate suite: eight configurations, valid Programs over every rank") {
  for (int ranks : {2, 4}) {
    CAPTURE(ranks);
    const auto configs = suite_configs(ranks, ranks);
    REQUIRE(configs.size() == 8);
    for (const auto& c : configs) {
      CAPTURE(c.name);
      const Program p = c.build();
      CHECK(p.world_size() == ranks);
      CHECK_NOTHROW(validate_program(p));
      CHECK(c.command.rfind("meshsim ", 0) == 0);
    }
  }
}

TEST_CASE("validate suite: error, mean absolute percentage error and worst") {
  SuiteResult r;
  r.rows.push_back({"a", "", 1.1, 1.0, {}});  // +10%
  r.rows.push_back({"b", "", 0.7, 1.0, {}});  // -30%
  CHECK(r.rows[0].error() == doctest::Approx(0.1));
  // mape = (0.1 + 0.3) / 2
  CHECK(r.mape() == doctest::Approx(0.2));
  CHECK(r.worst_error() == doctest::Approx(0.3));
  const auto j = suite_json(r);
  CHECK(j["mape"].get<double>() == doctest::Approx(0.2));
  CHECK(j["configurations"].size() == 2);
  CHECK(suite_text(r).find("mean absolute percentage error 20.0%, worst 30.0%") !=
        std::string::npos);
}
