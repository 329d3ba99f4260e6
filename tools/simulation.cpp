#include "tools/simulation.hpp"

#include <sstream>

#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "traces/chrome_trace_writer.hpp"

namespace meshsim {

SimulationResult run_simulation(Program program, const HardwareProfile& hw,
                                const Provenance& provenance, bool want_trace,
                                std::chrono::steady_clock::time_point started,
                                const NetworkChoice& network) {
  SimulationResult r;
  r.program = std::move(program);
  r.plan = validate_program(r.program);
  const Durations durations = estimate_durations(r.program, r.plan, hw);
  if (network.flow) r.flows = plan_flows(r.program, r.plan, hw.network, network.options);
  const FlowPlan* flows = r.flows ? &*r.flows : nullptr;
  if (want_trace) {
    ChromeTraceRecorder recorder(
        r.program, r.plan,
        TraceMetadata{"simulated", MESHSIM_VERSION, provenance.command_line,
                      provenance.hardware_name, provenance.hardware_hash});
    r.timeline = simulate(r.program, r.plan, durations, recorder.signals(), flows);
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (flows != nullptr) {
      recorder.add_link_counters(r.timeline.link_rates,
                                 std::vector<std::string>(FlowPlan::kLinkClassNames.begin(),
                                                          FlowPlan::kLinkClassNames.end()));
    }
    std::ostringstream out;
    recorder.write(out);
    r.trace = out.str();
  } else {
    r.timeline = simulate(r.program, r.plan, durations, {}, flows);
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  r.metrics = compute_metrics(r.program, r.plan, r.timeline);
  return r;
}

}  // namespace meshsim
