#include "traces/schedule_diagram.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "traces/markup.hpp"

namespace meshsim {
namespace {

enum class Box : std::uint8_t { forward, input_grad, weight_grad, backward, other };

Box box_of(const Op& op) {
  const auto* k = std::get_if<KernelCall>(&op.body);
  if (k == nullptr) return Box::other;
  if (k->kind == KernelKind::linear_bwd || k->kind == KernelKind::attention_bwd) {
    return Box::backward;
  }
  switch (op.labels.phase) {
    case Phase::fwd:
      return Box::forward;
    case Phase::bwd:
      return Box::input_grad;
    case Phase::wgrad:
      return Box::weight_grad;
    default:
      return Box::other;
  }
}

// Colors per box kind: chunk 0, then the lighter tone for other chunks.
constexpr std::array<std::array<const char*, 2>, 5> kColors = {{
    {"#4e79a7", "#a0cbe8"},  // forward
    {"#59a14f", "#8cd17d"},  // input gradient
    {"#e15759", "#ff9d9a"},  // weight gradient
    {"#b07aa1", "#d4a6c8"},  // full backward
    {"#9d9d9d", "#c8c8c8"},  // anything else
}};
constexpr std::array<const char*, 5> kNames = {"F forward", "B input gradient", "W weight gradient",
                                               "BW backward (B+W)", "other"};
constexpr std::array<char, 5> kLetters = {'F', 'B', 'W', 'X', '#'};

// A readable time with its unit.
std::string format_time(double ns) {
  if (ns >= 1e9) return fmt::format("{:.3g} s", ns * 1e-9);
  if (ns >= 1e6) return fmt::format("{:.3g} ms", ns * 1e-6);
  if (ns >= 1e3) return fmt::format("{:.3g} us", ns * 1e-3);
  return fmt::format("{:.3g} ns", ns);
}

}  // namespace

std::string schedule_svg(const Program& program, const Timeline& timeline) {
  const int ranks = program.world_size();
  std::vector<int> per_rank(static_cast<std::size_t>(ranks), 0);
  for (const auto& op : program.ops) {
    if (op.is_compute()) ++per_rank[static_cast<std::size_t>(op.rank)];
  }
  const int most = *std::max_element(per_rank.begin(), per_rank.end());
  const double plot_w = std::clamp(30.0 * most, 900.0, 8000.0);
  const double left = 78, top = 64, row_h = 30, gap = 6;
  const double height = top + ranks * (row_h + gap) + 40;
  const double width = left + plot_w + 20;
  const double span = static_cast<double>(std::max<Nanos>(timeline.makespan, 1));
  auto x_of = [&](Nanos t) { return left + plot_w * static_cast<double>(t) / span; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"Helvetica, Arial, sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height, width, height);
  svg += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                     left, markup_escape(program.description));
  svg += fmt::format("<text x=\"{}\" y=\"38\" font-size=\"12\">makespan {}</text>\n", left,
                     format_time(span));
  double lx = left + 200;
  for (std::size_t k = 0; k + 1 < kNames.size(); ++k) {
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"28\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.1f}\" "
        "y=\"38\" font-size=\"12\">{}</text>\n",
        lx, kColors[k][0], lx + 16, kNames[k]);
    lx += 150;
  }
  for (int r = 0; r < ranks; ++r) {
    const double y = top + r * (row_h + gap);
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"#f4f4f4\"/>\n"
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"13\" text-anchor=\"end\">rank {}</text>\n",
        left, y, plot_w, row_h, left - 8, y + row_h * 0.65, r);
  }
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (!op.is_compute()) continue;
    const auto& t = timeline.ops[i];
    const Box b = box_of(op);
    const double x0 = x_of(t.start), x1 = x_of(t.end);
    const double y = top + op.rank * (row_h + gap);
    const char* fill = kColors[static_cast<std::size_t>(b)][op.labels.chunk > 0 ? 1 : 0];
    svg += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" "
        "stroke=\"white\" stroke-width=\"0.8\"><title>{} ({} .. {})</title></rect>\n",
        x0, y, std::max(x1 - x0, 0.5), row_h, fill, markup_escape(op.name),
        format_time(static_cast<double>(t.start)), format_time(static_cast<double>(t.end)));
    if (op.labels.microbatch >= 0 && x1 - x0 >= 9) {
      const double size = std::min(12.0, (x1 - x0) * 0.55);
      svg += fmt::format(
          "<text x=\"{:.2f}\" y=\"{:.1f}\" font-size=\"{:.1f}\" fill=\"white\" "
          "text-anchor=\"middle\">{}</text>\n",
          (x0 + x1) / 2, y + row_h / 2 + size * 0.35, size, op.labels.microbatch);
    }
  }
  const double axis_y = top + ranks * (row_h + gap) + 4;
  svg +=
      fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"black\"/>\n",
                  left, axis_y, left + plot_w, axis_y);
  for (int k = 0; k <= 10; ++k) {
    const double x = left + plot_w * k / 10.0;
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"black\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
        x, axis_y, x, axis_y + 5, x, axis_y + 18, format_time(span * k / 10.0));
  }
  svg += "</svg>\n";
  return svg;
}

std::string schedule_text(const Program& program, const Timeline& timeline, int width) {
  const int ranks = program.world_size();
  const auto cols = static_cast<std::size_t>(std::max(width, 10));
  const double span = static_cast<double>(std::max<Nanos>(timeline.makespan, 1));
  std::vector<std::string> rows(static_cast<std::size_t>(ranks), std::string(cols, '.'));
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (!op.is_compute()) continue;
    const auto& t = timeline.ops[i];
    // Columns whose midpoint falls inside the op.
    const auto c0 = static_cast<std::size_t>(
        std::clamp(std::ceil(static_cast<double>(t.start) / span * static_cast<double>(cols) - 0.5),
                   0.0, static_cast<double>(cols)));
    const auto c1 = static_cast<std::size_t>(
        std::clamp(std::ceil(static_cast<double>(t.end) / span * static_cast<double>(cols) - 0.5),
                   0.0, static_cast<double>(cols)));
    char letter = kLetters[static_cast<std::size_t>(box_of(op))];
    if (op.labels.chunk > 0) letter = static_cast<char>(letter - 'A' + 'a');
    auto& row = rows[static_cast<std::size_t>(op.rank)];
    for (std::size_t c = c0; c < c1; ++c) row[c] = letter;
    const std::string label = op.labels.microbatch >= 0 ? std::to_string(op.labels.microbatch) : "";
    if (c1 > c0 + label.size()) row.replace(c0 + 1, label.size(), label);
  }
  std::string out = fmt::format(
      "schedule (F forward, B input gradient, W weight gradient, X full backward; lower case: "
      "second chunk; digits: microbatch; one column = {})\n",
      format_time(span / static_cast<double>(cols)));
  for (int r = 0; r < ranks; ++r) {
    out += fmt::format("rank {:>3} |{}|\n", r, rows[static_cast<std::size_t>(r)]);
  }
  return out;
}

}  // namespace meshsim
