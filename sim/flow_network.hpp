#pragma once
// The flow-level network (ARCHITECTURE.md §3): transfers are flows over ports (each GPU's NVLink
// port and NIC, per direction; optionally node uplinks); active flows share every port max-min
// fairly, and rates are recomputed only when a flow starts or ends.
//
// Incremental recomputation: a max-min fair allocation decomposes over the connected components
// of the graph linking gangs to the ports they load, so when gangs start or end only the component
// reached from their ports (through active gangs sharing ports, transitively) is refilled; every
// other gang keeps its rate. Within the component the filling runs in the same order (gangs in
// start order, ports by level then id) as a refill of all gangs, so the rates are the same bit for
// bit (tests/sim/test_flow_network compares both on random gang sets). `incremental = false`
// refills everything, for those tests.
//
// A flow here is a *gang*: a set of identical unit flows that start and end together, as the
// hop-flows of one collective do. `usage` says how many unit flows (possibly fractional) load each
// port; the gang moves `work` bytes per unit flow at one rate r, loading port p with usage_p * r.
// A p2p transfer is a gang of one unit flow.
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "sim/time.hpp"

namespace meshsim {

using PortId = std::int32_t;

struct PortLoad {
  PortId port = 0;
  double units = 0;  // unit flows of the gang crossing this port
};

// What caused a flow, for attributing port traffic: a collective kind's index, or p2p.
inline constexpr std::uint8_t kFlowCauses = 8;
inline constexpr std::uint8_t kP2PCause = 7;
inline constexpr int kMaxLinkClasses = 4;

struct GangFlow {
  std::vector<PortLoad> usage;
  double work = 0;                 // bytes per unit flow
  Nanos latency = 0;               // paid before the bytes move (not modeled as port load)
  std::uint8_t cause = kP2PCause;  // CollectiveKind index, or kP2PCause
};

// Total bandwidth in use per link class from `time` until the next sample (bytes per second).
struct LinkRateSample {
  Nanos time = 0;
  std::vector<double> bytes_per_s;
};

struct PortStats {
  double bytes = 0;  // bytes carried
  std::array<double, kFlowCauses> bytes_by_cause{};
  Nanos busy = 0;  // time with at least one active flow
};

class FlowNetwork {
 public:
  static constexpr Nanos kNever = std::numeric_limits<Nanos>::max();

  // Capacities in bytes per second.
  explicit FlowNetwork(std::vector<double> port_capacity, bool incremental = true);

  // Starts a gang at `now` (its latency already paid). `tag` comes back on completion.
  void start(std::int32_t tag, const GangFlow& gang, Nanos now);
  // Earliest completion among active gangs, kNever when none is active.
  Nanos next_completion() const { return next_completion_; }
  // Advances to `now` (<= next_completion()) and appends the tags of gangs finishing then.
  void finish_due(Nanos now, std::vector<std::int32_t>& done);

  // Record, at every rate change, the bandwidth in use per class of port (class_of[port] <
  // classes), summed over the ports of the class; a port counts `multiplicity[port]` times (the
  // ports of the whole network it stands for in a folded run).
  void sample_classes(std::vector<std::uint8_t> class_of, int classes,
                      std::vector<double> multiplicity);
  const std::vector<LinkRateSample>& samples() const { return samples_; }

  std::size_t active() const { return order_.size(); }
  // Current rate (bytes per ns per unit flow) of the active gang `tag`, -1 when none is active.
  double rate_of(std::int32_t tag) const;
  const std::vector<PortStats>& stats() const { return stats_; }
  std::uint64_t recomputations() const { return recomputations_; }

 private:
  struct Active {
    std::int32_t tag = 0;
    const GangFlow* gang = nullptr;
    double remaining = 0;  // bytes per unit flow still to move
    double rate = 0;       // bytes per ns per unit flow
    Nanos done_at = kNever;
    std::array<double, kMaxLinkClasses> class_units{};  // unit flows per link class, for samples
  };

  void advance(Nanos now);
  // Refills the component of the gangs loading `seeds` (or every gang), then completion times.
  void recompute_rates(Nanos now, const std::vector<PortId>& seeds);
  void component(const std::vector<PortId>& seeds);
  void fill();
  void record_sample(Nanos now);
  void attach(std::int32_t slot);
  void detach(std::int32_t slot);

  std::vector<double> capacity_;  // bytes per ns
  bool incremental_;
  std::vector<Active> slots_;        // active gangs by slot; a finished slot is reused
  std::vector<std::int32_t> free_;   // free slots
  std::vector<std::int32_t> order_;  // active slots in start order
  std::vector<std::int32_t> rank_;   // per slot: its position in order_
  std::vector<std::vector<std::int32_t>> port_users_;  // active slots per port
  std::vector<PortId> busy_;                           // ports with an active gang
  std::vector<std::int32_t> busy_at_;                  // per port: its index in busy_, or -1
  std::vector<PortStats> stats_;
  Nanos now_ = 0;
  Nanos next_completion_ = kNever;
  std::uint64_t recomputations_ = 0;
  std::vector<std::uint8_t> class_of_;
  std::vector<double> multiplicity_;
  int classes_ = 0;
  std::vector<LinkRateSample> samples_;
  // scratch for recompute_rates
  std::vector<std::int32_t> comp_;  // the component's slots, in start order
  std::vector<char> slot_seen_, port_seen_;
  std::vector<PortId> seen_ports_;
  std::vector<double> residual_, demand_;
  std::vector<std::vector<std::pair<std::int32_t, double>>> users_;
  std::vector<PortId> touched_;
};

}  // namespace meshsim
