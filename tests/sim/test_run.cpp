#include <doctest/doctest.h>

#include <vector>

#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/run.hpp"
#include "tiny_programs.hpp"

using namespace meshsim;
using meshsim::testing::exchange;
using meshsim::testing::vector_kernel;

namespace {

// Two ranks: a kernel each, then one exchange of 1 MiB each way.
Program two_ranks() {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "run test");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("cp_comm");
  for (int r = 0; r < 2; ++r) {
    const OpId k = b.add(r, compute, "kernel", {}, vector_kernel(1 << 20));
    b.add(r, comm, "exchange", {}, exchange(1 - r, 1 - r, 1 << 20), {k});
  }
  return std::move(b).finish();
}

struct CountingObserver final : RunObserver {
  int subscribed = 0, finished_runs = 0, ops_seen = 0;
  bool flows_seen = false;
  EngineSignals subscribe(const Program& program, const CommPlan&) override {
    ++subscribed;
    CHECK(program.ops.size() == 4);
    EngineSignals s;
    s.on_op_complete = [this](OpId, const OpTiming&) { ++ops_seen; };
    return s;
  }
  void finished(const Timeline&, const FlowPlan* flows) override {
    ++finished_runs;
    flows_seen = flows != nullptr;
  }
};

}  // namespace

TEST_CASE("run_simulation: checks, costs, simulates and measures; observers see every op") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  CountingObserver observer;
  const SimulationResult r = run_simulation(two_ranks(), hw, {}, &observer);
  CHECK(observer.subscribed == 1);
  CHECK(observer.finished_runs == 1);
  CHECK(observer.ops_seen == 4);
  CHECK_FALSE(observer.flows_seen);
  CHECK(r.plan.transfers.size() == 2);
  CHECK(r.metrics.makespan == r.timeline.makespan);
  CHECK(r.timeline.makespan > 0);
  CHECK_FALSE(r.flows.has_value());
  // The same Program without an observer gives the same timeline.
  CHECK(run_simulation(two_ranks(), hw).timeline.makespan == r.timeline.makespan);
}

TEST_CASE("run_simulation: the flow-level network plans flows and tells the observer") {
  CountingObserver observer;
  NetworkChoice flow;
  flow.flow = true;
  const SimulationResult r =
      run_simulation(two_ranks(), load_hardware("h100-sxm"), flow, &observer);
  CHECK(r.flows.has_value());
  CHECK(observer.flows_seen);
}

TEST_CASE("run_simulation: an invalid Program is refused before anything runs") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "unmatched");
  const StreamId comm = b.stream("cp_comm");
  b.add(0, comm, "lonely send", {}, meshsim::testing::send_to(1, 64));
  CountingObserver observer;
  CHECK_THROWS_AS(run_simulation(std::move(b).finish(), load_hardware("h100-sxm"), {}, &observer),
                  InputError);
  CHECK(observer.subscribed == 0);
}
