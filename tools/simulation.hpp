#pragma once
// The run path of the simulating sub-commands: sim/run's run_simulation, with the Chrome trace
// recorded (traces/trace_observer) when the command writes one.
#include <chrono>
#include <optional>
#include <string>

#include "sim/run.hpp"

namespace meshsim {

struct Provenance {
  std::string command_line;
  std::string hardware_name;
  std::string hardware_hash;
};

struct TracedSimulation : SimulationResult {
  std::optional<std::string> trace;  // Chrome trace text, when asked for
};

TracedSimulation run_traced_simulation(Program program, const HardwareProfile& hw,
                                       const Provenance& provenance, bool want_trace,
                                       std::chrono::steady_clock::time_point started,
                                       const NetworkChoice& network = {});

}  // namespace meshsim
