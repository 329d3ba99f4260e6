#include <doctest/doctest.h>

#include <variant>

#include "sim/error.hpp"
#include "tools/published_configs.hpp"

using namespace meshsim;
using json = nlohmann::json;

namespace {

// A Megatron-LM README row as the file prints it: tp, pp, heads and micro-batch size null.
PublishedRuns readme_runs() {
  const json row = json::parse(R"j({
    "id": "readme-001", "table": "megatron_readme_a100_2021",
    "source": {"id": "megatron_readme_a100_2021", "ref": "row 1.7B"},
    "model": {"name": "GPT 1.7B", "layers": 24, "hidden": 2304, "heads": null, "seq": 2048,
              "vocab": 51200},
    "cluster": {"gpu": "A100 (Selene)", "gpus": 32, "nodes": 4},
    "parallel": {"tp": null, "pp": null, "dp": 32, "micro_batch": null, "global_batch": 512,
                 "recompute": null},
    "measured": {"metric": "model_tflops_per_gpu", "value": 137, "unit": "TFLOP/s"}})j");
  return read_published_runs(json{{"rows", json::array({row})}}, "runs.json");
}

json configs(json parallel_fields) {
  return json{{"sources", {{"narayanan2021", {{"title", "Narayanan et al. 2021"}}}}},
              {"configs", json::array({{{"source", "megatron_readme_a100_2021"},
                                        {"model", "GPT 1.7B"},
                                        {"from", "narayanan2021"},
                                        {"ref", "Table 1"},
                                        {"model_fields", {{"heads", 24}}},
                                        {"parallel_fields", std::move(parallel_fields)}}})}};
}

}  // namespace

TEST_CASE("published configs: null fields filled from the companion source, then planned") {
  PublishedRuns runs = readme_runs();
  CHECK(std::holds_alternative<SkippedRun>(plan_run(runs.rows[0])));  // heads unknown
  const json doc =
      configs({{"tp", 1}, {"pp", 1}, {"micro_batch", 1}, {"recompute", "full"}, {"dp", 32}});
  CHECK(apply_published_configs(runs, doc, "configs.json") == 1);
  const auto planned = plan_run(runs.rows[0]);
  REQUIRE(std::holds_alternative<RunPlan>(planned));
  const RunPlan& p = std::get<RunPlan>(planned);
  CHECK(p.model.heads == 24);
  CHECK(p.plan.tp == 1);
  CHECK(p.plan.microbatch_size == 1);
  CHECK(p.plan.recompute == Recompute::full);
  // heads, tp, pp, micro_batch, recompute filled (dp was printed and agrees: not a fill); they
  // come first among the conventions, each naming its source.
  REQUIRE(runs.rows[0].filled.size() == 5);
  CHECK(p.conventions.at(0) == "model.heads = 24 (narayanan2021, Table 1)");
}

TEST_CASE("published configs: a contradiction, an unknown source or bad JSON is an error") {
  PublishedRuns runs = readme_runs();
  CHECK_THROWS_WITH_AS(
      apply_published_configs(runs, configs({{"dp", 16}}), "c.json"),
      "c.json: entry megatron_readme_a100_2021 / GPT 1.7B: field 'parallel.dp': the row prints "
      "32, the entry says 16",
      InputError);
  json unknown = configs(json::object());
  unknown["configs"][0]["from"] = "nobody";
  CHECK_THROWS_AS(apply_published_configs(runs, unknown, "c.json"), InputError);
  json typo = configs(json::object());
  typo["configs"][0]["parallel"] = json::object();
  CHECK_THROWS_AS(apply_published_configs(runs, typo, "c.json"), InputError);
  CHECK_THROWS_AS(apply_published_configs(runs, json::array(), "c.json"), InputError);
  json twice = configs(json::object());
  twice["configs"].push_back(twice["configs"][0]);
  CHECK_THROWS_WITH_AS(
      apply_published_configs(runs, twice, "c.json"),
      "c.json: field 'configs[1]': a second entry for megatron_readme_a100_2021 / GPT 1.7B",
      InputError);
  json typo_model = configs(json::object());
  typo_model["configs"][0]["model"] = "GPT 1.8B";
  CHECK_THROWS_WITH_AS(apply_published_configs(runs, typo_model, "c.json"),
                       "c.json: field 'configs[0]': entry megatron_readme_a100_2021 / GPT 1.8B "
                       "matches no row (source id and model name)",
                       InputError);
  // An entry of a source without rows in the runs file is not for that file: it fills nothing.
  json other_source = configs({{"tp", 1}});
  other_source["configs"][0]["source"] = "another_publication";
  PublishedRuns untouched = readme_runs();
  CHECK(apply_published_configs(untouched, other_source, "c.json") == 0);
  CHECK(untouched.rows[0].filled.empty());
  json object_value = configs({{"tp", json::object()}});
  CHECK_THROWS_AS(apply_published_configs(runs, object_value, "c.json"), InputError);
  json not_object = configs(json::object());
  not_object["configs"][0]["model_fields"] = 3;
  CHECK_THROWS_AS(apply_published_configs(runs, not_object, "c.json"), InputError);
}

TEST_CASE("published configs: fuzzed fields fill, are refused with InputError, never crash") {
  const json good =
      configs({{"tp", 1}, {"pp", 1}, {"micro_batch", 1}, {"recompute", "full"}, {"dp", 32}});
  const std::vector<json> values = {
      nullptr,        0,   -1, 1, std::int64_t{1} << 62, 1.5, "", "x", "GPT 1.7B", json::array(),
      json::object(), true};
  std::vector<json::json_pointer> paths = {json::json_pointer("/sources"),
                                           json::json_pointer("/configs"),
                                           json::json_pointer("/configs/0")};
  for (const auto& [key, value] : good["configs"][0].items()) {
    paths.emplace_back("/configs/0/" + key);
  }
  for (const auto& [key, value] : good["configs"][0]["parallel_fields"].items()) {
    paths.emplace_back("/configs/0/parallel_fields/" + key);
  }
  int filled = 0, refused = 0;
  for (const auto& path : paths) {
    for (const auto& v : values) {
      CAPTURE(path.to_string());
      CAPTURE(v.dump());
      json doc = good;
      doc[path] = v;
      PublishedRuns runs = readme_runs();
      try {
        apply_published_configs(runs, doc, "c.json");
        ++filled;
        // Whatever was filled, planning a row either plans, skips or refuses by InputError.
        try {
          (void)plan_run(runs.rows[0]);
        } catch (const InputError&) {
        }
      } catch (const InputError&) {
        ++refused;
      }
    }
  }
  // Both outcomes occur: typed fields refuse wrong types, free values (micro_batch 3) fill.
  CHECK(filled > 0);
  CHECK(refused > 0);
}
