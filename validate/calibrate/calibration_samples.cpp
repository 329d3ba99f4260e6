#include "validate/calibrate/calibration_samples.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/network_analytical.hpp"
#include "validate/run/microbench_stats.hpp"

namespace meshsim {
namespace {

double seconds_between(Nanos from, Nanos to) {
  return static_cast<double>(to - from) * 1e-9;
}

const OpTiming& timing(const Timeline& tl, OpId op) {
  return tl.ops.at(static_cast<std::size_t>(op));
}

// Repetitions of a point per rank, in order: ops are listed repetition-major.
std::map<int, std::vector<OpId>> ops_by_rank(const Program& p, const BenchPoint& point) {
  std::map<int, std::vector<OpId>> out;
  for (OpId op : point.ops) out[p.ops[static_cast<std::size_t>(op)].rank].push_back(op);
  return out;
}

std::vector<double> compute_times(const Program& p, const BenchPoint& point, const Timeline& tl) {
  std::vector<double> s;
  for (const auto& [rank, ops] : ops_by_rank(p, point)) {
    for (std::size_t i = 1; i < ops.size(); ++i) {
      s.push_back(seconds_between(timing(tl, ops[i]).start, timing(tl, ops[i]).end));
    }
  }
  return s;
}

// Rank a's ops alternate ping (send), pong (receive).
std::vector<double> p2p_times(const Program& p, const BenchPoint& point, const Timeline& tl) {
  std::vector<double> s;
  for (const auto& [rank, ops] : ops_by_rank(p, point)) {
    for (std::size_t i = 2; i + 1 < ops.size(); i += 2) {
      s.push_back(0.5 * seconds_between(timing(tl, ops[i]).start, timing(tl, ops[i + 1]).end));
    }
  }
  return s;
}

std::vector<double> collective_times(const Program& p, const BenchPoint& point,
                                     const Timeline& tl) {
  // ops: repetition-major, rank-minor, every rank of the world once per repetition.
  const int world = p.world_size();
  const int g = point.group_size;
  const std::size_t reps = point.ops.size() / static_cast<std::size_t>(world);
  std::vector<double> s;
  for (std::size_t rep = 1; rep < reps; ++rep) {
    for (int first = 0; first < world; first += g) {
      Nanos start = 0, end = 0;
      for (int r = first; r < first + g; ++r) {
        const auto& t = timing(
            tl, point.ops[rep * static_cast<std::size_t>(world) + static_cast<std::size_t>(r)]);
        start = std::max(start, t.start);
        end = std::max(end, t.end);
      }
      s.push_back(seconds_between(start, end));
    }
  }
  return s;
}

// GEMMs whose whole run lay inside one of their rank's communication ops.
std::vector<double> under_comm_times(const Program& p, const BenchPoint& point,
                                     const Timeline& tl) {
  std::map<int, std::vector<std::pair<Nanos, Nanos>>> comm;
  for (const auto& op : p.ops) {
    if (!op.is_compute()) {
      const auto& t = timing(tl, op.id);
      comm[op.rank].push_back({t.start, t.end});
    }
  }
  std::vector<double> s;
  for (OpId op : point.ops) {
    const auto& t = timing(tl, op);
    const int rank = p.ops[static_cast<std::size_t>(op)].rank;
    Nanos covered_until = t.start;
    auto& windows = comm[rank];
    std::sort(windows.begin(), windows.end());
    for (const auto& [a, b] : windows) {
      if (a <= covered_until && b > covered_until) covered_until = b;
    }
    if (covered_until >= t.end) s.push_back(seconds_between(t.start, t.end));
  }
  return s;
}

// Median gap between consecutive compute ops on one stream of one rank.
std::vector<double> launch_gaps(const Program& p, const Timeline& tl) {
  std::map<std::pair<int, StreamId>, OpId> last;
  std::vector<double> gaps;
  for (const auto& op : p.ops) {
    if (!op.is_compute()) continue;
    const auto key = std::make_pair(op.rank, op.stream);
    if (auto it = last.find(key); it != last.end()) {
      const Nanos gap = timing(tl, op.id).start - timing(tl, it->second).end;
      if (gap >= 0) gaps.push_back(static_cast<double>(gap) * 1e-9);
    }
    last[key] = op.id;
  }
  return gaps;
}

}  // namespace

MeasurementKind measurement_kind(const BenchPoint& point) {
  std::int64_t bytes = -1;
  if (const auto* p = std::get_if<P2PCall>(&point.body); p && !p->sends.empty()) {
    bytes = p->sends.front().bytes;
  } else if (const auto* c = std::get_if<CollectiveCall>(&point.body)) {
    bytes = c->bytes;
  }
  const bool comm =
      point.category == BenchCategory::p2p || point.category == BenchCategory::collective;
  return comm && bytes >= 0 && bytes <= kLatencyBoundBytes ? MeasurementKind::latency
                                                           : MeasurementKind::throughput;
}

void add_measurements(const CalibrationProgram& cp, const Timeline& tl, CalibrationRun& run) {
  const Program& p = cp.program;
  MESHSIM_CHECK(tl.ops.size() == p.ops.size(), "calibration: timeline does not match its Program");
  double alone = 0, under = 0;
  for (const auto& point : cp.points) {
    PointTimes times{point.name, point.category, {}, 0, measurement_kind(point), 0, 0, 0};
    switch (point.category) {
      case BenchCategory::compute:
        times.seconds = compute_times(p, point, tl);
        break;
      case BenchCategory::p2p:
        times.seconds = p2p_times(p, point, tl);
        break;
      case BenchCategory::collective:
        times.seconds = collective_times(p, point, tl);
        break;
      case BenchCategory::interference:
        times.seconds = point.name.ends_with("alone") ? compute_times(p, point, tl)
                                                      : under_comm_times(p, point, tl);
        break;
    }
    if (!times.seconds.empty()) {
      const RobustSummary summary = summarize(times.seconds, times.kind);
      times.median_s = median_seconds(times.seconds);
      times.estimate_s = summary.estimate;
      times.p10_s = summary.p10;
      times.p90_s = summary.p90;
    }
    if (times.estimate_s <= 0) {
      run.points.push_back(std::move(times));
      continue;  // nothing usable (no GEMM ran entirely under communication)
    }
    switch (point.category) {
      case BenchCategory::compute:
        run.samples.compute.push_back(
            {point.name, std::get<KernelCall>(point.body), times.estimate_s});
        break;
      case BenchCategory::p2p:
        run.samples.comm.push_back(
            {point.name, point.body, placement_of(p.mesh, {0, 1}), times.estimate_s});
        break;
      case BenchCategory::collective: {
        std::vector<int> members(static_cast<std::size_t>(point.group_size));
        for (int r = 0; r < point.group_size; ++r) members[static_cast<std::size_t>(r)] = r;
        run.samples.comm.push_back(
            {point.name, point.body, placement_of(p.mesh, members), times.estimate_s});
        break;
      }
      case BenchCategory::interference:
        // Alone: the median. Under communication the times are bimodal (the GEMM shared its
        // core with a busy comm thread, or not): their mean is the expected slow-down.
        if (point.name.ends_with("alone")) {
          alone = times.median_s;
        } else {
          for (double t : times.seconds) under += t / static_cast<double>(times.seconds.size());
        }
        break;
    }
    run.points.push_back(std::move(times));
  }
  if (cp.category == BenchCategory::compute) {
    const std::vector<double> gaps = launch_gaps(p, tl);
    if (!gaps.empty()) run.samples.launch_gap_s = median_seconds(gaps);
  }
  if (alone > 0 && under > 0) run.samples.interference = under / alone;
}

nlohmann::ordered_json measurements_json(const CalibrationRun& run) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& t : run.points) {
    j.push_back({{"name", t.name},
                 {"category", to_string(t.category)},
                 {"median_s", t.median_s},
                 {"estimator", estimator_name(t.kind)},
                 {"estimate_s", t.estimate_s},
                 {"p10_s", t.p10_s},
                 {"p90_s", t.p90_s},
                 {"repeats", t.seconds.size()},
                 {"seconds", t.seconds}});
  }
  return j;
}

}  // namespace meshsim
