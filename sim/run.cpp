#include "sim/run.hpp"

#include "sim/cost_model.hpp"

namespace meshsim {

SimulationResult run_simulation(Program program, const HardwareProfile& hw,
                                const NetworkChoice& network, RunObserver* observer,
                                std::chrono::steady_clock::time_point started) {
  SimulationResult r;
  r.program = std::move(program);
  r.plan = validate_program(r.program);
  const Durations durations = estimate_durations(r.program, r.plan, hw);
  if (network.flow) r.flows = plan_flows(r.program, r.plan, hw.network, network.options);
  const FlowPlan* flows = r.flows ? &*r.flows : nullptr;
  const EngineSignals signals =
      observer != nullptr ? observer->subscribe(r.program, r.plan) : EngineSignals{};
  r.timeline = simulate(r.program, r.plan, durations, signals, flows);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (observer != nullptr) observer->finished(r.timeline, flows);
  r.metrics = compute_metrics(r.program, r.plan, r.timeline);
  return r;
}

}  // namespace meshsim
