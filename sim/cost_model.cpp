#include "sim/cost_model.hpp"

#include <optional>

#include <fmt/format.h>

#include "sim/compute_model.hpp"
#include "sim/error.hpp"
#include "sim/network_analytical.hpp"

namespace meshsim {
namespace {

// A comm op's fixed time: the first side's that has one, else -1.
Nanos fixed_time_of(const Program& program, OpId a, OpId b) {
  const Nanos fa = program.ops[static_cast<std::size_t>(a)].fixed_ns;
  return fa >= 0 ? fa : program.ops[static_cast<std::size_t>(b)].fixed_ns;
}

}  // namespace

Durations estimate_durations(const Program& program, const CommPlan& plan,
                             const HardwareProfile& hw) {
  Durations d;
  d.ops.reserve(program.ops.size());
  for (const auto& op : program.ops) {
    const auto* call = std::get_if<KernelCall>(&op.body);
    if (call == nullptr) {
      d.ops.push_back(0);
    } else {
      d.ops.push_back(op.fixed_ns >= 0 ? op.fixed_ns : compute_time(hw, *call));
    }
  }

  d.transfers.reserve(plan.transfers.size());
  for (const auto& t : plan.transfers) {
    const Nanos fixed = fixed_time_of(program, t.send_op, t.recv_op);
    if (fixed >= 0) {
      d.transfers.push_back(fixed);
      continue;
    }
    const bool same_node = program.mesh.node_of(t.src) == program.mesh.node_of(t.dst);
    d.transfers.push_back(seconds_to_ns(p2p_cost(hw.network, same_node, t.bytes).seconds, [&] {
      return fmt::format("a transfer of {} bytes with {}", t.bytes, describe_network(hw.network));
    }));
  }

  d.collectives.reserve(plan.collectives.size());
  // Each group's placement once (a folded group is placed as the whole group it stands for).
  std::vector<std::optional<GroupPlacement>> placements(program.groups.size());
  for (const auto& inst : plan.collectives) {
    MESHSIM_CHECK(inst.group >= 0 && static_cast<std::size_t>(inst.group) < program.groups.size(),
                  fmt::format("collective instance on unknown group {}", inst.group));
    const Nanos fixed = fixed_time_of(program, inst.members.front(), inst.members.front());
    if (fixed >= 0) {
      d.collectives.push_back(fixed);
      continue;
    }
    auto& placement = placements[static_cast<std::size_t>(inst.group)];
    if (!placement) {
      const Group& g = program.groups[static_cast<std::size_t>(inst.group)];
      placement = placement_of(program.mesh, g.timed_as.empty() ? g.ranks : g.timed_as);
    }
    d.collectives.push_back(seconds_to_ns(
        collective_cost(hw.network, inst.kind, *placement, inst.bytes, inst.algo).seconds, [&] {
          return fmt::format("{} of {} bytes with {}", to_string(inst.kind), inst.bytes,
                             describe_network(hw.network));
        }));
  }
  d.comm_interference = hw.comm_interference;
  if (program.host_issue && hw.host_op > 0) {  // the host issue clock: the profile's time per op
    const Nanos host = seconds_to_ns(hw.host_op, [] { return std::string("host_op_us"); });
    d.host.assign(program.ops.size(), host);
  }
  return d;
}

}  // namespace meshsim
