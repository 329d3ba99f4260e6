#include "validate/check/measured_report.hpp"

#include "sim/intervals.hpp"
#include "sim/step_metrics.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#ifndef MESHSIM_VERSION
#define MESHSIM_VERSION "unknown"
#endif

namespace meshsim {
namespace {

double ms(Nanos ns) {
  return static_cast<double>(ns) * 1e-6;
}

}  // namespace

std::vector<MeasuredRankStats> measured_rank_stats(const Program& program,
                                                   const Timeline& timeline) {
  const auto world = static_cast<std::size_t>(program.world_size());
  std::vector<MeasuredRankStats> out(world);
  std::vector<std::vector<Interval>> compute(world), comm(world);
  for (const Op& op : program.ops) {
    const auto r = static_cast<std::size_t>(op.rank);
    const OpTiming& t = timeline.ops[static_cast<std::size_t>(op.id)];
    (op.is_compute() ? compute : comm)[r].emplace_back(t.start, t.end);
    ++out[r].ops;
    out[r].end = std::max(out[r].end, t.end);
  }
  for (std::size_t r = 0; r < world; ++r) {
    const auto c = merge_intervals(compute[r]);
    const auto m = merge_intervals(comm[r]);
    std::vector<Interval> both = c;
    both.insert(both.end(), m.begin(), m.end());
    out[r].rank = static_cast<int>(r);
    out[r].compute = total_length(c);
    out[r].comm = total_length(m);
    out[r].exposed_comm = total_length(subtract_intervals(m, c));
    out[r].idle = timeline.makespan - total_length(merge_intervals(both));
  }
  return out;
}

std::string measured_report_text(const Program& program, const Timeline& timeline,
                                 const ValidateRunInfo& info) {
  std::string out = fmt::format("measured: {}\n", program.description);
  out += fmt::format("backend {}; kernels: {}; seed {}\n", info.backend, info.kernels, info.seed);
  out +=
      fmt::format("step time {:.3f} ms (barrier to the last completion)\n", ms(timeline.makespan));
  out += fmt::format("{:>5} {:>6} {:>11} {:>11} {:>12} {:>10} {:>10} {:>10}\n", "rank", "ops",
                     "compute_ms", "comm_ms", "exposed_ms", "idle_ms", "end_ms", "memory_MB");
  for (const auto& s : measured_rank_stats(program, timeline)) {
    const auto r = static_cast<std::size_t>(s.rank);
    const double mb = r < info.memory_bytes.size()
                          ? static_cast<double>(info.memory_bytes[r]) / (1024.0 * 1024.0)
                          : 0.0;
    out += fmt::format("{:>5} {:>6} {:>11.3f} {:>11.3f} {:>12.3f} {:>10.3f} {:>10.3f} {:>10.1f}\n",
                       s.rank, s.ops, ms(s.compute), ms(s.comm), ms(s.exposed_comm), ms(s.idle),
                       ms(s.end), mb);
  }
  const TimeBreakdown b = time_breakdown(program, timeline, timeline.makespan);
  out += fmt::format("time per rank  compute {:.3f} ms, exposed comm:", 1e3 * b.compute);
  for (std::size_t d = 0; d < std::size(kCommDims); ++d) {
    out += fmt::format("{} {} {:.3f} ms", d == 0 ? "" : ",", kCommDims[d], 1e3 * b.exposed[d]);
  }
  out += fmt::format("; idle {:.3f} ms (mean over ranks)\n", 1e3 * b.bubble);
  if (!info.numerics) {
    out += fmt::format("numerics: {}\n", info.numerics_note);
    return out;
  }
  return out + numerics_text(*info.numerics, info.numerics_note);
}

std::string numerics_text(const NumericsReport& numerics, const std::string& reference) {
  std::size_t width = 8;
  for (const auto& t : numerics.tensors) width = std::max(width, t.tensor.size());
  std::string out =
      fmt::format("numerics against {}: {}\n", reference, numerics.pass ? "PASS" : "FAIL");
  out += fmt::format("  {:<{}} {:<6} {:>12} {:>12} {:>10}  {}\n", "tensor", width, "dtype",
                     "max_abs_err", "max_rel_err", "tolerance", "result");
  for (const auto& t : numerics.tensors) {
    out += fmt::format("  {:<{}} {:<6} {:>12.3e} {:>12.3e} {:>10.1e}  {}\n", t.tensor, width,
                       to_string(t.dtype), t.max_abs_error, t.max_rel_error, t.tolerance,
                       t.pass ? "PASS" : "FAIL");
  }
  return out;
}

nlohmann::ordered_json numerics_json(const NumericsReport& numerics, const std::string& reference) {
  auto tensors = nlohmann::ordered_json::array();
  for (const auto& t : numerics.tensors) {
    tensors.push_back({{"tensor", t.tensor},
                       {"dtype", to_string(t.dtype)},
                       {"max_abs_error", t.max_abs_error},
                       {"max_rel_error", t.max_rel_error},
                       {"tolerance", t.tolerance},
                       {"pass", t.pass}});
  }
  return {{"reference", reference}, {"pass", numerics.pass}, {"tensors", tensors}};
}

nlohmann::ordered_json measured_report_json(const Program& program, const Timeline& timeline,
                                            const ValidateRunInfo& info) {
  nlohmann::ordered_json j;
  j["schema_version"] = kValidateReportSchemaVersion;
  j["meshsim_version"] = MESHSIM_VERSION;
  j["source"] = "measured";
  j["command"] = info.command_line;
  j["program"] = program.description;
  j["single_queue"] = program.single_queue;
  j["backend"] = info.backend;
  j["kernels"] = info.kernels;
  j["seed"] = info.seed;
  j["makespan_s"] = ns_to_seconds(timeline.makespan);
  auto ranks = nlohmann::ordered_json::array();
  for (const auto& s : measured_rank_stats(program, timeline)) {
    const auto r = static_cast<std::size_t>(s.rank);
    ranks.push_back({{"rank", s.rank},
                     {"ops", s.ops},
                     {"compute_s", ns_to_seconds(s.compute)},
                     {"comm_s", ns_to_seconds(s.comm)},
                     {"exposed_comm_s", ns_to_seconds(s.exposed_comm)},
                     {"idle_s", ns_to_seconds(s.idle)},
                     {"end_s", ns_to_seconds(s.end)},
                     {"memory_bytes", r < info.memory_bytes.size() ? info.memory_bytes[r] : 0}});
  }
  j["ranks"] = ranks;
  // Exposed communication per mesh dimension (the group's, sim/step_metrics), as `meshsim step`
  // reports it for a simulated timeline.
  const TimeBreakdown b = time_breakdown(program, timeline, timeline.makespan);
  nlohmann::ordered_json breakdown;
  breakdown["compute_s"] = b.compute;
  for (std::size_t d = 0; d < std::size(kCommDims); ++d) {
    breakdown[fmt::format("exposed_{}_comm_s", kCommDims[d])] = b.exposed[d];
  }
  breakdown["idle_s"] = b.bubble;
  breakdown["averaged_over"] = "measured ranks";
  j["breakdown"] = breakdown;
  if (info.numerics) {
    j["numerics"] = numerics_json(*info.numerics, info.numerics_note);
  } else {
    j["numerics"] = nullptr;
    j["numerics_note"] = info.numerics_note;
  }
  j["wall_s"] = info.wall_s;
  return j;
}

}  // namespace meshsim
