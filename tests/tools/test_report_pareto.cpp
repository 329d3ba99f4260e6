#include "tools/report_pareto.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "tools/report_html.hpp"

using namespace meshsim;
using namespace meshsim::report;

namespace {

Row timed(std::string label, double step_s, double mem_gb) {
  Row r;
  r.label = std::move(label);
  r.timed = true;
  r.step_time_s = step_s;
  r.mem_gb = mem_gb;
  return r;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

nlohmann::json sweep_json(const char* model, int gpus, double step_s) {
  nlohmann::json row = {{"tp", 8},
                        {"pp", 1},
                        {"cp", 1},
                        {"dp", gpus / 8},
                        {"vp", 1},
                        {"mbs", 1},
                        {"schedule", "1f1b"},
                        {"cp_variant", "zigzag"},
                        {"microbatches", 8},
                        {"step_time_s", step_s},
                        {"tokens_per_s", 1e6},
                        {"mfu", 0.4},
                        {"mem_gb", 50.0},
                        {"peak_rank", 0},
                        {"oom", false},
                        {"critical_path", "60% gemm"}};
  return {{"schema_version", 1},
          {"model", model},
          {"hardware", "h100-sxm"},
          {"gpus", gpus},
          {"seq", 8192},
          {"global_batch", 512},
          {"rows", nlohmann::json::array({row})}};
}

}  // namespace

TEST_CASE("the memory frontier: walked by memory, each plan faster than every smaller one") {
  std::vector<Row> rows = {timed("a", 10, 40), timed("b", 8, 60), timed("c", 9, 70),
                           timed("d", 6, 75), timed("e", 6, 80)};
  Row oom = timed("f", 1, 90);
  oom.timed = false;  // OOM rows are not plans that ran
  rows.push_back(oom);
  // a (40 GB, 10 s), b (60, 8 s): faster; c (70, 9 s) beaten by b; d (75, 6 s); e ties d with more
  // memory: dominated.
  CHECK(memory_frontier(rows) == std::vector<std::size_t>{0, 1, 3});
  Sweep s;
  s.hardware = "h100-sxm";
  s.capacity_gb = 80;
  s.rows = rows;
  const std::string svg = pareto_memory_svg(s);
  CHECK(count(svg, "<circle class=\"plan\"") == 5);
  CHECK(count(svg, "<circle class=\"frontier\"") == 3);
  CHECK(count(svg, "<polyline class=\"frontier\"") == 1);
  CHECK(count(svg, "class=\"capacity\"") == 2);  // the line and its legend swatch
  CHECK(memory_frontier({}).empty());
}

TEST_CASE("step time vs GPUs: each count's best, on the frontier only when it beats fewer GPUs") {
  std::vector<Sweep> sweeps;
  for (const auto& [gpus, t] :
       std::vector<std::pair<int, double>>{{512, 8.0}, {256, 12.0}, {1024, 9.0}}) {
    sweeps.push_back(parse_sweep(sweep_json("llama3-70b", gpus, t), "s.json"));
  }
  const std::string svg = pareto_gpus_svg(sweeps);
  // 256 (12 s) and 512 (8 s) are on the frontier; 1024 (9 s) is beaten by 512.
  CHECK(count(svg, "<circle class=\"frontier\"") == 2);
  CHECK(count(svg, "<circle class=\"dominated\"") == 1);
  // ticks in GPU order whatever the input order
  const auto a = svg.find(">256<"), b = svg.find(">512<"), c = svg.find(">1,024<");
  REQUIRE(a != std::string::npos);
  REQUIRE(c != std::string::npos);
  CHECK(a < b);
  CHECK(b < c);
}

TEST_CASE("several results files: one model, the GPU chart added; mixed models refused") {
  const std::string one = sweep_report_html(sweep_json("llama3-70b", 512, 8.0), "a.json");
  CHECK(count(one, "id=\"pareto-memory\"") == 1);
  CHECK(count(one, "id=\"pareto-gpus\"") == 0);
  const std::string two = sweep_report_html({{sweep_json("llama3-70b", 512, 8.0), "a.json"},
                                             {sweep_json("llama3-70b", 1024, 5.0), "b.json"}});
  CHECK(count(two, "id=\"pareto-gpus\"") == 1);
  CHECK_THROWS_WITH_AS(
      sweep_report_html({{sweep_json("llama3-70b", 512, 8.0), "a.json"},
                         {sweep_json("llama3-8b", 1024, 5.0), "b.json"}}),
      doctest::Contains("b.json of llama3-8b: several results files must sweep one model"),
      InputError);
}
