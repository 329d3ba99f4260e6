#include "tools/report_html.hpp"
#include "traces/markup.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "tools/report_pareto.hpp"
#include "tools/report_svg.hpp"
#include "tools/report_sweep.hpp"

namespace meshsim {
namespace {

using report::grouped;
using report::integer;
using report::num;
using report::percent;
using report::Row;
using report::seconds;
using report::Sweep;

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
    t += fmt::format("<td>{}</td><td>{}</td><td class=\"n\">{}</td>", markup_escape(r.schedule),
                     markup_escape(r.cp_variant), r.microbatches);
    if (r.oom) {
      t += "<td class=\"n oom-mark\">OOM</td><td class=\"n\">&ndash;</td>"
           "<td class=\"n\">&ndash;</td>";
    } else {
      t += fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                       seconds(r.step_time_s), grouped(r.tokens_per_s), percent(r.mfu));
    }
    t += fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
                     num(r.mem_gb), r.peak_rank, markup_escape(r.critical_path));
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

namespace {

// The page of sweep `s`; with `scaling` (sweeps of the same model at other GPU counts, `s` among
// them) also the step time vs GPUs chart.
std::string page_html(const Sweep& s, std::string_view origin, const std::vector<Sweep>& scaling) {
  const std::vector<const Row*> ranked = report::ranked_rows(s);
  std::size_t ooms = 0;
  for (const auto& r : s.rows) ooms += r.oom ? 1 : 0;
  const std::string title =
      fmt::format("meshsim sweep: {} on {} x {}", s.model, integer(s.gpus), s.hardware);

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += "<meta name=\"generator\" content=\"meshsim report\">\n";
  h += fmt::format("<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n", markup_escape(title),
                   kStyle);
  h += fmt::format("<h1>{}</h1>\n", markup_escape(title));
  h += fmt::format("<p class=\"source\">from {}</p>\n", markup_escape(origin));
  auto opt = [](const std::optional<std::int64_t>& v) {
    return v ? integer(*v) : std::string("&ndash;");
  };
  h += "<dl class=\"summary\">\n";
  h += fmt::format("<dt>model</dt><dd>{}</dd><dt>hardware</dt><dd>{}</dd>\n",
                   markup_escape(s.model), markup_escape(s.hardware));
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
        markup_escape(b.label), seconds(b.step_time_s), percent(b.mfu), grouped(b.tokens_per_s),
        num(b.mem_gb));
  } else {
    h += "<p class=\"best\">no plan fits in memory</p>\n";
  }
  h += "<h2>Step time</h2>\n" + report::step_time_svg(ranked);
  h += "<h2>Memory per GPU</h2>\n" + report::memory_svg(s);
  h += "<h2>Pareto frontier: step time vs memory per GPU</h2>\n" + report::pareto_memory_svg(s);
  if (scaling.size() > 1) {
    h += "<h2>Pareto frontier: step time vs GPUs</h2>\n" + report::pareto_gpus_svg(scaling);
  }
  h += "<h2>Where the time goes: the five fastest plans</h2>\n" + report::breakdown_svg(ranked);
  h += fmt::format("<h2>Top {} plans</h2>\n", std::min<std::size_t>(s.rows.size(), 20));
  h += table_html(ranked, s);
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace

std::string sweep_report_html(const nlohmann::json& sweep, std::string_view origin) {
  return page_html(report::parse_sweep(sweep, origin), origin, {});
}

std::string sweep_report_html(const std::vector<std::pair<nlohmann::json, std::string>>& sweeps) {
  MESHSIM_CHECK(!sweeps.empty(), "sweep_report_html: no sweep");
  std::vector<Sweep> parsed;
  for (const auto& [json, origin] : sweeps) {
    parsed.push_back(report::parse_sweep(json, origin));
    if (parsed.back().model != parsed.front().model) {
      throw InputError(fmt::format(
          "report: {} is a sweep of {}, {} of {}: several results files must sweep one model "
          "(at different GPU counts)",
          sweeps.front().second, parsed.front().model, origin, parsed.back().model));
    }
  }
  return page_html(parsed.front(), sweeps.front().second, parsed);
}

}  // namespace meshsim
