#include <doctest/doctest.h>

#include "tools/compare_runs.hpp"
#include "tools/published_runs.hpp"

using namespace meshsim;
using json = nlohmann::json;

namespace {

ComparedRow row(const char* id, double measured, std::optional<double> predicted) {
  ComparedRow r;
  r.id = id;
  r.table = "t";
  r.metric = "iteration_time";
  r.measured = measured;
  r.predicted = predicted;
  return r;
}

}  // namespace

TEST_CASE("compare: a table's MAPE, worst row and pairs kept in order") {
  const ComparedRow a = row("a", 1.0, 1.1), b = row("b", 2.0, 1.5), c = row("c", 3.0, 1.2),
                    d = row("d", 4.0, std::nullopt);
  const TableSummary s = summarize({&a, &b, &c, &d});
  CHECK(s.rows == 4);
  CHECK(s.expressed == 3);
  // |+10 %|, |-25 %|, |-60 %| -> mean 31.67 %
  CHECK(s.mape == doctest::Approx((0.1 + 0.25 + 0.6) / 3));
  CHECK(s.worst == doctest::Approx(-0.6));
  CHECK(s.worst_row == "c");
  // Pairs (a,b) kept (1.1 < 1.5), (a,c) kept (1.1 < 1.2), (b,c) inverted (1.5 > 1.2).
  CHECK(s.pairs == 3);
  CHECK(s.pairs_kept == 2);
}

TEST_CASE("compare: the JSON form carries every row, skipped ones with the reason") {
  Comparison c;
  c.rows.push_back(row("a", 2.0, 2.5));
  ComparedRow s = row("b", 1.0, std::nullopt);
  s.reason = "no profile";
  c.rows.push_back(s);
  c.tables["t"] = summarize({&c.rows[0], &c.rows[1]});
  const auto j = comparison_json(c);
  CHECK(j["rows"][0]["predicted"] == 2.5);
  CHECK(j["rows"][0]["error"].get<double>() == doctest::Approx(0.25));
  CHECK(j["rows"][1]["skipped"] == true);
  CHECK(j["rows"][1]["reason"] == "no profile");
  CHECK(j["tables"]["t"]["expressed"] == 1);
  CHECK(comparison_text(c).find("skipped: no profile") != std::string::npos);
  // |+25 %| over the one expressed row; the skipped row's reason counted.
  CHECK(comparison_markdown(c).find(
            "| t | 2 | 1 | 25.0 % | +25.0 % (a) | 0 / 0 | no profile (1) |") != std::string::npos);
}

TEST_CASE("compare: memory rows count what Korthikanti et al. Fig. 1 and Fig. 7 count") {
  // A 1T-like plan: 4 layers over pp 2 (2 per stage), tp 8, h 2560, 16 heads, s 2048, b 1.
  const auto runs = read_published_runs(json::parse(R"({"rows": [{
    "id": "t5-1", "table": "korthikanti2022_table5_iteration_time",
    "source": {"id": "korthikanti2022", "ref": "Table 5"},
    "model": {"name": "M", "layers": 4, "hidden": 2560, "heads": 16, "kv_heads": 16,
              "ffn": 10240, "vocab": 51200, "seq": 2048},
    "cluster": {"gpu": "A100-SXM4-80GB", "gpus": 16, "nodes": 2, "gpus_per_node": 8},
    "parallel": {"tp": 8, "pp": 2, "dp": 1, "cp": 1, "vp": null, "micro_batch": 1,
                 "global_batch": 8, "sp": false, "recompute": "none", "num_microbatches": 8,
                 "pipeline_schedule": "1F1B"},
    "precision": "fp16 mixed",
    "measured": {"metric": "iteration_time", "value": 1.0, "unit": "s"}}],
    "memory_rows": [
      {"source": {"id": "calculon", "ref": "Fig. 1"}, "model": "M", "sp": false,
       "recompute": "none", "measured": {"params_plus_optimizer_GiB": 1.0}},
      {"source": {"id": "calculon", "ref": "Fig. 7"}, "model": "M", "sp": false,
       "recompute": "full", "measured": {"activation_memory_pct_of_tp_baseline": 10.0}}]})"),
                                        "runs.json");
  const Comparison c = compare_published(runs, "memory_rows");
  REQUIRE(c.rows.size() == 2);
  // Fig. 1: the first stage's layers, 12·h²·2/t parameters (+ the layer's biases and norms, under
  // 0.1 %), at 2 + 4 + 12 = 18 bytes each; not the word embedding the stage holds.
  const double h = 2560;
  REQUIRE(c.rows[0].predicted);
  CHECK(*c.rows[0].predicted ==
        doctest::Approx(12 * h * h * 2 / 8 * 18 / (1024.0 * 1024 * 1024)).epsilon(1e-3));
  // Fig. 7: per layer, full recompute keeps the layer input 2sbh of the TP baseline
  // sbh(10 + 24/t + 5as/(ht)) (Korthikanti et al. Table 2): 2 / (10 + 3 + 5·16·2048/(2560·8)).
  REQUIRE(c.rows[1].predicted);
  CHECK(*c.rows[1].predicted == doctest::Approx(100.0 * 2 / (10 + 3 + 8.0)).epsilon(1e-3));
}
