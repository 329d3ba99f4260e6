#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "schedules/ring_attention.hpp"
#include "sim/hardware_profile.hpp"
#include "traces/trace_observer.hpp"

using namespace meshsim;

TEST_CASE("ChromeTraceObserver: one X event per op, metadata from the caller") {
  RingAttentionConfig c;
  c.cp = 2;
  c.seq = 64;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 8;
  ChromeTraceObserver observer(TraceMetadata{"simulated", "test", "meshsim x", "h100-sxm", "0"});
  const SimulationResult r =
      run_simulation(build_ring_attention(c), load_hardware("h100-sxm"), {}, &observer);
  const nlohmann::json trace = nlohmann::json::parse(observer.take_text());
  int spans = 0;
  for (const auto& e : trace.at("traceEvents")) spans += e.at("ph") == "X" ? 1 : 0;
  CHECK(spans == static_cast<int>(r.program.ops.size()));
  CHECK(trace.at("otherData").dump().find("meshsim x") != std::string::npos);
}
