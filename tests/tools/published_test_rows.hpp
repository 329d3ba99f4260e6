#pragma once
// Reading the test-only runs files of tests/tools/data/ (synthetic rows in the published-runs
// schema) for the tests of tools/published_*.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "tools/published_runs.hpp"

namespace meshsim::test {

// tests/tools/data/<name> parsed.
inline nlohmann::json runs_file(const std::string& name) {
  std::ifstream in(std::string(MESHSIM_SOURCE_DIR) + "/tests/tools/data/" + name);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// The row of that file with this id.
inline nlohmann::json row_of(const std::string& name, const std::string& id) {
  const nlohmann::json file = runs_file(name);
  for (const nlohmann::json& r : file["rows"]) {
    if (r["id"].get<std::string>() == id) return r;
  }
  FAIL("no row " << id);
  return {};
}

// One row read as a runs file of that row alone.
inline PublishedRun read_one(const nlohmann::json& r, const std::string& origin) {
  return read_published_runs(nlohmann::json{{"rows", nlohmann::json::array({r})}}, origin)
      .rows.at(0);
}

// plan_run of a row that must be expressed, and of one that must be skipped (its reason).
inline RunPlan planned_run(const PublishedRun& run) {
  const auto p = plan_run(run);
  REQUIRE(std::holds_alternative<RunPlan>(p));
  return std::get<RunPlan>(p);
}
inline std::string skipped_reason(const PublishedRun& run) {
  const auto p = plan_run(run);
  REQUIRE(std::holds_alternative<SkippedRun>(p));
  return std::get<SkippedRun>(p).reason;
}

}  // namespace meshsim::test
