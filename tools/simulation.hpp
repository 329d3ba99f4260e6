#pragma once
// The pipeline every simulating sub-command shares: validate the Program, cost it on a hardware
// profile, run the engine (with the trace recorder subscribed when asked), compute the metrics.
#include <chrono>
#include <optional>
#include <string>

#include "sim/comm_plan.hpp"
#include "sim/flow_plan.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/metrics.hpp"
#include "sim/program.hpp"
#include "sim/timeline.hpp"

namespace meshsim {

struct Provenance {
  std::string command_line;
  std::string hardware_name;
  std::string hardware_hash;
};

// Which network model costs the communication.
struct NetworkChoice {
  bool flow = false;  // false: analytical alpha-beta; true: flow-level with contention
  FlowOptions options;
};

struct SimulationResult {
  Program program;
  CommPlan plan;
  Timeline timeline;
  RunMetrics metrics;
  std::optional<std::string> trace;  // Chrome trace text, when asked for
  std::optional<FlowPlan> flows;     // the flow-level network's ports and gangs, when used
  double wall_s = 0;                 // building + simulating, not parsing or printing
};

SimulationResult run_simulation(Program program, const HardwareProfile& hw,
                                const Provenance& provenance, bool want_trace,
                                std::chrono::steady_clock::time_point started,
                                const NetworkChoice& network = {});

}  // namespace meshsim
