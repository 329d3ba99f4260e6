#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "tools/report_html.hpp"

using namespace meshsim;
using nlohmann::json;

namespace {

json row(int tp, int pp, int dp, const char* schedule, double step_time, double mem_gb,
         const char* critical_path) {
  return json{{"tp", tp},
              {"pp", pp},
              {"cp", 1},
              {"dp", dp},
              {"vp", 1},
              {"mbs", 1},
              {"schedule", schedule},
              {"cp_variant", "zigzag"},
              {"microbatches", 512 / dp},
              {"step_time_s", step_time},
              {"tokens_per_s", 512.0 * 8192 / step_time},
              {"mfu", 0.4},
              {"mem_gb", mem_gb},
              {"peak_rank", 0},
              {"oom", false},
              {"critical_path", critical_path}};
}

json oom_row(int tp, int pp, int dp, double mem_gb) {
  json r = row(tp, pp, dp, "1f1b", 1, mem_gb, "");
  r["step_time_s"] = nullptr;
  r["tokens_per_s"] = nullptr;
  r["mfu"] = nullptr;
  r["oom"] = true;
  return r;
}

json small_sweep() {
  json rows = json::array();
  rows.push_back(row(8, 4, 32, "interleaved", 9.5, 61.2, "61% gemm, 14% attention_bwd, 9% p2p"));
  rows.push_back(oom_row(2, 2, 256, 142.0));
  rows.push_back(row(8, 8, 16, "1f1b", 8.25, 48.0, "55% gemm, 20% p2p, 10% dp_reduce"));
  rows.push_back(row(4, 8, 32, "zb-h1", 11.0, 70.5, "70% gemm, 30% attention_fwd"));
  rows.push_back(oom_row(1, 8, 128, 97.3));
  rows.push_back(row(8, 2, 64, "1f1b", 12.75, 78.0, "40% gemm, 35% tp_allreduce, 5% p2p"));
  rows.push_back(row(8, 16, 8, "1f1b", 10.0, 30.0, ""));
  return json{{"schema_version", 1}, {"model", "llama3-70b"}, {"hardware", "h100-sxm"},
              {"gpus", 1024},        {"seq", 8192},           {"global_batch", 512},
              {"rows", rows}};
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The text of the <svg> element with that id.
std::string svg_of(const std::string& html, const std::string& id) {
  const auto start = html.find("<svg class=\"plot\" id=\"" + id + "\"");
  REQUIRE(start != std::string::npos);
  const auto end = html.find("</svg>", start);
  REQUIRE(end != std::string::npos);
  return html.substr(start, end - start);
}

std::string error_of(const json& j) {
  try {
    sweep_report_html(j, "results.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("report: one page with the three plots, the header and the table") {
  const std::string html = sweep_report_html(small_sweep(), "results.json");
  CHECK(html.starts_with("<!DOCTYPE html>"));
  CHECK(html.find("</html>") != std::string::npos);
  // Self-contained: nothing fetched, no scripts.
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("llama3-70b") != std::string::npos);
  CHECK(html.find("h100-sxm") != std::string::npos);
  CHECK(html.find("<dt>plans</dt><dd>7</dd>") != std::string::npos);
  CHECK(html.find("<dt>OOM</dt><dd>2</dd>") != std::string::npos);
  CHECK(html.find("<dt>timed</dt><dd>5</dd>") != std::string::npos);
  CHECK(html.find("<dt>GPUs</dt><dd>1,024</dd>") != std::string::npos);

  const std::string step = svg_of(html, "step-time");
  CHECK(count(step, "<rect class=\"bar") == 5);
  // Sorted by step time: the fastest (tp8 pp8, 8.25 s) is drawn first, as the best.
  const auto fastest = step.find("tp8 pp8 cp1 dp16 vp1 mbs1 1f1b");
  CHECK(fastest != std::string::npos);
  CHECK(fastest < step.find("tp8 pp4 cp1 dp32 vp1 mbs1 interleaved"));
  CHECK(step.find("bar best") < step.find("tp8 pp4 cp1 dp32"));
  CHECK(step.find("step time (s)") != std::string::npos);

  const std::string mem = svg_of(html, "memory");
  CHECK(count(mem, "<rect class=\"bar") == 7);
  CHECK(count(mem, "<rect class=\"bar oom\"") == 2);
  CHECK(mem.find("(OOM)") != std::string::npos);
  // h100-sxm is a built-in profile: its capacity is drawn.
  CHECK(mem.find("<line class=\"capacity\"") != std::string::npos);
  CHECK(mem.find("h100-sxm memory: 80.0 GB") != std::string::npos);

  const std::string breakdown = svg_of(html, "breakdown");
  CHECK(count(breakdown, "<text class=\"label\"") == 5);
  // The slowest timed plan (12.75 s) is not among the five best... there are exactly five.
  CHECK(breakdown.find("#5 tp8 pp2") != std::string::npos);
  CHECK(breakdown.find("attention_bwd") != std::string::npos);
  CHECK(breakdown.find("other (outside the top three)") != std::string::npos);
  // Every category of the best five has a legend swatch: gemm, p2p, dp_reduce, attention_bwd,
  // attention_fwd, tp_allreduce, other.
  CHECK(count(breakdown, "<rect class=\"swatch\"") == 7);

  // The table: five timed rows, then the two OOM rows, marked.
  CHECK(count(html, "<tr class=\"oom\">") == 2);
  CHECK(count(html, "OOM</td>") == 2);
  CHECK(html.find("<h2>Top 7 plans</h2>") != std::string::npos);

  // Deterministic.
  CHECK(html == sweep_report_html(small_sweep(), "results.json"));
}

TEST_CASE("report: text is escaped for HTML") {
  json j = small_sweep();
  j["model"] = "evil<&>\"model'";
  j["rows"][0]["schedule"] = "<script>alert(1)</script>";
  j["rows"][2]["critical_path"] = "60% a<b, 20% c&d";
  const std::string html = sweep_report_html(j, "dir/<results>.json");
  CHECK(html.find("evil<&>") == std::string::npos);
  CHECK(html.find("evil&lt;&amp;&gt;&quot;model&#39;") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("&lt;script&gt;") != std::string::npos);
  CHECK(html.find("a&lt;b") != std::string::npos);
  CHECK(html.find("c&amp;d") != std::string::npos);
  CHECK(html.find("dir/&lt;results&gt;.json") != std::string::npos);
}

TEST_CASE("report: edge cases render") {
  SUBCASE("no rows (sweep_json leaves out seq and global_batch)") {
    const json j = {{"schema_version", 1},
                    {"model", "m"},
                    {"hardware", "h"},
                    {"gpus", 0},
                    {"rows", json::array()}};
    const std::string html = sweep_report_html(j, "r.json");
    CHECK(html.find("id=\"step-time\"") != std::string::npos);
    CHECK(html.find("id=\"memory\"") != std::string::npos);
    CHECK(html.find("id=\"breakdown\"") != std::string::npos);
    CHECK(html.find("the sweep has no plans") != std::string::npos);
    // An unknown hardware profile: no capacity line.
    CHECK(html.find("<line class=\"capacity\"") == std::string::npos);
  }
  SUBCASE("every plan OOM") {
    json j = small_sweep();
    j["rows"] = json::array({oom_row(1, 1, 1024, 900), oom_row(2, 1, 512, 450)});
    const std::string html = sweep_report_html(j, "r.json");
    CHECK(html.find("no plan fits in memory") != std::string::npos);
    CHECK(count(svg_of(html, "memory"), "<rect class=\"bar oom\"") == 2);
  }
  SUBCASE("many plans: dots instead of bars, and only 20 rows in the table") {
    json j = small_sweep();
    json rows = json::array();
    for (int i = 0; i < 300; ++i) {
      rows.push_back(row(8, 4, 32, "1f1b", 5 + 0.01 * i, 20 + 0.1 * i, "50% gemm"));
    }
    j["rows"] = rows;
    const std::string html = sweep_report_html(j, "r.json");
    CHECK(count(svg_of(html, "step-time"), "<circle") == 300);
    CHECK(count(html, "<tr>") == 21);  // header + 20
  }
  SUBCASE("critical-path percentages over 100 are scaled, none are fine") {
    json j = small_sweep();
    j["rows"][2]["critical_path"] = "34% a, 34% b, 34% c";
    CHECK_NOTHROW(sweep_report_html(j, "r.json"));
  }
}

TEST_CASE("report: bad input names the field") {
  const json good = small_sweep();
  CHECK(error_of(json::array()) ==
        "results.json: field '(top)': expected an object (the output "
        "of meshsim sweep --out FILE.json)");
  json j = good;
  j.erase("rows");
  CHECK(error_of(j) == "results.json: field 'rows': missing");
  j = good;
  j["schema_version"] = 2;
  CHECK(error_of(j).find("field 'schema_version'") != std::string::npos);
  j = good;
  j["rows"][3].erase("mem_gb");
  CHECK(error_of(j) == "results.json: field 'rows[3].mem_gb': missing");
  j = good;
  j["rows"][0]["tp"] = "8";
  CHECK(error_of(j).find("field 'rows[0].tp': expected an integer") != std::string::npos);
  j = good;
  j["rows"][0]["step_time_s"] = nullptr;
  CHECK(error_of(j).find("field 'rows[0].step_time_s'") != std::string::npos);
  j = good;
  j["rows"][1]["oom"] = "yes";
  CHECK(error_of(j).find("field 'rows[1].oom'") != std::string::npos);
  j = good;
  j["rows"][0]["mem_gb"] = -1;
  CHECK(error_of(j).find("field 'rows[0].mem_gb'") != std::string::npos);
  j = good;
  j["rows"][0]["critical_path"] = "lots of gemm";
  CHECK(error_of(j).find("field 'rows[0].critical_path'") != std::string::npos);
  j = good;
  j["rows"] = json::object();
  CHECK(error_of(j) == "results.json: field 'rows': expected an array");
  j = good;
  j.erase("seq");
  CHECK(error_of(j) == "results.json: field 'seq': missing");
  // Every message is one line.
  j = good;
  j["rows"][2]["schedule"] = 3;
  CHECK(error_of(j).find('\n') == std::string::npos);
}

TEST_CASE("report: mutations of the input either render or throw InputError") {
  const json good = small_sweep();
  const std::vector<json> values = {nullptr,
                                    true,
                                    false,
                                    0,
                                    -1,
                                    1,
                                    std::int64_t{1} << 62,
                                    1.5,
                                    -0.5,
                                    1e308,
                                    -1e308,
                                    "",
                                    "x",
                                    "100% gemm",
                                    "%",
                                    "1e400% a",
                                    "-5% a",
                                    "50% , 50%",
                                    json::array(),
                                    json::object(),
                                    json::array({1, 2})};
  // Every (path, value) replacement, and every deletion, of the top level and of two rows.
  std::vector<json::json_pointer> paths;
  for (const auto& [key, value] : good.items()) paths.emplace_back("/" + key);
  for (const int r : {0, 1}) {
    for (const auto& [key, value] : good["rows"][static_cast<std::size_t>(r)].items()) {
      paths.emplace_back("/rows/" + std::to_string(r) + "/" + key);
    }
  }
  paths.emplace_back("/rows/0");
  std::size_t rendered = 0, rejected = 0;
  for (const auto& path : paths) {
    for (const auto& v : values) {
      json j = good;
      j[path] = v;
      try {
        const std::string html = sweep_report_html(j, "fuzz.json");
        CHECK(html.find("id=\"breakdown\"") != std::string::npos);
        ++rendered;
      } catch (const InputError& e) {
        CHECK(std::string(e.what()).starts_with("fuzz.json: "));
        ++rejected;
      }
    }
    json j = good;
    json& parent = j[path.parent_pointer()];
    if (parent.is_array()) {
      parent.erase(std::stoul(path.back()));
    } else {
      parent.erase(path.back());
    }
    try {
      sweep_report_html(j, "fuzz.json");
      ++rendered;
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("missing") != std::string::npos);
      ++rejected;
    }
  }
  CHECK(rendered > 0);
  CHECK(rejected > 0);
}
