#include "validate/check/timing_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/time.hpp"
#include "validate/run/microbench_stats.hpp"

namespace meshsim {
namespace {

double relative_error(Nanos predicted, Nanos measured) {
  if (measured == 0) return predicted == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return static_cast<double>(predicted - measured) / static_cast<double>(measured);
}

ErrorSummary summarize(const std::vector<OpComparison>& ops, const Program& program, bool compute) {
  ErrorSummary s;
  std::vector<double> errors;
  for (const auto& o : ops) {
    if (program.ops[static_cast<std::size_t>(o.op)].is_compute() != compute) continue;
    const double e = std::abs(o.error);
    errors.push_back(e);
    if (s.worst_op < 0 || e > s.worst) {
      s.worst = e;
      s.worst_op = o.op;
    }
  }
  std::sort(errors.begin(), errors.end());
  s.ops = static_cast<std::int64_t>(errors.size());
  s.median = nearest_rank_percentile(errors, 0.5);
  s.p90 = nearest_rank_percentile(errors, 0.9);
  return s;
}

std::string op_label(const Program& p, OpId id) {
  const Op& op = p.ops[static_cast<std::size_t>(id)];
  return fmt::format("rank {} '{}'", op.rank, op.name);
}

std::string summary_text(const Program& p, const ErrorSummary& s, const char* what) {
  if (s.ops == 0) return fmt::format("  {} ops: none\n", what);
  return fmt::format("  {} ops ({}): |error| median {:.1f}%, p90 {:.1f}%, worst {:.1f}% ({})\n",
                     what, s.ops, 100 * s.median, 100 * s.p90, 100 * s.worst,
                     op_label(p, s.worst_op));
}

nlohmann::ordered_json summary_json(const Program& p, const ErrorSummary& s) {
  nlohmann::ordered_json j = {{"ops", s.ops},
                              {"median_abs_error", s.median},
                              {"p90_abs_error", s.p90},
                              {"worst_abs_error", s.worst}};
  j["worst_op"] = s.worst_op < 0 ? nlohmann::ordered_json(nullptr)
                                 : nlohmann::ordered_json(op_label(p, s.worst_op));
  return j;
}

}  // namespace

TimingComparison compare_timings(const Program& program, const Timeline& predicted,
                                 const Timeline& measured) {
  MESHSIM_CHECK(
      predicted.ops.size() == program.ops.size() && measured.ops.size() == program.ops.size(),
      "compare_timings: both timelines must cover the Program's ops");
  TimingComparison c;
  c.predicted_makespan = predicted.makespan;
  c.measured_makespan = measured.makespan;
  c.makespan_error = relative_error(predicted.makespan, measured.makespan);
  c.ops.reserve(program.ops.size());
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Nanos p = predicted.ops[i].end - predicted.ops[i].start;
    const Nanos m = measured.ops[i].end - measured.ops[i].start;
    c.ops.push_back(OpComparison{static_cast<OpId>(i), p, m, relative_error(p, m)});
  }
  c.compute = summarize(c.ops, program, true);
  c.comm = summarize(c.ops, program, false);
  return c;
}

std::string timing_comparison_text(const Program& program, const TimingComparison& c,
                                   std::string_view rest_in, std::size_t rows) {
  std::string out = fmt::format(
      "predicted vs measured: step time predicted {:.3f} ms, measured {:.3f} ms, error {:+.1f}%\n",
      ns_to_seconds(c.predicted_makespan) * 1e3, ns_to_seconds(c.measured_makespan) * 1e3,
      100 * c.makespan_error);
  out += summary_text(program, c.compute, "compute");
  out += summary_text(program, c.comm, "comm");
  std::vector<OpComparison> longest = c.ops;
  std::stable_sort(longest.begin(), longest.end(),
                   [](const auto& a, const auto& b) { return a.measured > b.measured; });
  if (longest.size() > rows) longest.resize(rows);
  out += fmt::format("  {:>5} {:>6} {:<28} {:>13} {:>12} {:>9}\n", "rank", "op", "name",
                     "predicted_us", "measured_us", "error");
  for (const auto& o : longest) {
    const Op& op = program.ops[static_cast<std::size_t>(o.op)];
    out += fmt::format("  {:>5} {:>6} {:<28} {:>13.1f} {:>12.1f} {:>+8.1f}%\n", op.rank, o.op,
                       op.name.substr(0, 28), static_cast<double>(o.predicted) / 1e3,
                       static_cast<double>(o.measured) / 1e3, 100 * o.error);
  }
  if (c.ops.size() > longest.size()) {
    out += fmt::format("  ({} more ops in {})\n", c.ops.size() - longest.size(), rest_in);
  }
  return out;
}

nlohmann::ordered_json timing_comparison_json(const Program& program, const TimingComparison& c) {
  nlohmann::ordered_json j;
  j["predicted_makespan_s"] = ns_to_seconds(c.predicted_makespan);
  j["measured_makespan_s"] = ns_to_seconds(c.measured_makespan);
  j["makespan_error"] = c.makespan_error;
  j["compute_ops"] = summary_json(program, c.compute);
  j["comm_ops"] = summary_json(program, c.comm);
  auto ops = nlohmann::ordered_json::array();
  for (const auto& o : c.ops) {
    const Op& op = program.ops[static_cast<std::size_t>(o.op)];
    ops.push_back({{"op", o.op},
                   {"rank", op.rank},
                   {"name", op.name},
                   {"predicted_s", ns_to_seconds(o.predicted)},
                   {"measured_s", ns_to_seconds(o.measured)},
                   {"error", o.error}});
  }
  j["ops"] = std::move(ops);
  return j;
}

}  // namespace meshsim
