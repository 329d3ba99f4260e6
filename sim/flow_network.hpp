#pragma once
// The flow-level network (ARCHITECTURE.md §3): transfers are flows over ports (each GPU's NVLink
// port and NIC, per direction; optionally node uplinks); active flows share every port max-min
// fairly, and rates are recomputed only when a flow starts or ends.
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
  explicit FlowNetwork(std::vector<double> port_capacity);

  // Starts a gang at `now` (its latency already paid). `tag` comes back on completion.
  void start(std::int32_t tag, const GangFlow& gang, Nanos now);
  // Earliest completion among active gangs, kNever when none is active.
  Nanos next_completion() const { return next_completion_; }
  // Advances to `now` (<= next_completion()) and appends the tags of gangs finishing then.
  void finish_due(Nanos now, std::vector<std::int32_t>& done);

  // Record, at every rate change, the bandwidth in use per class of port (class_of[port] <
  // classes).
  void sample_classes(std::vector<std::uint8_t> class_of, int classes);
  const std::vector<LinkRateSample>& samples() const { return samples_; }

  std::size_t active() const { return active_.size(); }
  const std::vector<PortStats>& stats() const { return stats_; }
  std::uint64_t recomputations() const { return recomputations_; }

 private:
  struct Active {
    std::int32_t tag;
    const GangFlow* gang;
    double remaining;  // bytes per unit flow still to move
    double rate = 0;   // bytes per ns per unit flow
    Nanos done_at = kNever;
  };

  void advance(Nanos now);
  void recompute_rates(Nanos now);

  std::vector<double> capacity_;  // bytes per ns
  std::vector<Active> active_;
  std::vector<PortStats> stats_;
  Nanos now_ = 0;
  Nanos next_completion_ = kNever;
  std::uint64_t recomputations_ = 0;
  std::vector<std::uint8_t> class_of_;
  int classes_ = 0;
  std::vector<LinkRateSample> samples_;
  // scratch for recompute_rates
  std::vector<double> residual_, demand_;
  std::vector<std::vector<std::pair<std::int32_t, double>>> users_;
  std::vector<PortId> touched_;
};

}  // namespace meshsim
