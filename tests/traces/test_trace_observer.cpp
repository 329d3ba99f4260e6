#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/ring_attention.hpp"
#include "schedules/step_plan.hpp"
#include "schedules/training_step.hpp"
#include "sim/flow_plan.hpp"
#include "sim/hardware_profile.hpp"
#include "tests/sim/small_models.hpp"
#include "tests/sim/spine_tier.hpp"
#include "traces/chrome_trace_writer.hpp"
#include "traces/trace_observer.hpp"

using namespace meshsim;

namespace {

RingAttentionConfig small_ring() {
  RingAttentionConfig c;
  c.cp = 2;
  c.seq = 64;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 8;
  return c;
}

}  // namespace

TEST_CASE("ChromeTraceObserver: one X event per op, metadata from the caller") {
  const RingAttentionConfig c = small_ring();
  ChromeTraceObserver observer(TraceMetadata{"simulated", "test", "meshsim x", "h100-sxm", "0"});
  const SimulationResult r =
      run_simulation(build_ring_attention(c), load_hardware("h100-sxm"), {}, &observer);
  const nlohmann::json trace = nlohmann::json::parse(observer.take_text());
  int spans = 0;
  for (const auto& e : trace.at("traceEvents")) spans += e.at("ph") == "X" ? 1 : 0;
  CHECK(spans == static_cast<int>(r.program.ops.size()));
  CHECK(trace.at("otherData").dump().find("meshsim x") != std::string::npos);
}

namespace {

using test::small_llama;  // tests/sim/small_models.hpp

// Per link class: the integral over time of the class's counter track (GB/s x us = 1e3 bytes),
// from a trace's "C" events (piecewise constant from each event to the next of the same track).
std::map<std::string, double> counter_integrals(const nlohmann::json& trace) {
  std::map<std::string, std::vector<std::pair<double, double>>> tracks;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "C") continue;
    tracks[e.at("name").get<std::string>()].emplace_back(e.at("ts").get<double>(),
                                                         e.at("args").at("GB/s").get<double>());
  }
  std::map<std::string, double> out;
  for (auto& [name, points] : tracks) {
    std::stable_sort(points.begin(), points.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    double bytes = 0;
    for (std::size_t i = 0; i + 1 < points.size(); ++i) {
      bytes += points[i].second * (points[i + 1].first - points[i].first) * 1e3;
    }
    out[name] = bytes;
    CHECK(points.back().second == 0);  // nothing moves after the last change
  }
  return out;
}

// Per link class: the bytes the run's ports carried (each port counted for the ports of the whole
// network it stands for).
std::map<std::string, double> class_bytes(const SimulationResult& r) {
  std::map<std::string, double> out;
  for (std::size_t p = 0; p < r.flows->port_class.size(); ++p) {
    const std::string cls = FlowPlan::kLinkClassNames[r.flows->port_class[p]];
    out[link_counter_name(cls)] += r.timeline.ports[p].bytes * r.flows->port_multiplicity[p];
  }
  return out;
}

struct TracedRun {
  SimulationResult result;
  nlohmann::json trace;
};

TracedRun traced_step(bool fold, const FlowOptions& options) {
  StepPlan plan;
  plan.tp = 8;
  plan.dp = 4;
  plan.pp = 2;
  plan.vp = 2;
  plan.schedule = PipelineSchedule::interleaved;
  plan.global_batch = 16;
  plan.fold_dp = fold;
  plan.fold_tp = fold;
  const HardwareProfile hw = load_hardware("h100-sxm");
  ChromeTraceObserver observer(TraceMetadata{});
  SimulationResult r = run_simulation(build_training_step(small_llama(), plan, hw.gpus_per_node),
                                      hw, NetworkChoice{true, options}, &observer);
  return {std::move(r), nlohmann::json::parse(observer.take_text())};
}

}  // namespace

TEST_CASE("flow-level traces: a bandwidth counter per link class, its integral the bytes moved") {
  // tp 8 x dp 4 x pp 2 (interleaved) on 8 DGX-class nodes, 2:1 node uplinks, leaves of 4 nodes
  // at 2:1 to the spine. Each class's track sums the bandwidth over its ports, so its integral
  // over the step is the bytes its ports carried (conservation). The tolerance: a gang ends at
  // the nanosecond after its last byte, so the track overcounts at most 1 ns of each gang's rate,
  // under 1e-3 of gangs that last a microsecond or more.
  FlowOptions o = test::spine(4, 2.0);
  o.oversubscription = 2.0;
  const TracedRun unfolded = traced_step(false, o);
  const auto integrals = counter_integrals(unfolded.trace);
  const auto bytes = class_bytes(unfolded.result);
  REQUIRE(integrals.size() == 4);  // nvlink, nic, uplink, spine
  for (const auto& [name, moved] : bytes) {
    const std::string cls = name;
    CAPTURE(cls);
    REQUIRE(integrals.count(name) == 1);
    CHECK(integrals.at(name) == doctest::Approx(moved).epsilon(1e-3));
  }
  CHECK(bytes.at(link_counter_name("nic")) > 0);
  // pipeline sends between stages 0 (nodes 0-3, group 0) and 1 (nodes 4-7, group 1) cross it
  CHECK(bytes.at(link_counter_name("spine")) > 0);

  SUBCASE("a folded run's counters count every port its ports stand for") {
    // The DP shift cycles the 4 nodes of a stage inside its leaf group: exact (flow_fold.hpp).
    const TracedRun folded = traced_step(true, o);
    CHECK(static_cast<double>(folded.result.metrics.makespan) ==
          doctest::Approx(static_cast<double>(unfolded.result.metrics.makespan)).epsilon(1e-6));
    const auto folded_integrals = counter_integrals(folded.trace);
    for (const auto& [name, moved] : bytes) {
      const std::string cls = name;
      CAPTURE(cls);
      CHECK(folded_integrals.at(name) == doctest::Approx(moved).epsilon(1e-3));
    }
  }
}

TEST_CASE("without the flow model a trace has no counter tracks") {
  const RingAttentionConfig c = small_ring();
  ChromeTraceObserver observer(TraceMetadata{});
  (void)run_simulation(build_ring_attention(c), load_hardware("h100-sxm"), {}, &observer);
  const auto trace = nlohmann::json::parse(observer.take_text());
  for (const auto& e : trace.at("traceEvents")) CHECK(e.at("ph") != "C");
}
