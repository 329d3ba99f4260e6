#include "tools/report_sweep.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/json_fields.hpp"

namespace meshsim::report {
namespace {

constexpr std::int64_t kBig = std::int64_t{1} << 40;

double number_in(const JsonField& f, double min, double max, std::string_view expected) {
  if (!f.raw().is_number()) f.fail(expected);
  const double v = f.raw().get<double>();
  if (!std::isfinite(v) || v < min || v > max) f.fail(expected);
  return v;
}

// null for an OOM plan; a number in [min, max] for a timed one.
double timed_number(const JsonField& f, bool oom, double min, double max,
                    std::string_view expected) {
  if (f.raw().is_null()) {
    if (oom) return 0;
    f.fail(fmt::format("{} (the plan is not OOM)", expected));
  }
  if (oom) f.fail("null (the plan is OOM)");
  return number_in(f, min, max, expected);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "61% gemm, 14% attention_bwd, 9% p2p" (empty for an OOM plan).
std::vector<Category> parse_critical_path(const JsonField& f) {
  const std::string text = f.as_string();
  std::vector<Category> out;
  if (trim(text).empty()) return out;
  constexpr std::string_view kExpected = "a list like \"61% gemm, 14% attention_bwd, 9% p2p\"";
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view part = trim(rest.substr(0, comma));
    const std::size_t pct = part.find('%');
    if (pct == std::string_view::npos) f.fail(kExpected);
    const std::string_view number = part.substr(0, pct);
    const std::string_view name = trim(part.substr(pct + 1));
    double value = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (number.empty() || ec != std::errc() || end != number.data() + number.size() ||
        !std::isfinite(value) || value < 0 || value > 100 || name.empty()) {
      f.fail(kExpected);
    }
    out.push_back({std::string(name), value});
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

Row parse_row(const JsonField& j, std::size_t index) {
  Row r;
  r.index = index;
  r.tp = j["tp"].as_int(1, 1 << 20);
  r.pp = j["pp"].as_int(1, 1 << 20);
  r.cp = j["cp"].as_int(1, 1 << 20);
  r.dp = j["dp"].as_int(1, 1 << 20);
  r.vp = j["vp"].as_int(1, 1 << 20);
  r.mbs = j["mbs"].as_int(1, kBig);
  r.schedule = j["schedule"].as_string();
  r.cp_variant = j["cp_variant"].as_string();
  // Optional: files written before sweeps searched them have neither.
  if (j.has("recompute")) r.recompute = j["recompute"].as_string();
  if (j.has("sharding")) r.sharding = j["sharding"].as_string();
  if (j.has("precision")) r.precision = j["precision"].as_string();
  r.microbatches = j["microbatches"].as_int(0, kBig);
  r.oom = j["oom"].as_bool();
  r.timed = !r.oom;
  r.step_time_s = timed_number(j["step_time_s"], r.oom, 1e-12, 1e12, "a positive number");
  r.tokens_per_s = timed_number(j["tokens_per_s"], r.oom, 0, 1e300, "a non-negative number");
  r.mfu = timed_number(j["mfu"], r.oom, 0, 100, "a fraction >= 0");
  r.mem_gb = number_in(j["mem_gb"], 0, 1e15, "a number of GB >= 0");
  r.peak_rank = j["peak_rank"].as_int(0, kBig);
  r.critical_path = j["critical_path"].as_string();
  r.categories = parse_critical_path(j["critical_path"]);
  r.label = fmt::format("tp{} pp{} cp{} dp{} vp{} mbs{} {}", r.tp, r.pp, r.cp, r.dp, r.vp, r.mbs,
                        r.schedule);
  if (r.cp > 1) r.label += " " + r.cp_variant;
  return r;
}

// Labels name the sharding, the recompute and the precision when the rows differ in them (a sweep
// that searched them), as the sweep's own table does.
void label_searched_settings(std::vector<Row>& rows) {
  auto differs = [&](std::string Row::*field) {
    return std::any_of(rows.begin(), rows.end(),
                       [&](const Row& r) { return r.*field != rows.front().*field; });
  };
  const bool sharding = differs(&Row::sharding), recompute = differs(&Row::recompute),
             precision = differs(&Row::precision);
  for (Row& r : rows) {
    if (sharding) r.label += " " + r.sharding;
    if (recompute) r.label += " rc=" + r.recompute;
    if (precision) r.label += " " + r.precision;
  }
}

}  // namespace

Sweep parse_sweep(const nlohmann::json& json, std::string_view origin) {
  const JsonField top(json, std::string(origin));
  if (!json.is_object()) top.fail("an object (the output of meshsim sweep --out FILE.json)");
  const JsonField version = top["schema_version"];
  if (!version.raw().is_number_integer() || version.raw().get<std::int64_t>() != 1) {
    version.fail("1 (the sweep JSON version this meshsim reads)");
  }
  Sweep s;
  s.model = top["model"].as_string();
  s.hardware = top["hardware"].as_string();
  s.gpus = top["gpus"].as_int(0, kBig);
  const JsonField rows = top["rows"];
  rows.expect_array();
  // sweep_json leaves out seq and global_batch when there are no rows.
  if (rows.size() > 0 || top.has("seq")) s.seq = top["seq"].as_int(1, kBig);
  if (rows.size() > 0 || top.has("global_batch")) {
    s.global_batch = top["global_batch"].as_int(1, kBig);
  }
  for (std::size_t i = 0; i < rows.size(); ++i) s.rows.push_back(parse_row(rows.at(i), i));
  label_searched_settings(s.rows);
  if (const auto hw = builtin_hardware(s.hardware); hw && hw->memory_bytes > 0) {
    s.capacity_gb = hw->memory_bytes / 1e9;
  }
  return s;
}

std::vector<const Row*> ranked_rows(const Sweep& s) {
  std::vector<const Row*> out;
  for (const auto& r : s.rows) {
    if (r.timed) out.push_back(&r);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Row* a, const Row* b) { return a->step_time_s < b->step_time_s; });
  return out;
}

std::string num(double v) {
  return fmt::format("{:.1f}", v);
}

std::string seconds(double s) {
  return fmt::format("{:.4g} s", s);
}

std::string percent(double fraction) {
  return fmt::format("{:.1f}%", 100 * fraction);
}

// 1234567.8 -> "1,234,568"
std::string grouped(double v) {
  if (!(std::fabs(v) < 1e15)) return fmt::format("{:.3e}", v);
  std::string digits = fmt::format("{:.0f}", std::fabs(v));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 && out != "0" ? "-" : "") + out;
}

std::string integer(std::int64_t v) {
  return grouped(static_cast<double>(v));
}

}  // namespace meshsim::report
