#include "tools/report_pareto.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "tools/report_svg_parts.hpp"

namespace meshsim::report {
namespace {

constexpr const char* kFrontierColor = kBestColor;
constexpr const char* kDominatedBest = "#9c755f";
constexpr std::size_t kMaxLabels = 8;

struct Tick {
  double x = 0;  // pixels
  std::string label;
};

// A plot of step time (y, from 0) over an x axis whose ticks the caller places: the frame of a
// value-over-plans plot with no plan slots, and these ticks.
Frame scatter_frame(std::string_view id, std::string_view aria, double y_max,
                    const std::vector<Tick>& x_ticks, std::string_view x_title) {
  Frame f = frame(id, aria, y_max, 0, x_title, "step time (s)");
  const double y_base = kTop + f.plot_h();
  for (const Tick& t : x_ticks) {
    f.svg += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n",
                         num(t.x), num(y_base), num(t.x), num(y_base + 5));
    f.svg +=
        fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                    num(t.x), num(y_base + 19), markup_escape(t.label));
  }
  return f;
}

std::string dot(double x, double y, double r, const char* color, std::string_view css_class,
                const std::string& tip) {
  return fmt::format(
      "<circle class=\"{}\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"><title>{}</title></circle>\n",
      css_class, num(x), num(y), num(r), color, markup_escape(tip));
}

std::string frontier_line(const std::vector<std::pair<double, double>>& points) {
  if (points.size() < 2) return {};
  std::string pts;
  for (const auto& [x, y] : points)
    pts += fmt::format("{}{},{}", pts.empty() ? "" : " ", num(x), num(y));
  return fmt::format(
      "<polyline class=\"frontier\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
      "stroke-width=\"1.5\"/>\n",
      pts, kFrontierColor);
}

// A label beside a point, kept inside the plot; `below` puts it under the point (neighbouring
// labels alternate so that close points do not print over each other).
std::string point_label(double x, double y, const std::string& text, bool below = false) {
  const bool left = x + 8 + text_width(text) > kWidth - kRight;
  return fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text>\n",
                     num(left ? x - 8 : x + 8), num(below ? y + 16 : y - 6), left ? "end" : "start",
                     markup_escape(text));
}

// Legend items left to right, each after the previous one's text.
std::string legend_row(const std::vector<std::pair<const char*, std::string>>& items) {
  std::string s;
  double x = kLeft + 10;
  for (const auto& [color, text] : items) {
    s += legend_item(x, 10, color, text, color == nullptr);
    x += 18 + text_width(text) + 22;
  }
  return s;
}

std::string plan_tip(const Row& r) {
  return fmt::format("{}: {}, {} GB per GPU, MFU {}", r.label, seconds(r.step_time_s),
                     num(r.mem_gb), percent(r.mfu));
}

std::string note(const Frame& f, std::string_view text) {
  return fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     num(kLeft + f.plot_w() / 2), num(kTop + f.plot_h() / 2), markup_escape(text));
}

}  // namespace

std::vector<std::size_t> memory_frontier(const std::vector<Row>& rows) {
  std::vector<std::size_t> timed;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].timed) timed.push_back(i);
  }
  std::stable_sort(timed.begin(), timed.end(), [&](std::size_t a, std::size_t b) {
    return std::pair(rows[a].mem_gb, rows[a].step_time_s) <
           std::pair(rows[b].mem_gb, rows[b].step_time_s);
  });
  std::vector<std::size_t> frontier;
  double best = std::numeric_limits<double>::infinity();
  for (const std::size_t i : timed) {
    if (rows[i].step_time_s < best) {
      best = rows[i].step_time_s;
      frontier.push_back(i);
    }
  }
  return frontier;
}

std::string pareto_memory_svg(const Sweep& s) {
  double max_gb = s.capacity_gb.value_or(0), max_t = 0;
  for (const auto& r : s.rows) {
    if (!r.timed) continue;
    max_gb = std::max(max_gb, r.mem_gb);
    max_t = std::max(max_t, r.step_time_s);
  }
  const Axis x_axis = nice_axis(max_gb);
  const double plot_w = kWidth - kLeft - kRight;
  auto px = [&](double gb) { return kLeft + plot_w * std::clamp(gb / x_axis.top, 0.0, 1.0); };
  std::vector<Tick> ticks;
  for (int k = 0; k <= x_axis.ticks(); ++k) {
    ticks.push_back({px(x_axis.step * k), fmt::format("{:g}", x_axis.step * k)});
  }
  Frame f = scatter_frame("pareto-memory",
                          "Step time against peak memory per GPU, the Pareto frontier marked",
                          max_t, ticks, "peak memory per GPU (GB)");
  const std::vector<std::size_t> frontier = memory_frontier(s.rows);
  for (const auto& r : s.rows) {
    if (r.timed)
      f.svg += dot(px(r.mem_gb), f.y_of(r.step_time_s), 3, kBarColor, "plan", plan_tip(r));
  }
  std::vector<std::pair<double, double>> line;
  for (const std::size_t i : frontier)
    line.emplace_back(px(s.rows[i].mem_gb), f.y_of(s.rows[i].step_time_s));
  f.svg += frontier_line(line);
  for (std::size_t k = 0; k < frontier.size(); ++k) {
    const Row& r = s.rows[frontier[k]];
    f.svg += dot(line[k].first, line[k].second, 4.5, kFrontierColor, "frontier", plan_tip(r));
    if (frontier.size() <= kMaxLabels || k == 0 || k + 1 == frontier.size()) {
      f.svg += point_label(line[k].first, line[k].second, r.label, k % 2 == 1);
    }
  }
  if (frontier.empty()) f.svg += note(f, "no plan fits in memory: nothing was timed");
  std::vector<std::pair<const char*, std::string>> legend = {
      {kBarColor, "plan that fits"},
      {kFrontierColor, "Pareto frontier (no plan faster and smaller)"}};
  if (s.capacity_gb) {
    const double x = px(*s.capacity_gb);
    const std::string text = fmt::format("{} memory: {} GB", s.hardware, num(*s.capacity_gb));
    f.svg += fmt::format(
        "<line class=\"capacity\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"><title>{}</title>"
        "</line>\n",
        num(x), num(kTop), num(x), num(kTop + f.plot_h()), markup_escape(text));
    legend.emplace_back(nullptr, text);
  }
  f.svg += legend_row(legend);
  f.svg += "</svg>\n";
  return f.svg;
}

std::string pareto_gpus_svg(const std::vector<Sweep>& sweeps) {
  std::vector<const Sweep*> order;
  for (const auto& s : sweeps) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(),
                   [](const Sweep* a, const Sweep* b) { return a->gpus < b->gpus; });
  double max_t = 0;
  for (const Sweep* s : order) {
    for (const auto& r : s->rows) {
      if (r.timed) max_t = std::max(max_t, r.step_time_s);
    }
  }
  const double plot_w = kWidth - kLeft - kRight;
  const double slot_w = plot_w / static_cast<double>(std::max<std::size_t>(order.size(), 1));
  auto px = [&](std::size_t i) { return kLeft + slot_w * (static_cast<double>(i) + 0.5); };
  std::vector<Tick> ticks;
  for (std::size_t i = 0; i < order.size(); ++i) ticks.push_back({px(i), integer(order[i]->gpus)});
  Frame f = scatter_frame("pareto-gpus", "Step time against GPUs: every plan and each count's best",
                          max_t, ticks, "GPUs");
  std::vector<std::pair<double, double>> line;
  double best_so_far = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::vector<const Row*> ranked = ranked_rows(*order[i]);
    for (const Row* r : ranked) {
      f.svg += dot(px(i), f.y_of(r->step_time_s), 3, kBarColor, "plan",
                   fmt::format("{} GPUs, {}", integer(order[i]->gpus), plan_tip(*r)));
    }
    if (ranked.empty()) continue;
    const Row& best = *ranked.front();
    const bool on_frontier = best.step_time_s < best_so_far;
    best_so_far = std::min(best_so_far, best.step_time_s);
    const double y = f.y_of(best.step_time_s);
    if (on_frontier) line.emplace_back(px(i), y);
    f.svg += dot(px(i), y, 4.5, on_frontier ? kFrontierColor : kDominatedBest,
                 on_frontier ? "frontier" : "dominated",
                 fmt::format("fastest on {} GPUs: {}", integer(order[i]->gpus), plan_tip(best)));
    f.svg += point_label(px(i), y, fmt::format("{} ({})", best.label, seconds(best.step_time_s)),
                         i % 2 == 1);
  }
  f.svg += frontier_line(line);
  if (max_t == 0) f.svg += note(f, "no plan fits in memory: nothing was timed");
  f.svg += legend_row({{kBarColor, "plan that fits"},
                       {kFrontierColor, "fastest, on the frontier"},
                       {kDominatedBest, "fastest, beaten by fewer GPUs"}});
  f.svg += "</svg>\n";
  return f.svg;
}

}  // namespace meshsim::report
