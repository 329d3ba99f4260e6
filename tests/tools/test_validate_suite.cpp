#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "sim/comm_plan.hpp"
#include "tools/validate_suite.hpp"

using namespace meshsim;

TEST_CASE("validate suite: 8 + 4 hold-out configurations, valid Programs over every rank") {
  for (int ranks : {2, 4}) {
    CAPTURE(ranks);
    const auto configs = suite_configs(ranks, ranks);
    REQUIRE(configs.size() == 12);
    for (std::size_t i = 0; i < configs.size(); ++i) {
      // The development set first, then the hold-out, whose names say so.
      CHECK((configs[i].set == SuiteSet::holdout) == (i >= 8));
      CHECK((configs[i].name.rfind("hold-out: ", 0) == 0) == (i >= 8));
    }
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
  CHECK(suite_text(r).find("mean absolute percentage error 20.0% (per round p10-p90 0.0-0.0%, 0 "
                           "rounds), worst 30.0%") != std::string::npos);
}

TEST_CASE("validate suite: spread, per-round MAPE and the hold-out reported apart") {
  SuiteResult r;
  r.runs = 5;
  // Development row: predicted 1.0, measured 1.0 1.0 1.25 0.8 1.0 (rounds 1..5): median 1.0,
  // p10 = 1st of 5 = 0.8, p90 = 5th = 1.25.
  SuiteRow a{"a", "", 1.0, 0, {1.0, 1.0, 1.25, 0.8, 1.0}};
  summarize_runs(a);
  CHECK(a.measured_s == 1.0);
  CHECK(a.measured_p10_s == 0.8);
  CHECK(a.measured_p90_s == 1.25);
  CHECK(a.error() == 0.0);
  CHECK(a.error_p10() == doctest::Approx(-0.2));  // (1 - 1.25) / 1.25
  CHECK(a.error_p90() == doctest::Approx(0.25));  // (1 - 0.8) / 0.8
  CHECK(a.repeats() == 5);
  // Hold-out row: predicted 0.5 against 1.0 in every round: -50 %.
  SuiteRow h{"hold-out: h", "", 0.5, 0, {1.0, 1.0, 1.0, 1.0, 1.0}};
  h.set = SuiteSet::holdout;
  summarize_runs(h);
  r.rows = {a, h};
  CHECK(r.count(SuiteSet::development) == 1);
  CHECK(r.mape() == 0.0);  // the development set alone
  CHECK(r.mape(SuiteSet::holdout) == doctest::Approx(0.5));
  // Round MAPEs of the development set: |1 - m| / m = 0, 0, 0.2, 0.25, 0.
  const auto rounds = r.round_mapes();
  REQUIRE(rounds.size() == 5);
  CHECK(rounds[2] == doctest::Approx(0.2));
  CHECK(rounds[3] == doctest::Approx(0.25));
  CHECK(r.mape_p10() == 0.0);
  CHECK(r.mape_p90() == doctest::Approx(0.25));
  const auto j = suite_json(r);
  CHECK(j["mape"].get<double>() == 0.0);
  CHECK(j["configurations"][0]["set"] == "development");
  CHECK(j["configurations"][1]["set"] == "hold-out");
  CHECK(j["configurations"][0]["measured_s_p90"].get<double>() == 1.25);
  CHECK(j["configurations"][0]["repeats"] == 5);
  CHECK(j["holdout"]["mape"].get<double>() == doctest::Approx(0.5));
  CHECK(j["holdout"]["configurations"] == 1);
  const std::string text = suite_text(r);
  CHECK(text.find("development set: mean absolute percentage error 0.0% (per round p10-p90 "
                  "0.0-25.0%, 5 rounds)") != std::string::npos);
  CHECK(text.find("hold-out set: mean absolute percentage error 50.0%") != std::string::npos);
}

TEST_CASE("validate suite: the machine's verdict is reported, steady or not") {
  SuiteResult r;
  r.rows.push_back({"a", "", 1.0, 1.0, {1.0}});
  CHECK(suite_text(r).find("machine during the runs") == std::string::npos);  // not probed
  // Two checkpoints, the reference kernel 4 ms then 6 ms: drift 50 %, not steady.
  // (one repeat on each of two ranks)
  const std::vector<StabilityCheckpoint> cs = {{"start", {{4e-3}, {4e-3}}, 3.5},
                                               {"after round 0", {{6e-3}, {6e-3}}, 3.9}};
  r.machine = judge_stability(cs, 2, 2);
  const std::string text = suite_text(r);
  CHECK(text.find("machine during the runs: NOT STEADY (reference kernel drift 50 %") !=
        std::string::npos);
  CHECK(text.find("load average up to 3.90") != std::string::npos);
  const auto j = suite_json(r);
  CHECK(j["machine"]["stable"] == false);
  CHECK(j["machine"]["drift"].get<double>() == doctest::Approx(0.5));
}

TEST_CASE("validate suite: the verdict counts the runs kept between steady readings") {
  SuiteResult r;
  r.runs = 5;
  SuiteRow a{"a", "", 1.0, 0, {1.0, 1.0, 1.0, 1.0, 1.0}};
  a.discarded_runs_s = {1.5, 1.4};
  summarize_runs(a);
  SuiteRow b{"b", "", 1.0, 0, {1.0, 1.1, 1.0, 1.2, 1.0}};
  summarize_runs(b);
  r.rows = {a, b};
  r.extra_rounds = 1;
  const std::vector<StabilityCheckpoint> cs = {{"start", {{4e-3}, {4e-3}}, 1.5},
                                               {"after run 1", {{6e-3}, {6e-3}}, 1.6}};
  // Every row kept its 5 runs: steady, whatever the probe's drift over all readings (50 %).
  StabilityVerdict v = suite_machine_verdict(r, judge_stability(cs, 2, 2));
  CHECK(v.stable);
  CHECK(
      v.summary.starts_with("10 of 12 timed runs between steady readings, 2 beside a "
                            "reference reading over 10 % slower than its fastest, 1 extra "
                            "round; reference kernel drift 50 %"));
  r.machine = v;
  CHECK(suite_text(r).find("   5/7\n") != std::string::npos);  // a: kept / timed
  CHECK(suite_json(r)["configurations"][0]["discarded_runs_s"].size() == 2);
  CHECK(suite_json(r)["machine"]["extra_rounds"] == 1);
  // A row that found too few steady runs kept every timed run and is not steady.
  r.rows[1].steady = false;
  v = suite_machine_verdict(r, judge_stability(cs, 2, 2));
  CHECK_FALSE(v.stable);
  r.machine = v;
  CHECK(suite_text(r).find("5 unsteady\n") != std::string::npos);
  CHECK(suite_json(r)["configurations"][1]["steady"] == false);
  // A load present throughout slows every reading alike (no reading is left out), but its spread
  // within the readings is over the limit (25 %): not steady.
  r.rows[1].steady = true;
  StabilityVerdict busy = judge_stability(cs, 2, 2);
  busy.spread = 1.4;
  CHECK_FALSE(suite_machine_verdict(r, busy).stable);
  // Fewer kept runs than wanted: not steady either.
  r.rows[1].steady = true;
  r.rows[0].measured_runs_s.pop_back();
  CHECK_FALSE(suite_machine_verdict(r, judge_stability(cs, 2, 2)).stable);
}
