#include "sim/cost_model.hpp"

#include <fmt/format.h>

#include "sim/compute_model.hpp"
#include "sim/error.hpp"
#include "sim/network_analytical.hpp"

namespace meshsim {

Durations estimate_durations(const Program& program, const CommPlan& plan,
                             const HardwareProfile& hw) {
  Durations d;
  d.ops.reserve(program.ops.size());
  for (const auto& op : program.ops) {
    const auto* call = std::get_if<KernelCall>(&op.body);
    d.ops.push_back(call != nullptr ? compute_time(hw, *call) : Nanos{0});
  }

  d.transfers.reserve(plan.transfers.size());
  for (const auto& t : plan.transfers) {
    const bool same_node = program.mesh.node_of(t.src) == program.mesh.node_of(t.dst);
    d.transfers.push_back(seconds_to_ns(p2p_cost(hw.network, same_node, t.bytes).seconds));
  }

  d.collectives.reserve(plan.collectives.size());
  for (const auto& inst : plan.collectives) {
    MESHSIM_CHECK(inst.group >= 0 && static_cast<std::size_t>(inst.group) < program.groups.size(),
                  fmt::format("collective instance on unknown group {}", inst.group));
    const auto placement =
        placement_of(program.mesh, program.groups[static_cast<std::size_t>(inst.group)].ranks);
    d.collectives.push_back(
        seconds_to_ns(collective_cost(hw.network, inst.kind, placement, inst.bytes).seconds));
  }
  return d;
}

}  // namespace meshsim
