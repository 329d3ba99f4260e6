// The MoE fields of the published-runs schema (tools/published_moe.hpp), on a test-only runs file
// of synthetic MoE rows (tests/tools/data/moe_runs.json: its measured values are invented for
// the test, not measurements; predictions never read them).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <variant>

#include "sim/error.hpp"
#include "tests/tools/published_test_rows.hpp"
#include "tools/compare_runs.hpp"
#include "tools/published_runs.hpp"

using namespace meshsim;
using json = nlohmann::json;

namespace {

json runs_file() {
  return test::runs_file("moe_runs.json");
}

json row(const char* id) {
  return test::row_of("moe_runs.json", id);
}

PublishedRun read_one(const json& r) {
  return test::read_one(r, "moe_runs.json");
}

RunPlan planned(const char* id) {
  return test::planned_run(read_one(row(id)));
}

bool noted(const RunPlan& p, const std::string& what) {
  return std::any_of(p.conventions.begin(), p.conventions.end(),
                     [&](const std::string& c) { return c.find(what) != std::string::npos; });
}

}  // namespace

TEST_CASE("published MoE: model.moe and parallel.ep become the model's experts and the plan's ep") {
  const RunPlan p = planned("moe-test-001");
  REQUIRE(p.model.moe.has_value());
  CHECK(p.model.moe->experts == 8);
  CHECK(p.model.moe->top_k == 2);
  CHECK(p.model.moe->expert_ffn == 1024);
  CHECK(p.model.moe->shared_experts == 0);
  CHECK(p.model.moe->first_dense_layers == 0);
  CHECK(p.model.gated_mlp);  // Llama-style, as the MoE families are
  CHECK(p.plan.moe.ep == 8);
  CHECK(p.plan.moe.etp == 0);  // = tp
  CHECK(p.plan.moe.dispatcher == TokenDispatcher::alltoall);
  CHECK(noted(p, "shared_experts = 0"));
  CHECK(noted(p, "etp = tp"));
  CHECK(noted(p, "dispatcher alltoall"));
}

TEST_CASE("published MoE: MLA, shared experts, dense layers first, DeepEP and sp") {
  const RunPlan p = planned("moe-test-002");
  REQUIRE(p.model.mla.has_value());
  CHECK(p.model.mla->q_lora_rank == 256);
  CHECK(p.model.mla->kv_lora_rank == 128);
  CHECK(p.model.mla->qk_head_dim() == 96);  // nope 64 + rope 32
  CHECK(p.model.moe->shared_experts == 1);
  CHECK(p.model.moe->shared_ffn == 512);
  CHECK(p.model.moe->first_dense_layers == 1);
  CHECK(p.plan.moe.ep == 4);
  CHECK(p.plan.moe.etp == 1);
  CHECK(p.plan.moe.dispatcher == TokenDispatcher::flex);  // "DeepEP"
  CHECK(p.plan.sequence_parallel);                        // null with tp 2 on an MoE model
  CHECK(noted(p, "sp on"));
}

TEST_CASE("published MoE: rows that cannot be expressed are skipped with the reason") {
  const auto skipped = [](const json& r) { return test::skipped_reason(read_one(r)); };
  CHECK(skipped(row("moe-test-003")).find("shared experts but not their FFN size") !=
        std::string::npos);
  json r = row("moe-test-001");
  r["model"]["moe"]["top_k"] = nullptr;
  CHECK(skipped(r).find("top-k") != std::string::npos);
  r = row("moe-test-002");
  r["model"]["mla"]["v_head_dim"] = nullptr;
  CHECK(skipped(r).find("model.mla.v_head_dim") != std::string::npos);
  r = row("moe-test-001");
  r["parallel"]["dispatcher"] = "carrier pigeon";
  CHECK(skipped(r).find("dispatcher 'carrier pigeon'") != std::string::npos);
  r = row("moe-test-001");
  r["model"].erase("moe");  // ep 8 on a dense model
  CHECK(skipped(r).find("without experts") != std::string::npos);
  r = row("moe-test-001");
  r["model"]["moe"]["top_k"] = "two";
  CHECK_THROWS_AS(plan_run(read_one(r)), InputError);
}

TEST_CASE("published MoE: a malformed model.moe is bad input named as the runs file spells it") {
  const auto error = [](const char* field, const json& value) {
    json r = row("moe-test-001");
    r["model"]["moe"][field] = value;
    try {
      plan_run(read_one(r));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("num_experts", 0).find("model.moe.num_experts: expected 1 to 65536, got 0") !=
        std::string::npos);
  // Over check_moe's bound (1 << 16 experts): the file's value, not a clamped one.
  CHECK(error("num_experts", 1000000000)
            .find("model.moe.num_experts: expected 1 to 65536, got 1000000000") !=
        std::string::npos);
  CHECK(error("top_k", 1000).find("model.moe.top_k: expected 1 to num_experts") !=
        std::string::npos);
  CHECK(error("expert_ffn_hidden", 0).find("model.moe.expert_ffn_hidden") != std::string::npos);
  CHECK(error("dense_layers_first", 100000).find("model.moe.dense_layers_first") !=
        std::string::npos);
}

TEST_CASE("published MoE: compare simulates the MoE rows; a measured value changes no prediction") {
  const PublishedRuns runs = read_published_runs(runs_file(), "moe_runs.json");
  const Comparison c = compare_published(runs, "");
  REQUIRE(c.rows.size() == 3);
  CHECK(c.rows[0].predicted.has_value());
  CHECK(c.rows[1].predicted.has_value());
  CHECK_FALSE(c.rows[2].predicted.has_value());
  CHECK(c.tables.at("synthetic_moe").expressed == 2);
  // Only the measured values differ: every prediction stays the same number.
  json changed = runs_file();
  for (json& r : changed["rows"]) r["measured"]["value"] = r["measured"]["value"].get<double>() * 7;
  const Comparison d = compare_published(read_published_runs(changed, "changed.json"), "");
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    CHECK(c.rows[i].predicted == d.rows[i].predicted);
    CHECK(c.rows[i].plan == d.rows[i].plan);
  }
}
