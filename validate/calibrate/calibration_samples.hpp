#pragma once
// From the measured timelines of the calibration Programs to the fitter's samples: per benchmark
// point, the robust estimate (validate/run/robust_stats.hpp) over its timed repetitions (the
// first repetition of each rank is a warm-up) — the median for compute kernels and for messages
// over kLatencyBoundBytes (throughput: the rate a step sustains), the 10th percentile for
// messages up to it (latency-bound: noise only adds time) — of
//   compute       the op's duration (every rank's repetitions pooled),
//   p2p           rank 2j's round trip (ping start to pong end) / 2,
//   collective    per repetition and group, latest end - latest start over the group's members
//                 (the collective runs once the last member joined, as the simulator has it),
// plus the median gap between back-to-back compute ops of a stream (the launch overhead) and,
// from the interference Program, the mean GEMM that ran entirely while its rank communicated
// over the median GEMM alone.
#include <nlohmann/json_fwd.hpp>

#include "schedules/calibration_programs.hpp"
#include "sim/timeline.hpp"
#include "validate/calibrate/profile_fit.hpp"
#include "validate/run/robust_stats.hpp"

namespace meshsim {

// A message up to this size is latency-bound: on the CPU backend's measured link (0.83 us +
// 7.6 GB/s, README) 8 KiB moves in about the latency itself.
inline constexpr std::int64_t kLatencyBoundBytes = 8 * 1024;

struct PointTimes {
  std::string name;
  BenchCategory category = BenchCategory::compute;
  std::vector<double> seconds;  // every timed repetition, in order
  double median_s = 0;
  MeasurementKind kind = MeasurementKind::throughput;
  double estimate_s = 0;  // the kind's estimator: what the fit uses
  double p10_s = 0, p90_s = 0;
};

// The kind of a benchmark point: latency for p2p and collectives of at most kLatencyBoundBytes,
// throughput otherwise.
MeasurementKind measurement_kind(const BenchPoint& point);

struct CalibrationRun {
  std::vector<PointTimes> points;
  CalibrationSamples samples;
};

// Adds one measured calibration Program to the run.
void add_measurements(const CalibrationProgram& program, const Timeline& measured,
                      CalibrationRun& run);

// The raw measurements (every repetition of every point) as JSON.
nlohmann::ordered_json measurements_json(const CalibrationRun& run);

}  // namespace meshsim
