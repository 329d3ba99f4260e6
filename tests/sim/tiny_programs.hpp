#pragma once
// Small hand-built Programs for the sim tests.
#include <utility>

#include "sim/comm_plan.hpp"
#include "sim/engine.hpp"
#include "sim/program.hpp"

namespace meshsim::testing {

inline KernelCall vector_kernel(std::int64_t elements = 1) {
  return KernelCall{KernelKind::elementwise, DType::fp32, VectorShape{elements}, {}, {}};
}

inline P2PCall send_to(int peer, std::int64_t bytes, int tag = 0) {
  return P2PCall{{Transfer{peer, bytes, tag, -1}}, {}};
}
inline P2PCall recv_from(int peer, std::int64_t bytes, int tag = 0) {
  return P2PCall{{}, {Transfer{peer, bytes, tag, -1}}};
}
inline P2PCall exchange(int to, int from, std::int64_t bytes, int tag = 0) {
  return P2PCall{{Transfer{to, bytes, tag, -1}}, {Transfer{from, bytes, tag, -1}}};
}

// Durations with every compute op taking `compute_ns`, every transfer `transfer_ns` and every
// collective `collective_ns`, then per-op overrides.
inline Durations uniform_durations(const Program& p, const CommPlan& plan, Nanos compute_ns,
                                   Nanos transfer_ns, Nanos collective_ns = 0) {
  Durations d;
  d.ops.assign(p.ops.size(), 0);
  for (const auto& op : p.ops) {
    if (op.is_compute()) d.ops[static_cast<std::size_t>(op.id)] = compute_ns;
  }
  d.transfers.assign(plan.transfers.size(), transfer_ns);
  d.collectives.assign(plan.collectives.size(), collective_ns);
  return d;
}

// A Program simulated with uniform durations (and, with host_ns >= 0, that host time per op).
struct Ran {
  Program program;
  CommPlan plan;
  Timeline timeline;
};

inline Ran run(Program p, Nanos compute_ns, Nanos transfer_ns, Nanos collective_ns = 0,
               Nanos host_ns = -1) {
  Ran r{std::move(p), {}, {}};
  r.plan = validate_program(r.program);
  Durations d = uniform_durations(r.program, r.plan, compute_ns, transfer_ns, collective_ns);
  if (host_ns >= 0) d.host.assign(r.program.ops.size(), host_ns);
  r.timeline = simulate(r.program, r.plan, d);
  return r;
}

}  // namespace meshsim::testing
