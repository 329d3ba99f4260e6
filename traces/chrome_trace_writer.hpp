#pragma once
// Chrome Trace Event Format output that Perfetto and chrome://tracing load: one process per rank
// (named with its mesh coordinates), one thread per stream, a complete ("X") event per op with its
// kernel, FLOPs, bytes and labels, flow arrows ("s"/"f") from each send to its receive.
// The recorder subscribes to the engine's signals; the engine never writes traces itself.
//
// Layout (schema_version 1):
//   pid = rank, process named "rank R (<mesh coordinates>)", process_sort_index = R;
//   tid = stream id + 1, thread named with the stream name, thread_sort_index = stream id;
//   "X" per op: ts/dur in microseconds with nanosecond precision (ns / 1000.0), name = op name,
//     cat = phase name (compute) or "comm", args = op, kind, flops (compute), bytes, phase and the
//     labels that are >= 0 (step, microbatch, layer, chunk), wait_us (comm: rendezvous wait);
//   "s"/"f" per matched transfer t (id = t, cat/name "transfer"): "s" on the sender's stream at
//     max(send start, transfer start), "f" (bp "e") on the receiver's stream at transfer end - 1 ns
//     but not before the receive op's start, so both bind to the enclosing op slices;
//   "C" (flow-level runs) per link class at every rate change: pid = world size (the process
//     "network (link classes)"), name = link_counter_name(class), args {"GB/s": bandwidth summed
//     over the class's ports};
//   "otherData" = TraceMetadata + schema_version + the Program's description.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/comm_plan.hpp"
#include "sim/engine.hpp"
#include "sim/program.hpp"

namespace meshsim {

inline constexpr int kChromeTraceSchemaVersion = 1;

struct TraceMetadata {
  std::string source = "simulated";  // "simulated" or "measured"
  std::string meshsim_version;       // empty: this build's version
  std::string command;
  std::string hardware_name;
  std::string hardware_hash;
};

// The name of the counter track of one link class ("nvlink", "nic", "uplink", "spine").
std::string link_counter_name(const std::string& link_class);

class ChromeTraceRecorder {
 public:
  ChromeTraceRecorder(const Program& program, const CommPlan& plan, TraceMetadata metadata);

  // Signals to pass to simulate(); they record into this recorder, which must outlive the run.
  EngineSignals signals();

  // The whole trace as one JSON object {"traceEvents": [...], "displayTimeUnit": "ns",
  // "otherData": {...}}; events sorted by (timestamp, insertion order) for stable output.
  // Counter tracks ("C" events) of the bandwidth in use per link class, in a "network" process
  // after the ranks; from a flow-level run's Timeline::link_rates: one track per class named by
  // link_counter_name, its value ("GB/s") the bytes per second crossing all ports of the class
  // from that time on (summed over the ports, so its integral over time is the bytes the class
  // carried). Classes named "" (no port of that class in the network) get no track.
  void add_link_counters(const std::vector<LinkRateSample>& samples,
                         const std::vector<std::string>& class_names);
  // The host issue clock's waits (Timeline::host_waits) as slices on a "host" thread of each rank
  // that has one: the host waiting for an op to complete before it issues the next.
  void add_host_waits(const std::vector<HostWait>& waits);

  nlohmann::json to_json() const;
  void write(std::ostream& out) const;

 private:
  void record_op(OpId op, const OpTiming& timing);
  void record_transfer(std::int32_t transfer, const WindowTiming& window);
  // Emits the flow pair of a transfer once its window and both ops' timings are known.
  void try_emit_flow(std::int32_t transfer);
  void push_event(Nanos ts, nlohmann::json event);
  std::vector<nlohmann::json> metadata_events() const;
  nlohmann::json other_data() const;
  std::vector<const nlohmann::json*> sorted_events() const;

  const Program& program_;
  const CommPlan& plan_;
  TraceMetadata metadata_;
  bool network_process_ = false;
  std::vector<bool> host_thread_;               // per rank: a host wait was recorded
  std::vector<nlohmann::json> events_;          // timed events in insertion order
  std::vector<Nanos> event_ts_;                 // their timestamps, parallel to events_
  std::vector<OpTiming> op_timings_;            // per op id
  std::vector<bool> op_done_;                   // per op id: its completion was recorded
  std::vector<WindowTiming> transfer_windows_;  // per transfer
  std::vector<bool> transfer_done_;             // per transfer: its completion was recorded
  std::vector<bool> flow_emitted_;              // per transfer
};

// A trace object ({"traceEvents", "displayTimeUnit", "otherData"}) as text, one event per line.
void write_trace(const nlohmann::json& trace, std::ostream& out);

}  // namespace meshsim
