#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/comm_plan.hpp"
#include "sim/engine.hpp"
#include "sim/kernel_call.hpp"
#include "sim/mesh.hpp"
#include "sim/program.hpp"
#include "traces/chrome_trace_writer.hpp"

namespace meshsim {
namespace {

using nlohmann::json;

constexpr std::int64_t kExchangeBytes = 1024;

KernelCall small_gemm() {
  return KernelCall{KernelKind::gemm, DType::bf16, GemmShape{128, 128, 128}, {}, {}};
}

// Two CP ranks. Per rank r: "attn 0" (compute), then "kv exchange" (cp_comm, after attn 0: send
// kExchangeBytes to the other rank and receive as much from it), then "attn 1" (compute, waits for
// the exchange). Op ids: rank 0 -> 0, 1, 2; rank 1 -> 3, 4, 5.
Program exchange_program() {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "two-rank kv exchange");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("cp_comm");
  for (int r = 0; r < 2; ++r) {
    const int peer = 1 - r;
    const OpId a0 = b.add(r, compute, "attn 0", OpLabels{Phase::fwd, 0, 0, 0, -1}, small_gemm());
    P2PCall exchange;
    exchange.sends.push_back(Transfer{peer, kExchangeBytes, 7, -1});
    exchange.recvs.push_back(Transfer{peer, kExchangeBytes, 7, -1});
    const OpId x = b.add(r, comm, "kv exchange", OpLabels{Phase::fwd, 0, 0, 0, -1}, exchange, {a0});
    b.add(r, compute, "attn 1", OpLabels{Phase::fwd, 0, 0, 1, -1}, small_gemm(), {x});
  }
  return std::move(b).finish();
}

// attn 0 takes 1000 ns on rank 0 and 1500 ns on rank 1 (a straggler), attn 1 1000 ns, each
// transfer 500 ns.
Durations exchange_durations(const Program& p, const CommPlan& plan) {
  Durations d;
  d.ops = {1000, 0, 1000, 1500, 0, 1000};
  REQUIRE(d.ops.size() == p.ops.size());
  d.transfers.assign(plan.transfers.size(), 500);
  return d;
}

struct Recorded {
  Program program;
  CommPlan plan;
  Timeline timeline;
  json trace;
  std::string text;
};

Recorded record_exchange() {
  Recorded r;
  r.program = exchange_program();
  r.plan = match_communication(r.program);
  ChromeTraceRecorder recorder(r.program, r.plan,
                               TraceMetadata{"simulated", "", "test", "h100", ""});
  r.timeline =
      simulate(r.program, r.plan, exchange_durations(r.program, r.plan), recorder.signals());
  r.trace = recorder.to_json();
  std::ostringstream out;
  recorder.write(out);
  r.text = out.str();
  return r;
}

std::vector<json> events_with_ph(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == ph) out.push_back(e);
  }
  return out;
}

std::int64_t to_ns(const json& us) {
  return std::llround(us.get<double>() * 1000.0);
}

TEST_CASE("chrome trace: processes per rank and threads per stream, metadata first") {
  const Recorded r = record_exchange();
  const json& events = r.trace.at("traceEvents");
  REQUIRE(events.is_array());
  REQUIRE(!events.empty());

  // All "M" events precede every timed event.
  bool timed_seen = false;
  for (const auto& e : events) {
    if (e.at("ph") == "M") {
      CHECK_FALSE(timed_seen);
    } else {
      timed_seen = true;
    }
  }

  std::map<int, std::string> process_names;
  std::map<int, int> process_sort;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<std::pair<int, int>, int> thread_sort;
  for (const auto& e : events_with_ph(r.trace, "M")) {
    const int pid = e.at("pid").get<int>();
    const std::string name = e.at("name").get<std::string>();
    if (name == "process_name") {
      CHECK(process_names.count(pid) == 0);
      process_names[pid] = e.at("args").at("name").get<std::string>();
    } else if (name == "process_sort_index") {
      process_sort[pid] = e.at("args").at("sort_index").get<int>();
    } else if (name == "thread_name") {
      thread_names[{pid, e.at("tid").get<int>()}] = e.at("args").at("name").get<std::string>();
    } else if (name == "thread_sort_index") {
      thread_sort[{pid, e.at("tid").get<int>()}] = e.at("args").at("sort_index").get<int>();
    }
  }
  CHECK(process_names == std::map<int, std::string>{{0, "rank 0 (cp=0)"}, {1, "rank 1 (cp=1)"}});
  CHECK(process_sort == std::map<int, int>{{0, 0}, {1, 1}});
  // tid = stream id + 1; compute is stream 0, cp_comm stream 1.
  const std::map<std::pair<int, int>, std::string> expected_threads = {
      {{0, 1}, "compute"}, {{0, 2}, "cp_comm"}, {{1, 1}, "compute"}, {{1, 2}, "cp_comm"}};
  CHECK(thread_names == expected_threads);
  const std::map<std::pair<int, int>, int> expected_sort = {
      {{0, 1}, 0}, {{0, 2}, 1}, {{1, 1}, 0}, {{1, 2}, 1}};
  CHECK(thread_sort == expected_sort);
}

TEST_CASE("chrome trace: one complete event per op with its times and args") {
  const Recorded r = record_exchange();
  const auto spans = events_with_ph(r.trace, "X");
  REQUIRE(spans.size() == r.program.ops.size());

  std::map<int, json> by_op;
  for (const auto& e : spans) by_op[e.at("args").at("op").get<int>()] = e;
  REQUIRE(by_op.size() == 6);

  // Expected times (ns):
  //   attn 0: rank 0 [0, 1000], rank 1 [0, 1500] (their durations, both start at time 0).
  //   kv exchange: dispatched when attn 0 completes (its dep): rank 0 at 1000, rank 1 at 1500;
  //     the rendezvous completes at max(1000, 1500) = 1500, both transfers take 500 ns, so both
  //     exchanges end at 1500 + 500 = 2000; rank 0 waited 1500 - 1000 = 500 ns = 0.5 us.
  //   attn 1: after the exchange (dep) and attn 0 (stream order): [2000, 3000] on both ranks.
  struct Expected {
    OpId op;
    int rank;
    int tid;
    const char* name;
    Nanos start, end;
  };
  const Expected expected[] = {
      {0, 0, 1, "attn 0", 0, 1000},         {1, 0, 2, "kv exchange", 1000, 2000},
      {2, 0, 1, "attn 1", 2000, 3000},      {3, 1, 1, "attn 0", 0, 1500},
      {4, 1, 2, "kv exchange", 1500, 2000}, {5, 1, 1, "attn 1", 2000, 3000},
  };
  for (const auto& x : expected) {
    CAPTURE(x.op);
    const json& e = by_op.at(x.op);
    CHECK(e.at("name") == x.name);
    CHECK(e.at("pid") == x.rank);
    CHECK(e.at("tid") == x.tid);
    CHECK(to_ns(e.at("ts")) == x.start);
    CHECK(to_ns(e.at("dur")) == x.end - x.start);
    // The engine's own timeline agrees with the trace.
    CHECK(r.timeline.ops[static_cast<std::size_t>(x.op)].start == x.start);
    CHECK(r.timeline.ops[static_cast<std::size_t>(x.op)].end == x.end);
    const json& args = e.at("args");
    CHECK(args.at("phase") == "fwd");
    CHECK(args.at("layer") == 0);
    CHECK(args.at("microbatch") == 0);
    CHECK_FALSE(args.contains("chunk"));  // -1: left out
  }

  // Compute: cat = phase, kind, flops = 2 m n k = 2 * 128^3, bytes from the kernel call.
  const json& attn = by_op.at(0);
  CHECK(attn.at("cat") == "fwd");
  CHECK(attn.at("args").at("kind") == "gemm");
  CHECK(attn.at("args").at("flops").get<double>() == doctest::Approx(2.0 * 128 * 128 * 128));
  CHECK(attn.at("args").at("bytes").get<double>() == doctest::Approx(kernel_bytes(small_gemm())));
  CHECK(attn.at("args").at("step") == 0);
  CHECK(by_op.at(2).at("args").at("step") == 1);

  // Comm: cat "comm", kind "p2p", bytes sent, wait_us = (comm_start - start) / 1000.
  for (OpId op : {1, 4}) {
    const json& x = by_op.at(op);
    CHECK(x.at("cat") == "comm");
    CHECK(x.at("args").at("kind") == "p2p");
    CHECK(x.at("args").at("bytes") == kExchangeBytes);
    CHECK_FALSE(x.at("args").contains("flops"));
  }
  CHECK(by_op.at(1).at("args").at("wait_us").get<double>() == doctest::Approx(0.5));
  CHECK(by_op.at(4).at("args").at("wait_us").get<double>() == doctest::Approx(0.0));
}

TEST_CASE("chrome trace: a flow arrow from each send to its receive") {
  const Recorded r = record_exchange();
  const auto starts = events_with_ph(r.trace, "s");
  const auto finishes = events_with_ph(r.trace, "f");
  REQUIRE(starts.size() == 2);
  REQUIRE(finishes.size() == 2);
  REQUIRE(r.plan.transfers.size() == 2);

  std::map<std::int64_t, json> s_by_id, f_by_id;
  for (const auto& e : starts) s_by_id[e.at("id").get<std::int64_t>()] = e;
  for (const auto& e : finishes) f_by_id[e.at("id").get<std::int64_t>()] = e;
  REQUIRE(s_by_id.size() == 2);
  REQUIRE(f_by_id.size() == 2);

  for (std::size_t t = 0; t < r.plan.transfers.size(); ++t) {
    CAPTURE(t);
    const auto id = static_cast<std::int64_t>(t);
    REQUIRE(s_by_id.count(id) == 1);
    REQUIRE(f_by_id.count(id) == 1);
    const json& s = s_by_id.at(id);
    const json& f = f_by_id.at(id);
    const MatchedTransfer& mt = r.plan.transfers[t];
    CHECK(s.at("cat") == "transfer");
    CHECK(f.at("cat") == "transfer");
    CHECK(f.at("bp") == "e");
    CHECK(s.at("pid") == mt.src);
    CHECK(f.at("pid") == mt.dst);
    CHECK(s.at("tid") == 2);  // cp_comm
    CHECK(f.at("tid") == 2);
    // s: max(send op start, transfer start) = max(1000 or 1500, 1500) = 1500 ns.
    CHECK(to_ns(s.at("ts")) == 1500);
    // f: transfer end - 1 = 2000 - 1 = 1999 ns (after the receive op's start, 1000 or 1500).
    CHECK(to_ns(f.at("ts")) == 1999);
    CHECK(s.at("ts").get<double>() <= f.at("ts").get<double>());
    // Both lie inside the op slices they bind to.
    const OpTiming& send = r.timeline.ops[static_cast<std::size_t>(mt.send_op)];
    const OpTiming& recv = r.timeline.ops[static_cast<std::size_t>(mt.recv_op)];
    CHECK(send.start <= to_ns(s.at("ts")));
    CHECK(to_ns(s.at("ts")) < send.end);
    CHECK(recv.start <= to_ns(f.at("ts")));
    CHECK(to_ns(f.at("ts")) < recv.end);
  }
}

TEST_CASE("chrome trace: timed events sorted, otherData, write() output") {
  const Recorded r = record_exchange();
  const json& events = r.trace.at("traceEvents");
  double last = -1.0;
  for (const auto& e : events) {
    if (e.at("ph") == "M") continue;
    CHECK(e.at("ts").get<double>() >= last);
    last = e.at("ts").get<double>();
  }
  // 2 ranks x (process_name + sort index + 2 streams x (thread_name + sort index)) = 12 "M",
  // 6 "X", 2 "s", 2 "f".
  CHECK(events.size() == 12 + 6 + 2 + 2);

  const json& other = r.trace.at("otherData");
  CHECK(other.at("schema_version") == 1);
  CHECK(other.at("source") == "simulated");
  CHECK(other.at("command") == "test");
  CHECK(other.at("hardware_name") == "h100");
  CHECK(other.at("description") == "two-rank kv exchange");
  CHECK(other.at("meshsim_version").get<std::string>() != "");
  CHECK(r.trace.at("displayTimeUnit") == "ns");

  // write(): valid JSON equal to to_json(), one event per line.
  const json parsed = json::parse(r.text);
  CHECK(parsed == r.trace);
  CHECK(r.text.rfind("{\"traceEvents\":[\n", 0) == 0);
  const auto lines = std::count(r.text.begin(), r.text.end(), '\n');
  // "{"traceEvents":[" line, one line per event, the closing line.
  CHECK(lines == static_cast<std::ptrdiff_t>(events.size()) + 2);

  // Deterministic: a second run writes the same bytes.
  CHECK(record_exchange().text == r.text);
}

TEST_CASE("chrome trace: collectives are comm slices named by their kind, without arrows") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "all-reduce");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("dp_comm");
  const GroupId g = b.group("cp", {0, 1});
  for (int r = 0; r < 2; ++r) {
    const OpId k = b.add(r, compute, "grad", OpLabels{Phase::bwd, 3, 1, -1, 0}, small_gemm());
    b.add(r, comm, "grad all-reduce", OpLabels{Phase::bwd, 3, 1, -1, 0},
          CollectiveCall{CollectiveKind::all_reduce, g, 4096, DType::fp32, 0, -1, -1}, {k});
  }
  const Program p = std::move(b).finish();
  const CommPlan plan = match_communication(p);
  Durations d;
  d.ops = {1000, 0, 1000, 0};
  d.collectives = {700};
  ChromeTraceRecorder recorder(p, plan, TraceMetadata{});
  simulate(p, plan, d, recorder.signals());
  const json trace = recorder.to_json();
  CHECK(events_with_ph(trace, "s").empty());
  CHECK(events_with_ph(trace, "f").empty());
  const auto spans = events_with_ph(trace, "X");
  REQUIRE(spans.size() == 4);
  for (const auto& e : spans) {
    const json& args = e.at("args");
    CHECK(args.at("phase") == "bwd");
    CHECK(args.at("layer") == 3);
    CHECK(args.at("chunk") == 0);
    CHECK_FALSE(args.contains("step"));
    if (e.at("name") == "grad all-reduce") {
      CHECK(e.at("cat") == "comm");
      CHECK(args.at("kind") == "all_reduce");
      CHECK(args.at("bytes") == 4096);
      // Dispatched at 1000 (after "grad") on both ranks; the all-reduce takes 700 ns.
      CHECK(to_ns(e.at("ts")) == 1000);
      CHECK(to_ns(e.at("dur")) == 700);
      CHECK(args.at("wait_us").get<double>() == doctest::Approx(0.0));
    } else {
      CHECK(e.at("cat") == "bwd");
    }
  }
  // A thread only for the streams a rank uses: compute and dp_comm.
  CHECK(events_with_ph(trace, "M").size() == 2 * (2 + 2 * 2));
}

TEST_CASE("chrome trace: the host's waits on a host track of their rank") {
  // Host 10 ns per op, kernels 100 ns: the host issues "routing" at 10, then waits for it before
  // issuing "dispatch" (10 -> 110), as the engine's host clock records.
  ProgramBuilder b(Mesh({{"dp", 1}}, 8), false, "host wait");
  b.set_host_issue(true);
  const StreamId compute = b.stream("compute");
  const OpId routing = b.add(0, compute, "routing", {}, small_gemm());
  b.host_wait_next(routing);
  b.add(0, compute, "dispatch", {}, small_gemm());
  const Program p = std::move(b).finish();
  const CommPlan plan = match_communication(p);
  Durations d;
  d.ops = {100, 100};
  d.host = {10, 10};
  ChromeTraceRecorder recorder(p, plan, TraceMetadata{});
  const Timeline t = simulate(p, plan, d, recorder.signals());
  REQUIRE(t.host_waits.size() == 1);
  recorder.add_host_waits(t.host_waits);
  const json trace = recorder.to_json();
  const auto spans = events_with_ph(trace, "X");
  const auto host =
      std::find_if(spans.begin(), spans.end(), [](const json& e) { return e.at("cat") == "host"; });
  REQUIRE(host != spans.end());
  CHECK(host->at("name") == "host waits for routing");
  CHECK(to_ns(host->at("ts")) == 10);
  CHECK(to_ns(host->at("dur")) == 100);
  CHECK(host->at("tid") == 2);  // after the one stream's thread (tid 1)
  CHECK(host->at("args").at("next") == "dispatch");
  bool named = false;
  for (const auto& e : trace.at("traceEvents")) {
    named = named || (e.at("ph") == "M" && e.at("name") == "thread_name" && e.at("tid") == 2 &&
                      e.at("args").at("name") == "host");
  }
  CHECK(named);
}

}  // namespace
}  // namespace meshsim
