#include "sim/cost_model.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "sim/compute_model.hpp"
#include "sim/error.hpp"
#include "sim/network_analytical.hpp"

namespace meshsim {
namespace {

// A compute call's time depends on its kind, dtype, function, quantization, SM share and shape,
// not on its tensor slots. GEMM and vector calls repeat per microbatch and layer, so each distinct
// one is costed once (issue 22: costs once per distinct call); attention calls, whose shapes carry
// token ranges, are costed each.
struct CallKey {
  std::array<std::int64_t, 4> dims{};  // gemm: m, n, k, flags; vector: elements, operands, mask
  std::uint64_t tag = 0;               // kind, dtype, fn, quant, shape alternative
  double sm_share = 1.0;
  bool operator==(const CallKey&) const = default;
};

struct CallKeyHash {
  std::size_t operator()(const CallKey& k) const {
    std::uint64_t h = k.tag * 0x9E3779B97F4A7C15ull;
    for (const std::int64_t d : k.dims) h = (h ^ static_cast<std::uint64_t>(d)) * 0x100000001B3ull;
    return static_cast<std::size_t>(h ^ std::bit_cast<std::uint64_t>(k.sm_share));
  }
};

// cost_key reads every field but the slots: these bindings stop the build when a field is added
// (extend the key with it).
[[maybe_unused]] void key_covers_every_field(const KernelCall& call, const GemmShape& gemm,
                                             const VectorShape& vector) {
  [[maybe_unused]] const auto& [kind, dtype, shape, inputs, outputs, fn, quant, sm_share] = call;
  [[maybe_unused]] const auto& [m, n, k, trans_a, trans_b, accumulate] = gemm;
  [[maybe_unused]] const auto& [elements, operands, mask_bytes] = vector;
}

std::optional<CallKey> cost_key(const KernelCall& call) {
  CallKey key;
  key.tag = static_cast<std::uint64_t>(call.kind) | static_cast<std::uint64_t>(call.dtype) << 8 |
            static_cast<std::uint64_t>(call.fn) << 16 |
            static_cast<std::uint64_t>(call.quant) << 24 |
            static_cast<std::uint64_t>(call.shape.index()) << 32;
  key.sm_share = call.sm_share;
  if (const auto* g = std::get_if<GemmShape>(&call.shape)) {
    key.dims = {g->m, g->n, g->k,
                (g->trans_a ? 1 : 0) | (g->trans_b ? 2 : 0) | (g->accumulate ? 4 : 0)};
    return key;
  }
  if (const auto* v = std::get_if<VectorShape>(&call.shape)) {
    key.dims = {v->elements, v->operands, v->mask_bytes, 0};
    return key;
  }
  return std::nullopt;
}

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
  std::unordered_map<CallKey, Nanos, CallKeyHash> costed;
  for (const auto& op : program.ops) {
    const auto* call = std::get_if<KernelCall>(&op.body);
    if (call == nullptr) {
      d.ops.push_back(0);
    } else if (op.fixed_ns >= 0) {
      d.ops.push_back(op.fixed_ns);
    } else if (const auto key = cost_key(*call)) {
      const auto [it, fresh] = costed.try_emplace(*key, 0);
      if (fresh) it->second = compute_time(hw, *call);
      d.ops.push_back(it->second);
    } else {
      d.ops.push_back(compute_time(hw, *call));
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
