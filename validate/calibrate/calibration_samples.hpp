#pragma once
// From the measured timelines of the calibration Programs to the fitter's samples: per benchmark
// point, the median over its timed repetitions (the first repetition of each rank is a warm-up)
// of
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

namespace meshsim {

struct PointTimes {
  std::string name;
  BenchCategory category = BenchCategory::compute;
  std::vector<double> seconds;  // every timed repetition, in order
  double median_s = 0;
};

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
