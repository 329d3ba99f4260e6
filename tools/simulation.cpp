#include "tools/simulation.hpp"

#include "traces/trace_observer.hpp"

namespace meshsim {

TracedSimulation run_traced_simulation(Program program, const HardwareProfile& hw,
                                       const Provenance& provenance, bool want_trace,
                                       std::chrono::steady_clock::time_point started,
                                       const NetworkChoice& network) {
  TracedSimulation r;
  if (!want_trace) {
    static_cast<SimulationResult&>(r) =
        run_simulation(std::move(program), hw, network, nullptr, started);
    return r;
  }
  ChromeTraceObserver observer(TraceMetadata{"simulated", MESHSIM_VERSION, provenance.command_line,
                                             provenance.hardware_name, provenance.hardware_hash});
  static_cast<SimulationResult&>(r) =
      run_simulation(std::move(program), hw, network, &observer, started);
  r.trace = observer.take_text();
  return r;
}

}  // namespace meshsim
