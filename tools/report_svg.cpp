#include "tools/report_svg.hpp"
#include "traces/markup.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "tools/report_html.hpp"
#include "tools/report_svg_parts.hpp"

namespace meshsim::report {
namespace {

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
        css_class, num(x), num(y), color, markup_escape(tooltip));
  }
  const double w = std::max(1.0, f.slot_w() * 0.8);
  return fmt::format(
      "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}"
      "</title></rect>\n",
      css_class, fmt::format("{:.2f}", x - w / 2), num(y), fmt::format("{:.2f}", w),
      num(std::max(0.0, base - y)), color, markup_escape(tooltip));
}

std::string empty_note(const Frame& f, std::string_view text) {
  return fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     num(kLeft + f.plot_w() / 2), num(kTop + f.plot_h() / 2), markup_escape(text));
}

// The breakdown's geometry: plan labels on the left, 100% bars on the right.
constexpr double kLabelW = 400, kBarH = 24, kRowH = 36, kBarsTop = 16;
constexpr double kBarW = kWidth - kLabelW - kRight;

// The breakdown's colors: by the categories' first appearance, best plan first.
struct CategoryColors {
  std::vector<std::string> names;
  const char* of(const std::string& name) const {
    const auto k =
        static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
    return kPalette[k % kPalette.size()];
  }
};

CategoryColors category_colors(const std::vector<const Row*>& ranked, std::size_t n) {
  CategoryColors colors;
  std::vector<std::string>& names = colors.names;
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& c : ranked[i]->categories) {
      if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
    }
  }
  return colors;
}

// The legend under the bars: a swatch per category and one for the rest, in rows wrapped to the
// width; the SVG's height follows from its last row.
struct BreakdownLegend {
  std::vector<std::pair<std::string, const char*>> items;
  std::vector<std::pair<double, double>> at;  // legend item positions
  double height = 0;                          // of the whole SVG
};

BreakdownLegend breakdown_legend(const CategoryColors& colors, double bars_bottom) {
  BreakdownLegend legend;
  for (const auto& name : colors.names) legend.items.emplace_back(name, colors.of(name));
  legend.items.emplace_back("other (outside the top three)", kOtherColor);
  double lx = kLabelW, ly = bars_bottom + 40;
  for (const auto& [text, color] : legend.items) {
    const double w = 18 + text_width(text) + 22;
    if (lx + w > kWidth - kRight && lx > kLabelW) {
      lx = kLabelW;
      ly += 20;
    }
    legend.at.emplace_back(lx, ly);
    lx += w;
  }
  legend.height = ly + 24;
  return legend;
}

// Plan i's row: its label, then its critical-path categories as segments of one 100% bar (scaled
// down when they add up to more), the rest as "other categories".
std::string breakdown_bar(std::size_t i, const Row& r, const CategoryColors& colors) {
  std::string s;
  const double y = kBarsTop + kRowH * static_cast<double>(i);
  s += fmt::format(
      "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", num(kLabelW - 10),
      num(y + kBarH / 2 + 4),
      markup_escape(fmt::format("#{} {} ({})", i + 1, r.label, seconds(r.step_time_s))));
  double total = 0;
  for (const auto& c : r.categories) total += c.percent;
  const double scale = total > 100 ? 100 / total : 1;
  double x = kLabelW;
  auto segment = [&](double pct, const char* color, const std::string& tip) {
    const double w = kBarW * pct / 100;
    s += fmt::format(
        "<rect class=\"segment\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
        "<title>{}</title></rect>\n",
        fmt::format("{:.2f}", x), num(y), fmt::format("{:.2f}", w), num(kBarH), color,
        markup_escape(tip));
    x += w;
  };
  for (const auto& c : r.categories) {
    segment(c.percent * scale, colors.of(c.name),
            fmt::format("#{} {}: {:g}% {}", i + 1, r.label, c.percent, c.name));
  }
  const double rest = 100 - total * scale;
  if (rest > 1e-9) {
    segment(rest, kOtherColor,
            fmt::format("#{} {}: {:.0f}% other categories", i + 1, r.label, rest));
  }
  return s;
}

}  // namespace

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
        num(kLeft), num(y), num(kLeft + f.plot_w()), num(y), markup_escape(text));
    f.svg += legend_item(legend_x, 10, nullptr, text, true);
  }
  f.svg += "</svg>\n";
  return f.svg;
}

std::string breakdown_svg(const std::vector<const Row*>& ranked) {
  const std::size_t n = std::min<std::size_t>(ranked.size(), 5);
  const CategoryColors colors = category_colors(ranked, n);
  const double bars_bottom = kBarsTop + kRowH * static_cast<double>(std::max<std::size_t>(n, 1));
  const BreakdownLegend legend = breakdown_legend(colors, bars_bottom);
  std::string s =
      svg_open("breakdown", legend.height, "Critical-path breakdown of the five fastest plans");
  for (int k = 0; k <= 4; ++k) {
    const double x = kLabelW + kBarW * k / 4;
    s += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", num(x),
                     num(kBarsTop - 4), num(x), num(bars_bottom));
    s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}%</text>\n",
                     num(x), num(bars_bottom + 16), 25 * k);
  }
  s += fmt::format("<text class=\"title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   num(kLabelW + kBarW / 2), num(bars_bottom + 32),
                   "share of the step's critical path");
  for (std::size_t i = 0; i < n; ++i) s += breakdown_bar(i, *ranked[i], colors);
  if (n == 0) {
    s += fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     num(kLabelW + kBarW / 2), num(kBarsTop + kRowH / 2), "no plan was timed");
  }
  for (std::size_t k = 0; k < legend.items.size(); ++k) {
    s += legend_item(legend.at[k].first, legend.at[k].second, legend.items[k].second,
                     legend.items[k].first);
  }
  s += "</svg>\n";
  return s;
}

}  // namespace meshsim::report
