#pragma once
// The run path every simulation takes (ARCHITECTURE.md §3): check the Program (structure,
// matching, deadlock), cost it on a hardware profile, plan its flows when the flow-level network
// is chosen, run the event engine, compute the metrics. Observers (the trace recorder) subscribe
// from outside through RunObserver.
#include <chrono>
#include <optional>

#include "sim/comm_plan.hpp"
#include "sim/engine.hpp"
#include "sim/flow_plan.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/metrics.hpp"
#include "sim/program.hpp"
#include "sim/timeline.hpp"

namespace meshsim {

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
  std::optional<FlowPlan> flows;  // the flow-level network's ports and gangs, when used
  double wall_s = 0;              // from `started` to the end of the engine run
};

// Watches one run: subscribes to the engine once the graph is checked and hears when it is done
// (while the run's Program and CommPlan still live where subscribe() saw them).
class RunObserver {
 public:
  virtual EngineSignals subscribe(const Program& program, const CommPlan& plan) = 0;
  virtual void finished(const Timeline& timeline, const FlowPlan* flows) = 0;

 protected:
  ~RunObserver() = default;
};

SimulationResult run_simulation(
    Program program, const HardwareProfile& hw, const NetworkChoice& network = {},
    RunObserver* observer = nullptr,
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now());

}  // namespace meshsim
