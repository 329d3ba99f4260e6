#include "tools/report_html.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/json_fields.hpp"

namespace meshsim {
namespace {

// ----------------------------------------------------------------------------------------------
// The input, validated.

struct Category {
  std::string name;
  double percent = 0;
};

struct Row {
  std::size_t index = 0;  // position in the file's "rows"
  std::int64_t tp = 1, pp = 1, cp = 1, dp = 1, vp = 1, mbs = 1, microbatches = 0;
  std::string schedule, cp_variant;
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
  if (const auto hw = builtin_hardware(s.hardware); hw && hw->memory_bytes > 0) {
    s.capacity_gb = hw->memory_bytes / 1e9;
  }
  return s;
}

// Timed rows by step time (ties: file order).
std::vector<const Row*> ranked_rows(const Sweep& s) {
  std::vector<const Row*> out;
  for (const auto& r : s.rows) {
    if (r.timed) out.push_back(&r);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Row* a, const Row* b) { return a->step_time_s < b->step_time_s; });
  return out;
}

// ----------------------------------------------------------------------------------------------
// Formatting.

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

// Round axis limits: the top and the tick step (1, 2 or 5 x 10^k), about five ticks.
struct Axis {
  double top = 1;
  double step = 0.2;
  int ticks() const { return static_cast<int>(std::lround(top / step)); }
};

Axis nice_axis(double max_value) {
  if (!(max_value > 1e-200) || !std::isfinite(max_value)) max_value = 1;
  const double raw = max_value / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * magnitude;
  const double top = std::max(1.0, std::ceil(max_value / step - 1e-9)) * step;
  return {top, step};
}

// Integer tick step along a plan axis of n slots: 1, 2, 5, 10, ... with at most ~10 labels.
std::size_t slot_tick_step(std::size_t n) {
  std::size_t step = 1;
  for (std::size_t m = 1;; m *= 10) {
    for (const std::size_t k : {std::size_t{1}, std::size_t{2}, std::size_t{5}}) {
      step = k * m;
      if (n / step <= 10) return step;
    }
  }
}

constexpr std::array<const char*, 10> kPalette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                  "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                  "#9c755f", "#bab0ac"};
constexpr const char* kBarColor = "#4e79a7";
constexpr const char* kBestColor = "#59a14f";
constexpr const char* kOomColor = "#e15759";
constexpr const char* kOtherColor = "#d9d9d9";

// ----------------------------------------------------------------------------------------------
// SVG plots: a frame with a value axis (y) over plan slots (x).

constexpr double kWidth = 960;
constexpr double kHeight = 380;
constexpr double kLeft = 80, kRight = 24, kTop = 36, kBottom = 64;

struct Frame {
  std::string svg;
  Axis y;
  std::size_t slots = 0;
  double plot_w() const { return kWidth - kLeft - kRight; }
  double plot_h() const { return kHeight - kTop - kBottom; }
  double slot_w() const { return plot_w() / static_cast<double>(std::max<std::size_t>(slots, 1)); }
  double x_center(std::size_t i) const { return kLeft + slot_w() * (static_cast<double>(i) + 0.5); }
  double y_of(double v) const { return kTop + plot_h() * (1 - std::clamp(v / y.top, 0.0, 1.0)); }
};

std::string svg_open(std::string_view id, double height, std::string_view label) {
  return fmt::format(
      "<svg class=\"plot\" id=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" "
      "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">\n",
      id, num(kWidth), num(height), num(kWidth), num(height), html_escape(label));
}

// Gridlines, tick labels and axis titles of a value-over-plans plot.
Frame frame(std::string_view id, std::string_view aria, double max_value, std::size_t slots,
            std::string_view x_title, std::string_view y_title) {
  Frame f;
  f.y = nice_axis(max_value);
  f.slots = slots;
  std::string& s = f.svg;
  s += svg_open(id, kHeight, aria);
  const double x0 = kLeft, x1 = kLeft + f.plot_w(), y_base = kTop + f.plot_h();
  for (int k = 0; k <= f.y.ticks(); ++k) {
    const double v = f.y.step * k;
    const double y = f.y_of(v);
    s += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", num(x0),
                     num(y), num(x1), num(y));
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{:g}</text>\n",
                     num(x0 - 8), num(y + 4), v);
  }
  if (slots > 0) {
    const std::size_t step = slot_tick_step(slots);
    for (std::size_t i = 0; i < slots; ++i) {
      if (i != 0 && (i + 1) % step != 0) continue;
      const double x = f.x_center(i);
      s += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", num(x),
                       num(y_base), num(x), num(y_base + 5));
      s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       num(x), num(y_base + 19), i + 1);
    }
  }
  s += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", num(x0),
                   num(kTop), num(x0), num(y_base));
  s += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", num(x0),
                   num(y_base), num(x1), num(y_base));
  s += fmt::format("<text class=\"title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   num(x0 + f.plot_w() / 2), num(kHeight - 14), html_escape(x_title));
  s += fmt::format(
      "<text class=\"title\" x=\"18\" y=\"{}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 18 {})\">{}</text>\n",
      num(kTop + f.plot_h() / 2), num(kTop + f.plot_h() / 2), html_escape(y_title));
  return f;
}

// One plan's mark: a bar from the axis to v, or a dot when there are too many plans for bars.
std::string mark(const Frame& f, std::size_t slot, double v, const char* color,
                 std::string_view css_class, const std::string& tooltip) {
  const double x = f.x_center(slot);
  const double y = f.y_of(v);
  const double base = kTop + f.plot_h();
  if (f.slots > 120) {
    return fmt::format(
        "<circle class=\"{}\" cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{}\"><title>{}</title>"
        "</circle>\n",
        css_class, num(x), num(y), color, html_escape(tooltip));
  }
  const double w = std::max(1.0, f.slot_w() * 0.8);
  return fmt::format(
      "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}"
      "</title></rect>\n",
      css_class, fmt::format("{:.2f}", x - w / 2), num(y), fmt::format("{:.2f}", w),
      num(std::max(0.0, base - y)), color, html_escape(tooltip));
}

std::string empty_note(const Frame& f, std::string_view text) {
  return fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     num(kLeft + f.plot_w() / 2), num(kTop + f.plot_h() / 2), html_escape(text));
}

std::string legend_item(double x, double y, const char* color, std::string_view text,
                        bool dashed_line = false) {
  std::string s;
  if (dashed_line) {
    s += fmt::format("<line class=\"capacity\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", num(x),
                     num(y + 6), num(x + 14), num(y + 6));
  } else {
    s += fmt::format(
        "<rect class=\"swatch\" x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n",
        num(x), num(y), color);
  }
  s += fmt::format("<text class=\"legend\" x=\"{}\" y=\"{}\">{}</text>\n", num(x + 18), num(y + 10),
                   html_escape(text));
  return s;
}

// Legend text width estimate (no font metrics without a browser).
double text_width(std::string_view text) {
  return 7.0 * static_cast<double>(text.size());
}

std::string step_time_svg(const std::vector<const Row*>& ranked) {
  double max_t = 0;
  for (const Row* r : ranked) max_t = std::max(max_t, r->step_time_s);
  Frame f = frame("step-time", "Step time of every timed plan, fastest first", max_t, ranked.size(),
                  "plans that fit in memory, ranked by step time", "step time (s)");
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const Row& r = *ranked[i];
    const std::string tip =
        fmt::format("#{} {}: {}, MFU {}, {} tokens/s", i + 1, r.label, seconds(r.step_time_s),
                    percent(r.mfu), grouped(r.tokens_per_s));
    f.svg += mark(f, i, r.step_time_s, i == 0 ? kBestColor : kBarColor, i == 0 ? "bar best" : "bar",
                  tip);
  }
  if (ranked.empty()) f.svg += empty_note(f, "no plan fits in memory: nothing was timed");
  f.svg += legend_item(kLeft + 10, 10, kBestColor, "fastest plan");
  f.svg += legend_item(kLeft + 130, 10, kBarColor, "other plans");
  f.svg += "</svg>\n";
  return f.svg;
}

std::string memory_svg(const Sweep& s) {
  std::vector<const Row*> rows;
  for (const auto& r : s.rows) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row* a, const Row* b) { return a->mem_gb < b->mem_gb; });
  double max_gb = s.capacity_gb.value_or(0);
  for (const Row* r : rows) max_gb = std::max(max_gb, r->mem_gb);
  Frame f = frame("memory", "Peak memory per GPU of every plan, OOM plans marked", max_gb,
                  rows.size(), "all plans, by peak memory", "peak memory per GPU (GB)");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = *rows[i];
    const std::string tip = fmt::format("{}: {} GB on pipeline rank {}{}", r.label, num(r.mem_gb),
                                        r.peak_rank, r.oom ? " (OOM)" : "");
    f.svg += mark(f, i, r.mem_gb, r.oom ? kOomColor : kBarColor, r.oom ? "bar oom" : "bar", tip);
  }
  if (rows.empty()) f.svg += empty_note(f, "the sweep has no plans");
  double legend_x = kLeft + 10;
  f.svg += legend_item(legend_x, 10, kBarColor, "fits");
  legend_x += 70;
  f.svg += legend_item(legend_x, 10, kOomColor, "OOM (out of memory)");
  legend_x += 170;
  if (s.capacity_gb) {
    const double y = f.y_of(*s.capacity_gb);
    const std::string text = fmt::format("{} memory: {} GB", s.hardware, num(*s.capacity_gb));
    f.svg += fmt::format(
        "<line class=\"capacity\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"><title>{}</title>"
        "</line>\n",
        num(kLeft), num(y), num(kLeft + f.plot_w()), num(y), html_escape(text));
    f.svg += legend_item(legend_x, 10, nullptr, text, true);
  }
  f.svg += "</svg>\n";
  return f.svg;
}

std::string breakdown_svg(const std::vector<const Row*>& ranked) {
  const std::size_t n = std::min<std::size_t>(ranked.size(), 5);
  // Colors by first appearance, best plan first.
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& c : ranked[i]->categories) {
      if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
    }
  }
  auto color_of = [&](const std::string& name) {
    const auto k =
        static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
    return kPalette[k % kPalette.size()];
  };
  constexpr double label_w = 400, bar_h = 24, row_h = 36, top = 16;
  const double bar_w = kWidth - label_w - kRight;
  const double bars_bottom = top + row_h * static_cast<double>(std::max<std::size_t>(n, 1));
  // Legend rows, wrapped to the width.
  std::vector<std::pair<std::string, const char*>> legend;
  for (const auto& name : names) legend.emplace_back(name, color_of(name));
  legend.emplace_back("other (outside the top three)", kOtherColor);
  std::vector<std::pair<double, double>> at;  // legend item positions
  double lx = label_w, ly = bars_bottom + 40;
  for (const auto& [text, color] : legend) {
    const double w = 18 + text_width(text) + 22;
    if (lx + w > kWidth - kRight && lx > label_w) {
      lx = label_w;
      ly += 20;
    }
    at.emplace_back(lx, ly);
    lx += w;
  }
  const double height = ly + 24;
  std::string s =
      svg_open("breakdown", height, "Critical-path breakdown of the five fastest plans");
  for (int k = 0; k <= 4; ++k) {
    const double x = label_w + bar_w * k / 4;
    s += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", num(x),
                     num(top - 4), num(x), num(bars_bottom));
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}%</text>\n",
                     num(x), num(bars_bottom + 16), 25 * k);
  }
  s += fmt::format("<text class=\"title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   num(label_w + bar_w / 2), num(bars_bottom + 32),
                   "share of the step's critical path");
  for (std::size_t i = 0; i < n; ++i) {
    const Row& r = *ranked[i];
    const double y = top + row_h * static_cast<double>(i);
    s += fmt::format(
        "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
        num(label_w - 10), num(y + bar_h / 2 + 4),
        html_escape(fmt::format("#{} {} ({})", i + 1, r.label, seconds(r.step_time_s))));
    double total = 0;
    for (const auto& c : r.categories) total += c.percent;
    const double scale = total > 100 ? 100 / total : 1;
    double x = label_w;
    auto segment = [&](double pct, const char* color, const std::string& tip) {
      const double w = bar_w * pct / 100;
      s += fmt::format(
          "<rect class=\"segment\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>{}</title></rect>\n",
          fmt::format("{:.2f}", x), num(y), fmt::format("{:.2f}", w), num(bar_h), color,
          html_escape(tip));
      x += w;
    };
    for (const auto& c : r.categories) {
      segment(c.percent * scale, color_of(c.name),
              fmt::format("#{} {}: {:g}% {}", i + 1, r.label, c.percent, c.name));
    }
    const double rest = 100 - total * scale;
    if (rest > 1e-9) {
      segment(rest, kOtherColor,
              fmt::format("#{} {}: {:.0f}% other categories", i + 1, r.label, rest));
    }
  }
  if (n == 0) {
    s += fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     num(label_w + bar_w / 2), num(top + row_h / 2), "no plan was timed");
  }
  for (std::size_t k = 0; k < legend.size(); ++k) {
    s += legend_item(at[k].first, at[k].second, legend[k].second, legend[k].first);
  }
  s += "</svg>\n";
  return s;
}

std::string table_html(const std::vector<const Row*>& ranked, const Sweep& s) {
  constexpr std::size_t kTableRows = 20;
  std::vector<const Row*> rows(
      ranked.begin(),
      ranked.begin() + static_cast<std::ptrdiff_t>(std::min(ranked.size(), kTableRows)));
  for (const auto& r : s.rows) {
    if (rows.size() >= kTableRows) break;
    if (r.oom) rows.push_back(&r);
  }
  std::string t =
      "<table>\n<thead><tr><th>#</th><th>tp</th><th>pp</th><th>cp</th><th>dp</th><th>vp</th>"
      "<th>mbs</th><th>schedule</th><th>cp variant</th><th>microbatches</th><th>step time</th>"
      "<th>tokens/s</th><th>MFU</th><th>memory (GB)</th><th>peak rank</th>"
      "<th>critical path</th></tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = *rows[i];
    t += r.oom ? "<tr class=\"oom\">" : "<tr>";
    t += fmt::format("<td>{}</td>", r.oom ? std::string("&ndash;") : std::to_string(i + 1));
    for (const std::int64_t v : {r.tp, r.pp, r.cp, r.dp, r.vp, r.mbs}) {
      t += fmt::format("<td class=\"n\">{}</td>", v);
    }
    t += fmt::format("<td>{}</td><td>{}</td><td class=\"n\">{}</td>", html_escape(r.schedule),
                     html_escape(r.cp_variant), r.microbatches);
    if (r.oom) {
      t += "<td class=\"n oom-mark\">OOM</td><td class=\"n\">&ndash;</td>"
           "<td class=\"n\">&ndash;</td>";
    } else {
      t += fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                       seconds(r.step_time_s), grouped(r.tokens_per_s), percent(r.mfu));
    }
    t += fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
                     num(r.mem_gb), r.peak_rank, html_escape(r.critical_path));
  }
  if (rows.empty()) t += "<tr><td colspan=\"16\">the sweep has no plans</td></tr>\n";
  t += "</tbody>\n</table>\n";
  return t;
}

constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 24px auto; max-width: 1000px; padding: 0 16px; color: #222; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; }
p.source { color: #666; font-size: 13px; margin: 0 0 12px; }
dl.summary { display: grid; grid-template-columns: repeat(4, auto); gap: 4px 18px;
             font-size: 14px; margin: 0; justify-content: start; }
dl.summary dt { color: #666; }
dl.summary dd { margin: 0; font-weight: 600; }
p.best { font-size: 14px; }
svg.plot { display: block; max-width: 100%; height: auto; background: #fcfcfc;
           border: 1px solid #e4e4e4; }
svg.plot text { font-size: 12px; fill: #333; }
svg.plot text.title { font-size: 13px; fill: #444; }
svg.plot text.note { font-size: 15px; fill: #888; }
svg.plot text.label { font-size: 11.5px; }
svg.plot line.grid { stroke: #e6e6e6; stroke-width: 1; }
svg.plot line.axis { stroke: #555; stroke-width: 1; }
svg.plot line.capacity { stroke: #222; stroke-width: 1.5; stroke-dasharray: 6 4; }
svg.plot rect.segment { stroke: #fff; stroke-width: 0.5; }
table { border-collapse: collapse; font-size: 12.5px; width: 100%; }
th, td { border-bottom: 1px solid #e4e4e4; padding: 3px 6px; text-align: left; }
th { background: #f3f3f3; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.oom td { color: #a33; background: #fdf1f1; }
td.oom-mark { font-weight: 700; }
)";

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string sweep_report_html(const nlohmann::json& sweep, std::string_view origin) {
  const Sweep s = parse_sweep(sweep, origin);
  const std::vector<const Row*> ranked = ranked_rows(s);
  std::size_t ooms = 0;
  for (const auto& r : s.rows) ooms += r.oom ? 1 : 0;
  const std::string title =
      fmt::format("meshsim sweep: {} on {} x {}", s.model, integer(s.gpus), s.hardware);

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += "<meta name=\"generator\" content=\"meshsim report\">\n";
  h += fmt::format("<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n", html_escape(title),
                   kStyle);
  h += fmt::format("<h1>{}</h1>\n", html_escape(title));
  h += fmt::format("<p class=\"source\">from {}</p>\n", html_escape(origin));
  auto opt = [](const std::optional<std::int64_t>& v) {
    return v ? integer(*v) : std::string("&ndash;");
  };
  h += "<dl class=\"summary\">\n";
  h += fmt::format("<dt>model</dt><dd>{}</dd><dt>hardware</dt><dd>{}</dd>\n", html_escape(s.model),
                   html_escape(s.hardware));
  h += fmt::format("<dt>GPUs</dt><dd>{}</dd><dt>sequence length</dt><dd>{}</dd>\n", integer(s.gpus),
                   opt(s.seq));
  h += fmt::format("<dt>global batch</dt><dd>{}</dd><dt>plans</dt><dd>{}</dd>\n",
                   opt(s.global_batch), s.rows.size());
  h += fmt::format("<dt>timed</dt><dd>{}</dd><dt>OOM</dt><dd>{}</dd>\n", ranked.size(), ooms);
  h += "</dl>\n";
  if (!ranked.empty()) {
    const Row& b = *ranked.front();
    h += fmt::format(
        "<p class=\"best\">fastest plan: <strong>{}</strong> &mdash; step time {}, MFU {}, {} "
        "tokens/s, {} GB per GPU</p>\n",
        html_escape(b.label), seconds(b.step_time_s), percent(b.mfu), grouped(b.tokens_per_s),
        num(b.mem_gb));
  } else {
    h += "<p class=\"best\">no plan fits in memory</p>\n";
  }
  h += "<h2>Step time</h2>\n" + step_time_svg(ranked);
  h += "<h2>Memory per GPU</h2>\n" + memory_svg(s);
  h += "<h2>Where the time goes: the five fastest plans</h2>\n" + breakdown_svg(ranked);
  h += fmt::format("<h2>Top {} plans</h2>\n", std::min<std::size_t>(s.rows.size(), 20));
  h += table_html(ranked, s);
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace meshsim
