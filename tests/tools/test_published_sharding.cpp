// The sharding fields of the published-runs schema (tools/published_sharding.hpp), on a test-only
// runs file of synthetic rows (tests/tools/data/fsdp_runs.json: its measured values are invented
// for the test, not measurements; predictions never read them).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <variant>

#include "schedules/memory_model.hpp"
#include "schedules/sharding.hpp"
#include "sim/error.hpp"
#include "tests/tools/published_test_rows.hpp"
#include "tools/compare_runs.hpp"
#include "tools/published_runs.hpp"
#include "tools/sharding_flags.hpp"

using namespace meshsim;
using json = nlohmann::json;

namespace {

json runs_file() {
  return test::runs_file("fsdp_runs.json");
}

json row(const char* id) {
  return test::row_of("fsdp_runs.json", id);
}

PublishedRun read_one(const json& r) {
  return test::read_one(r, "fsdp_runs.json");
}

RunPlan planned(const json& r) {
  return test::planned_run(read_one(r));
}

std::string skipped(const json& r) {
  return test::skipped_reason(read_one(r));
}

bool noted(const RunPlan& p, const std::string& what) {
  return std::any_of(p.conventions.begin(), p.conventions.end(),
                     [&](const std::string& c) { return c.find(what) != std::string::npos; });
}

// The InputError a row's plan throws (empty when none).
std::string refusal(const json& r) {
  try {
    (void)plan_run(read_one(r));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("published sharding: parallel.fsdp = dp x cp is meshsim step --fsdp") {
  const RunPlan p = planned(row("fsdp-test-001"));
  // What read_sharding sets for --fsdp: ZeRO-3 with FSDP2's mixed precision, one replica,
  // resharded after forward, the distributed optimizer on.
  CHECK(p.plan.sharding == fsdp_sharding(1, true));
  CHECK(p.plan.sharding.zero == 3);
  CHECK(p.plan.distributed_optimizer);
  CHECK(describe_sharding(p.plan.sharding) == "fsdp");
  // FSDP2 keeps 4 + 4 + 8 = 16 bytes per parameter, all sharded over the 8 ranks
  // (schedules/sharding.hpp): the persistent state is 16 / 8 = 2 bytes per parameter.
  const StageMemory s = estimate_memory(p.model, memory_plan(p.plan), p.hardware).stages.front();
  CHECK(s.weights + s.gradients + s.optimizer ==
        doctest::Approx(16.0 / 8 * static_cast<double>(s.parameters)));
  // The same row without the sharding fields: plain data parallelism, 2 + 4 + 12 = 18 bytes.
  json plain = row("fsdp-test-001");
  plain["parallel"].erase("fsdp");
  plain["parallel"].erase("sharding");
  const RunPlan d = planned(plain);
  CHECK(d.plan.sharding.zero == 0);
  CHECK_FALSE(d.plan.distributed_optimizer);
  const StageMemory t = estimate_memory(d.model, memory_plan(d.plan), d.hardware).stages.front();
  CHECK(t.weights + t.gradients + t.optimizer ==
        doctest::Approx(18.0 * static_cast<double>(t.parameters)));
}

TEST_CASE("published sharding: a group smaller than dp x cp is HSDP, reshard_after_forward read") {
  // 16 data-parallel ranks sharding in groups of 8: --hsdp 2 --no-reshard-after-forward.
  const RunPlan p = planned(row("fsdp-test-002"));
  CHECK(p.plan.sharding == fsdp_sharding(2, false));
  CHECK(noted(p, "replicated over dp x cp / 8 = 2"));
  // FSDP words without a group size: one group of dp x cp = 4 x 2 ranks.
  const RunPlan q = planned(row("fsdp-test-003"));
  CHECK(q.plan.sharding == fsdp_sharding(1, true));
  CHECK(noted(q, "FSDP over dp x cp = 8 ranks"));
  // ZeRO words: --zero 2.
  const RunPlan z = planned(row("fsdp-test-007"));
  CHECK(z.plan.sharding.zero == 2);
  CHECK_FALSE(z.plan.sharding.fsdp);
  CHECK(z.plan.distributed_optimizer);
  // parallel.fsdp 0 and no words: no sharding.
  json none = row("fsdp-test-001");
  none["parallel"]["fsdp"] = 0;
  none["parallel"].erase("sharding");
  CHECK(planned(none).plan.sharding.zero == 0);
}

TEST_CASE("published sharding: what meshsim cannot express is skipped with the reason") {
  // dp 1 x cp 8 in groups of 4 leaves 2 replicas, and meshsim replicates over dp only.
  CHECK(skipped(row("fsdp-test-008")).find("2 replicas, which do not divide dp 1") !=
        std::string::npos);
  json r = row("fsdp-test-002");
  r["parallel"]["fsdp"] = nullptr;
  CHECK(skipped(r) == "HSDP without its sharding group size (parallel.fsdp)");
  r = row("fsdp-test-001");
  r["parallel"]["sharding"] = "FSDP1 hybrid";
  CHECK(skipped(r).find("sharding 'FSDP1 hybrid' is not one meshsim maps") != std::string::npos);
}

TEST_CASE("published sharding: malformed or contradictory fields are bad input naming the field") {
  json r = row("fsdp-test-001");
  r["parallel"]["fsdp"] = "eight";
  CHECK(refusal(r).starts_with("field 'parallel.fsdp': expected the sharding group size"));
  r["parallel"]["fsdp"] = -8;
  CHECK(refusal(r).starts_with("field 'parallel.fsdp'"));
  r["parallel"]["fsdp"] = 8.5;
  CHECK(refusal(r).starts_with("field 'parallel.fsdp'"));
  r["parallel"]["fsdp"] = 3;  // 8 ranks do not split into groups of 3
  CHECK(refusal(r) ==
        "field 'parallel.fsdp': 3 does not divide dp x cp = 8 x 1 = 8, the ranks that shard");
  r = row("fsdp-test-001");
  r["parallel"]["sharding"] = "none";
  CHECK(refusal(r).starts_with("field 'parallel.sharding': 'none' contradicts parallel.fsdp 8"));
  r["parallel"]["sharding"] = 3;
  CHECK(refusal(r).starts_with("field 'parallel.sharding': expected the source's words"));
  r = row("fsdp-test-001");
  r["parallel"]["fsdp"] = 0;
  CHECK(refusal(r) == "field 'parallel.fsdp': 0 (no FSDP) contradicts sharding 'FSDP2'");
  r = row("fsdp-test-001");
  r["parallel"]["reshard_after_forward"] = "no";
  CHECK(refusal(r).starts_with("field 'parallel.reshard_after_forward': expected true, false"));
  r = row("fsdp-test-007");  // ZeRO-2 does not shard parameters
  r["parallel"]["reshard_after_forward"] = false;
  CHECK(refusal(r).starts_with("field 'parallel.reshard_after_forward': false needs FSDP"));
  r = row("fsdp-test-001");
  r["parallel"]["distributed_optimizer"] = false;
  CHECK(refusal(r).starts_with("field 'parallel.distributed_optimizer': false contradicts"));
}

TEST_CASE("published sharding: compare simulates FSDP rows; a measured value moves no prediction") {
  const PublishedRuns runs = read_published_runs(runs_file(), "fsdp_runs.json");
  const Comparison c = compare_published(runs, "");
  REQUIRE(c.rows.size() == 8);
  // Expressed: 001 (FSDP), 002 (HSDP), 003 (FSDP over cp), 004 (torch.compile), 006 (FP8-CS),
  // 007 (ZeRO-2); skipped: 005 (Float8 without its recipe), 008 (replicas over cp).
  CHECK(c.tables.at("synthetic_fsdp").expressed == 6);
  CHECK(c.rows[0].plan.find("sharding fsdp") != std::string::npos);
  CHECK(c.rows[1].plan.find("sharding hsdp 2") != std::string::npos);
  json changed = runs_file();
  for (json& r : changed["rows"]) r["measured"]["value"] = r["measured"]["value"].get<double>() * 3;
  const Comparison d = compare_published(read_published_runs(changed, "changed.json"), "");
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    CAPTURE(c.rows[i].id);
    CHECK(c.rows[i].predicted == d.rows[i].predicted);
    CHECK(c.rows[i].plan == d.rows[i].plan);
    CHECK(c.rows[i].reason == d.rows[i].reason);
  }
}
