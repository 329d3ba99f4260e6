#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include "sim/engine.hpp"
#include "traces/chrome_trace_reader.hpp"
#include "traces/chrome_trace_writer.hpp"
#include "traces/side_by_side_trace.hpp"

using namespace meshsim;

namespace {

// Two ranks exchanging once, simulated with fixed durations.
nlohmann::json exchange_trace(Nanos op_ns, const std::string& source) {
  static const Program p = [] {
    ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "side by side");
    const StreamId compute = b.stream("compute");
    const StreamId comm = b.stream("cp_comm");
    for (int r = 0; r < 2; ++r) {
      b.add(r, compute, "work", {},
            KernelCall{KernelKind::copy, DType::fp32, VectorShape{8}, {}, {}});
      b.add(r, comm, "swap", {},
            P2PCall{{Transfer{1 - r, 64, 0, -1}}, {Transfer{1 - r, 64, 0, -1}}});
    }
    return std::move(b).finish();
  }();
  static const CommPlan plan = match_communication(p);
  Durations d;
  d.ops.assign(p.ops.size(), op_ns);
  d.transfers.assign(plan.transfers.size(), op_ns);
  TraceMetadata meta;
  meta.source = source;
  ChromeTraceRecorder recorder(p, plan, meta);
  simulate(p, plan, d, recorder.signals());
  return recorder.to_json();
}

}  // namespace

TEST_CASE("side-by-side trace: simulated ranks first, measured ranks after, flows kept apart") {
  const nlohmann::json both =
      side_by_side_trace(exchange_trace(100, "simulated"), exchange_trace(300, "measured"));
  std::set<std::string> names;
  std::set<std::int64_t> pids, flow_ids;
  for (const auto& e : both["traceEvents"]) {
    pids.insert(e["pid"].get<std::int64_t>());
    if (e["ph"] == "M" && e["name"] == "process_name") names.insert(e["args"]["name"]);
    if (e["ph"] == "s") flow_ids.insert(e["id"].get<std::int64_t>());
  }
  CHECK(names == std::set<std::string>{"simulated: rank 0 (cp=0)", "simulated: rank 1 (cp=1)",
                                       "measured: rank 0 (cp=0)", "measured: rank 1 (cp=1)"});
  CHECK(pids == std::set<std::int64_t>{0, 1, 2, 3});
  CHECK(flow_ids == std::set<std::int64_t>{0, 1, 2, 3});  // 2 transfers per side, no clash
  CHECK(both["otherData"]["simulated"]["source"] == "simulated");
  CHECK(both["otherData"]["measured"]["source"] == "measured");
  // The text form loads with the trace reader: 2 ops x 2 ranks x 2 sides.
  std::ostringstream text;
  write_trace(both, text);
  std::istringstream in(text.str());
  CHECK(read_chrome_trace(in, "both.json").spans.size() == 8);
}
