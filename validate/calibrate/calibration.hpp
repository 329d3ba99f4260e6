#pragma once
// One calibration on every rank of a RunWorld (ARCHITECTURE.md §5): run each calibration Program
// through the validation driver (the backend's executor, kernels on scratch operands, real
// communication), collect the measured timelines on rank 0, turn them into samples and fit the
// profile there.
#include <chrono>
#include <functional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "schedules/calibration_programs.hpp"
#include "sim/hardware_profile.hpp"
#include "validate/calibrate/calibration_samples.hpp"
#include "validate/calibrate/profile_fit.hpp"
#include "validate/run/run_world.hpp"

namespace meshsim {

struct CalibrateRequest {
  CalibrationOptions options;  // world_size and ranks_per_node are taken from the world
  HardwareProfile base;        // what the measurements cannot determine
  std::string name = "cpu-calibrated";
  double memory_bytes = 0;  // per rank; 0: the base profile's
  std::chrono::milliseconds stall_timeout{300000};
};

struct CalibrationResult {
  bool root = false;  // rank 0: run and fit are filled
  CalibrationRun run;
  ProfileFit fit;
  int world_size = 1;
  int ranks_per_node = 1;
};

// `checkpoint` (when set) is called on every rank with "start" before the first Program and
// "after <category>" after each (the stability probe's checkpoints).
CalibrationResult run_calibration(
    RunWorld& world, const CalibrateRequest& request,
    const std::function<void(const std::string& phase)>& checkpoint = {});

// The fit of a finished run (rank 0): the fitted profile, named, with the world's ranks per node
// as its GPUs per node. Shared by every backend.
CalibrationResult fit_calibration(CalibrationRun run, const CalibrateRequest& request,
                                  int world_size, int ranks_per_node);

// What was measured and how, for the report and the measurements file.
std::string calibration_method(const CalibrationResult& result, const CalibrateRequest& request);

// The measurements file: schema version, method, every repetition of every point, the fit.
nlohmann::ordered_json calibration_measurements_json(const CalibrationResult& result,
                                                     const CalibrateRequest& request);

inline constexpr int kCalibrationSchemaVersion = 1;

}  // namespace meshsim
