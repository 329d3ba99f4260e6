#include "validate/calibrate/calibration.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/comm_plan.hpp"
#include "validate/cpu/shape_kernels.hpp"
#include "validate/run/validate_driver.hpp"

namespace meshsim {

CalibrationResult run_calibration(RunWorld& world, const CalibrateRequest& request,
                                  const std::function<void(const std::string& phase)>& checkpoint) {
  CalibrationResult result;
  result.world_size = world.size();
  result.ranks_per_node = world.ranks_per_node();
  CalibrationOptions options = request.options;
  options.world_size = result.world_size;
  options.ranks_per_node = result.ranks_per_node;
  ValidateOptions run_options;
  run_options.stall_timeout = request.stall_timeout;
  run_options.make_kernels = [](TensorStore&) -> std::unique_ptr<KernelRunner> {
    return std::make_unique<ShapeKernelRunner>();
  };
  if (checkpoint) checkpoint("start");
  for (const auto& cp : calibration_programs(options)) {
    const CommPlan plan = validate_program(cp.program);
    const ValidateResult measured =
        run_validation(cp.program, plan, TensorLayout{}, world, run_options);
    if (measured.root) add_measurements(cp, measured.timeline, result.run);
    if (checkpoint) checkpoint(fmt::format("after {}", to_string(cp.category)));
  }
  if (world.rank() != 0) return result;
  return fit_calibration(std::move(result.run), request, result.world_size, result.ranks_per_node);
}

CalibrationResult fit_calibration(CalibrationRun run, const CalibrateRequest& request,
                                  int world_size, int ranks_per_node) {
  CalibrationResult result;
  result.root = true;
  result.world_size = world_size;
  result.ranks_per_node = ranks_per_node;
  result.run = std::move(run);
  result.fit = fit_profile(request.base, result.run.samples);
  HardwareProfile& p = result.fit.profile;
  p.name = request.name;
  p.gpus_per_node = ranks_per_node;
  if (request.memory_bytes > 0) p.memory_bytes = request.memory_bytes;
  return result;
}

std::string calibration_method(const CalibrationResult& result, const CalibrateRequest& request) {
  const auto& o = request.options;
  return fmt::format(
      "{} ranks ({} per node), one executor thread per stream, {} kernels on scratch operands "
      "(one BLAS thread per call); every point: 1 warm-up + {} timed repetitions, median; {} "
      "grid",
      result.world_size, result.ranks_per_node, to_string(o.dtype), o.runs,
      o.quick ? "quick" : "full");
}

nlohmann::ordered_json calibration_measurements_json(const CalibrationResult& result,
                                                     const CalibrateRequest& request) {
  nlohmann::ordered_json j;
  j["calibration_schema_version"] = kCalibrationSchemaVersion;
  j["profile"] = result.fit.profile.name;
  j["world_size"] = result.world_size;
  j["ranks_per_node"] = result.ranks_per_node;
  j["dtype"] = to_string(request.options.dtype);
  j["quick"] = request.options.quick;
  j["runs"] = request.options.runs;
  j["method"] = calibration_method(result, request);
  j["base_profile"] = request.base.name;
  j["points"] = measurements_json(result.run);
  j["fit"] = fit_report_json(result.fit);
  return j;
}

}  // namespace meshsim
