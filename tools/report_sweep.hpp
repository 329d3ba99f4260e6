#pragma once
// The sweep JSON that `meshsim report` reads (tools/report_html.hpp), validated into rows, and
// the number formats the page uses.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace meshsim::report {

struct Category {
  std::string name;
  double percent = 0;
};

struct Row {
  std::size_t index = 0;  // position in the file's "rows"
  std::int64_t tp = 1, pp = 1, cp = 1, dp = 1, vp = 1, mbs = 1, microbatches = 0;
  std::string schedule, cp_variant;
  std::string recompute, sharding, precision;  // empty in files that predate them
  bool oom = false;
  bool timed = false;  // not OOM: it has a step time
  double step_time_s = 0, tokens_per_s = 0, mfu = 0, mem_gb = 0;
  std::int64_t peak_rank = 0;
  std::string critical_path;
  std::vector<Category> categories;
  std::string label;  // "tp8 pp4 cp1 dp32 vp2 mbs1 interleaved"
};

struct Sweep {
  std::string model, hardware;
  std::int64_t gpus = 0;
  std::optional<std::int64_t> seq, global_batch;
  std::vector<Row> rows;
  std::optional<double> capacity_gb;  // of a built-in hardware profile
};

// Validates `json` (schema_version 1, see sweep_json in tools/sweep.hpp); bad input throws
// InputError "<origin>: field 'rows[3].mem_gb': expected ...".
Sweep parse_sweep(const nlohmann::json& json, std::string_view origin);

// Timed rows by step time (ties: file order).
std::vector<const Row*> ranked_rows(const Sweep& s);

std::string num(double v);             // 12.3
std::string seconds(double s);         // "1.234 s"
std::string percent(double fraction);  // 0.123 -> "12.3%"
std::string grouped(double v);         // 1234567.8 -> "1,234,568"
std::string integer(std::int64_t v);   // grouped

}  // namespace meshsim::report
