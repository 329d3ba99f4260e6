#include "traces/chrome_trace_writer.hpp"

#include <algorithm>
#include <numeric>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/kernel_call.hpp"

#ifndef MESHSIM_VERSION
#define MESHSIM_VERSION "unknown"
#endif

namespace meshsim {
namespace {

using nlohmann::json;

// Trace Event Format timestamps are microseconds; a double keeps nanoseconds exactly for any
// realistic run (ns < 2^53).
double to_us(Nanos ns) {
  return static_cast<double>(ns) / 1000.0;
}

int tid_of(StreamId stream) {
  return stream + 1;
}

// Dumps without throwing on invalid UTF-8 in op names or metadata (replaced by U+FFFD).
std::string dump_compact(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json op_args(const Op& op, const OpTiming& timing) {
  json args = json::object();
  args["op"] = op.id;
  if (const auto* k = std::get_if<KernelCall>(&op.body)) {
    args["kind"] = std::string(to_string(k->kind));
    args["dtype"] = std::string(to_string(k->dtype));
    args["flops"] = kernel_flops(*k);
    args["bytes"] = kernel_bytes(*k);
  } else if (const auto* p = std::get_if<P2PCall>(&op.body)) {
    std::int64_t sent = 0, received = 0;
    for (const auto& t : p->sends) sent += t.bytes;
    for (const auto& t : p->recvs) received += t.bytes;
    args["kind"] = "p2p";
    args["bytes"] = sent;
    args["recv_bytes"] = received;
    args["sends"] = p->sends.size();
    args["recvs"] = p->recvs.size();
  } else {
    const auto& c = std::get<CollectiveCall>(op.body);
    args["kind"] = std::string(to_string(c.kind));
    args["bytes"] = c.bytes;  // the nccl-tests message size (see CollectiveCall)
    args["dtype"] = std::string(to_string(c.dtype));
    args["group"] = c.group;
  }
  args["phase"] = std::string(to_string(op.labels.phase));
  const std::pair<const char*, int> labels[] = {{"step", op.labels.step},
                                                {"microbatch", op.labels.microbatch},
                                                {"layer", op.labels.layer},
                                                {"chunk", op.labels.chunk}};
  for (const auto& [key, value] : labels) {
    if (value >= 0) args[key] = value;
  }
  if (!op.is_compute() && timing.comm_start >= 0) {
    args["wait_us"] = to_us(timing.comm_start - timing.start);
  }
  return args;
}

json metadata_event(const char* name, int pid, int tid, json value) {
  json e = json::object();
  e["name"] = name;
  e["ph"] = "M";
  e["pid"] = pid;
  e["tid"] = tid;
  e["args"] = json::object();
  e["args"][std::string(name).ends_with("sort_index") ? "sort_index" : "name"] = std::move(value);
  return e;
}

}  // namespace

ChromeTraceRecorder::ChromeTraceRecorder(const Program& program, const CommPlan& plan,
                                         TraceMetadata metadata)
    : program_(program),
      plan_(plan),
      metadata_(std::move(metadata)),
      op_timings_(program.ops.size()),
      op_done_(program.ops.size(), false),
      transfer_windows_(plan.transfers.size()),
      transfer_done_(plan.transfers.size(), false),
      flow_emitted_(plan.transfers.size(), false) {}

EngineSignals ChromeTraceRecorder::signals() {
  EngineSignals s;
  s.on_op_complete = [this](OpId op, const OpTiming& timing) { record_op(op, timing); };
  s.on_transfer_complete = [this](std::int32_t t, const WindowTiming& window) {
    record_transfer(t, window);
  };
  return s;
}

void ChromeTraceRecorder::push_event(Nanos ts, json event) {
  events_.push_back(std::move(event));
  event_ts_.push_back(ts);
}

void ChromeTraceRecorder::record_op(OpId op, const OpTiming& timing) {
  MESHSIM_CHECK(op >= 0 && static_cast<std::size_t>(op) < program_.ops.size(),
                fmt::format("trace recorder: op {} outside the program", op));
  const auto index = static_cast<std::size_t>(op);
  MESHSIM_CHECK(!op_done_[index], fmt::format("trace recorder: op {} completed twice", op));
  op_timings_[index] = timing;
  op_done_[index] = true;

  const Op& o = program_.ops[index];
  json e = json::object();
  e["name"] = o.name;
  e["cat"] = o.is_compute() ? std::string(to_string(o.labels.phase)) : std::string("comm");
  e["ph"] = "X";
  e["ts"] = to_us(timing.start);
  e["dur"] = to_us(timing.end - timing.start);
  e["pid"] = o.rank;
  e["tid"] = tid_of(o.stream);
  e["args"] = op_args(o, timing);
  push_event(timing.start, std::move(e));

  if (index + 1 < plan_.op_transfer_begin.size()) {
    const auto begin = static_cast<std::size_t>(plan_.op_transfer_begin[index]);
    const auto end = static_cast<std::size_t>(plan_.op_transfer_begin[index + 1]);
    for (std::size_t i = begin; i < end && i < plan_.op_transfers.size(); ++i) {
      try_emit_flow(plan_.op_transfers[i]);
    }
  }
}

void ChromeTraceRecorder::record_transfer(std::int32_t transfer, const WindowTiming& window) {
  MESHSIM_CHECK(transfer >= 0 && static_cast<std::size_t>(transfer) < plan_.transfers.size(),
                fmt::format("trace recorder: transfer {} outside the plan", transfer));
  const auto index = static_cast<std::size_t>(transfer);
  MESHSIM_CHECK(!transfer_done_[index],
                fmt::format("trace recorder: transfer {} completed twice", transfer));
  transfer_windows_[index] = window;
  transfer_done_[index] = true;
  try_emit_flow(transfer);
}

void ChromeTraceRecorder::try_emit_flow(std::int32_t transfer) {
  const auto index = static_cast<std::size_t>(transfer);
  if (flow_emitted_[index] || !transfer_done_[index]) return;
  const MatchedTransfer& t = plan_.transfers[index];
  const auto send = static_cast<std::size_t>(t.send_op);
  const auto recv = static_cast<std::size_t>(t.recv_op);
  if (!op_done_[send] || !op_done_[recv]) return;
  flow_emitted_[index] = true;

  const WindowTiming& w = transfer_windows_[index];
  // "s" binds to the slice enclosing its timestamp on the sender's thread: the send op, which is
  // running when the data starts to move.
  const Nanos send_ts = std::max(op_timings_[send].start, w.start);
  // "f" with bp "e" binds to the enclosing slice: 1 ns before the data has arrived lies inside
  // the receive op (which ends at or after the transfer), never before the op starts, and never
  // before the arrow's tail.
  const Nanos recv_ts = std::max({w.end - 1, op_timings_[recv].start, send_ts});

  // One end of the arrow: "s" (start) or "f" (finish), with its own fields in between.
  auto arrow_end = [&](const char* ph, json bind) {
    json e = json::object();
    e["name"] = "transfer";
    e["cat"] = "transfer";
    e["ph"] = ph;
    e.update(bind);
    e["id"] = transfer;
    return e;
  };
  json s = arrow_end("s", json::object());
  s["pid"] = t.src;
  s["tid"] = tid_of(program_.ops[send].stream);
  s["ts"] = to_us(send_ts);
  s["args"] = json{{"bytes", t.bytes}, {"tag", t.tag}};
  json f = arrow_end("f", json{{"bp", "e"}});
  f["pid"] = t.dst;
  f["tid"] = tid_of(program_.ops[recv].stream);
  f["ts"] = to_us(recv_ts);
  push_event(send_ts, std::move(s));
  push_event(recv_ts, std::move(f));
}

void ChromeTraceRecorder::add_link_counters(const std::vector<LinkRateSample>& samples,
                                            const std::vector<std::string>& class_names) {
  network_process_ = true;
  const int pid = program_.world_size();
  for (const auto& s : samples) {
    for (std::size_t c = 0; c < class_names.size() && c < s.bytes_per_s.size(); ++c) {
      if (class_names[c].empty()) continue;  // no port of this class
      json e = json::object();
      e["name"] = link_counter_name(class_names[c]);
      e["ph"] = "C";
      e["pid"] = pid;
      e["ts"] = static_cast<double>(s.time) / 1000.0;
      e["args"] = json{{"GB/s", s.bytes_per_s[c] * 1e-9}};
      push_event(s.time, std::move(e));
    }
  }
}

void ChromeTraceRecorder::add_host_waits(const std::vector<HostWait>& waits) {
  host_thread_.assign(static_cast<std::size_t>(program_.world_size()), false);
  const int tid = tid_of(static_cast<StreamId>(program_.streams.size()));  // after the streams
  for (const HostWait& w : waits) {
    const Op& waited = program_.ops[static_cast<std::size_t>(w.waited)];
    json e = json::object();
    e["name"] = fmt::format("host waits for {}", waited.name);
    e["cat"] = "host";
    e["ph"] = "X";
    e["ts"] = to_us(w.from);
    e["dur"] = to_us(w.to - w.from);
    e["pid"] = w.rank;
    e["tid"] = tid;
    e["args"] = json{{"waited_op", w.waited},
                     {"next_op", w.op},
                     {"next", program_.ops[static_cast<std::size_t>(w.op)].name}};
    push_event(w.from, std::move(e));
    host_thread_[static_cast<std::size_t>(w.rank)] = true;
  }
}

std::string link_counter_name(const std::string& link_class) {
  return link_class + " bandwidth (GB/s, sum over its ports)";
}

std::vector<json> ChromeTraceRecorder::metadata_events() const {
  const int world = program_.world_size();
  const std::size_t n_streams = program_.streams.size();
  // Only the streams a rank actually uses get a thread, so the viewers show no empty tracks.
  std::vector<bool> used(static_cast<std::size_t>(world) * n_streams, false);
  for (const Op& op : program_.ops) {
    if (op.rank < 0 || op.rank >= world || op.stream < 0 ||
        static_cast<std::size_t>(op.stream) >= n_streams) {
      continue;
    }
    used[static_cast<std::size_t>(op.rank) * n_streams + static_cast<std::size_t>(op.stream)] =
        true;
  }
  std::vector<json> events;
  for (int r = 0; r < world; ++r) {
    events.push_back(metadata_event(
        "process_name", r, 0, fmt::format("rank {} ({})", r, program_.mesh.describe_rank(r))));
    events.push_back(metadata_event("process_sort_index", r, 0, r));
    for (std::size_t s = 0; s < n_streams; ++s) {
      if (!used[static_cast<std::size_t>(r) * n_streams + s]) continue;
      const auto stream = static_cast<StreamId>(s);
      events.push_back(metadata_event("thread_name", r, tid_of(stream), program_.streams[s]));
      events.push_back(metadata_event("thread_sort_index", r, tid_of(stream), stream));
    }
    if (!host_thread_.empty() && host_thread_[static_cast<std::size_t>(r)]) {
      const auto host = static_cast<StreamId>(n_streams);
      events.push_back(metadata_event("thread_name", r, tid_of(host), "host"));
      events.push_back(metadata_event("thread_sort_index", r, tid_of(host), host));
    }
  }
  if (network_process_) {
    events.push_back(metadata_event("process_name", world, 0, "network (link classes)"));
    events.push_back(metadata_event("process_sort_index", world, 0, world));
  }
  return events;
}

json ChromeTraceRecorder::other_data() const {
  json d = json::object();
  d["schema_version"] = kChromeTraceSchemaVersion;
  d["source"] = metadata_.source;
  d["meshsim_version"] =
      metadata_.meshsim_version.empty() ? std::string(MESHSIM_VERSION) : metadata_.meshsim_version;
  d["command"] = metadata_.command;
  d["hardware_name"] = metadata_.hardware_name;
  d["hardware_hash"] = metadata_.hardware_hash;
  d["description"] = program_.description;
  d["world_size"] = program_.world_size();
  return d;
}

std::vector<const json*> ChromeTraceRecorder::sorted_events() const {
  std::vector<std::size_t> order(events_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return event_ts_[a] < event_ts_[b]; });
  std::vector<const json*> out;
  out.reserve(order.size());
  for (std::size_t i : order) out.push_back(&events_[i]);
  return out;
}

json ChromeTraceRecorder::to_json() const {
  json events = json::array();
  for (auto& e : metadata_events()) events.push_back(std::move(e));
  for (const json* e : sorted_events()) events.push_back(*e);
  json trace = json::object();
  trace["traceEvents"] = std::move(events);
  trace["displayTimeUnit"] = "ns";
  trace["otherData"] = other_data();
  return trace;
}

void ChromeTraceRecorder::write(std::ostream& out) const {
  write_trace(to_json(), out);
}

void write_trace(const nlohmann::json& trace, std::ostream& out) {
  // One event per line so traces diff well; the rest compact.
  out << "{\"traceEvents\":[";
  bool first = true;
  for (const auto& e : trace.at("traceEvents")) {
    out << (first ? "\n" : ",\n") << dump_compact(e);
    first = false;
  }
  out << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":"
      << dump_compact(trace.value("otherData", json::object())) << "}\n";
}

}  // namespace meshsim
