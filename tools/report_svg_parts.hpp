#pragma once
// The pieces the SVG charts of `meshsim report` share (tools/report_svg.cpp,
// tools/report_pareto.cpp): round axes, the frame of a value-over-plans plot, the palette and
// legend items. Plain SVG strings sized for the page's 960-pixel column.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "tools/report_sweep.hpp"
#include "traces/markup.hpp"

namespace meshsim::report {

// Round axis limits: the top and the tick step (1, 2 or 5 x 10^k), about five ticks.
struct Axis {
  double top = 1;
  double step = 0.2;
  int ticks() const { return static_cast<int>(std::lround(top / step)); }
};

inline Axis nice_axis(double max_value) {
  if (!(max_value > 1e-200) || !std::isfinite(max_value)) max_value = 1;
  const double raw = max_value / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * magnitude;
  const double top = std::max(1.0, std::ceil(max_value / step - 1e-9)) * step;
  return {top, step};
}

// Integer tick step along a plan axis of n slots: 1, 2, 5, 10, ... with at most ~10 labels.
inline std::size_t slot_tick_step(std::size_t n) {
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

inline std::string svg_open(std::string_view id, double height, std::string_view label) {
  return fmt::format(
      "<svg class=\"plot\" id=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" "
      "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">\n",
      id, num(kWidth), num(height), num(kWidth), num(height), markup_escape(label));
}

// Gridlines, tick labels and axis titles of a value-over-plans plot.
inline Frame frame(std::string_view id, std::string_view aria, double max_value, std::size_t slots,
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
                   num(x0 + f.plot_w() / 2), num(kHeight - 14), markup_escape(x_title));
  s += fmt::format(
      "<text class=\"title\" x=\"18\" y=\"{}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 18 {})\">{}</text>\n",
      num(kTop + f.plot_h() / 2), num(kTop + f.plot_h() / 2), markup_escape(y_title));
  return f;
}

inline std::string legend_item(double x, double y, const char* color, std::string_view text,
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
                   markup_escape(text));
  return s;
}

// Legend text width estimate (no font metrics without a browser).
inline double text_width(std::string_view text) {
  return 7.0 * static_cast<double>(text.size());
}

}  // namespace meshsim::report
