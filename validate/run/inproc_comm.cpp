#include "validate/run/inproc_comm.hpp"

#include <cstring>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "validate/run/executor.hpp"
#include "validate/tensors/reduce_sum.hpp"

namespace meshsim {
namespace {

// This member's result of collective `c`, computed from every member's (staged) send buffer.
std::vector<std::byte> collective_result(const std::vector<const ResolvedCollective*>& members,
                                         const ResolvedCollective& me) {
  const std::int64_t e = me.element_bytes();
  const auto part = static_cast<std::size_t>(me.count * e);
  const auto n = members.size();
  const auto p = static_cast<std::size_t>(me.position);
  std::vector<std::byte> out;
  switch (me.kind) {
    case CollectiveKind::barrier:
      break;
    case CollectiveKind::all_reduce:
      out.assign(members[0]->send, members[0]->send + part);
      for (std::size_t q = 1; q < n; ++q)
        sum_into(me.dtype, out.data(), members[q]->send, me.count);
      break;
    case CollectiveKind::reduce_scatter:
      out.assign(members[0]->send + p * part, members[0]->send + (p + 1) * part);
      for (std::size_t q = 1; q < n; ++q) {
        sum_into(me.dtype, out.data(), members[q]->send + p * part, me.count);
      }
      break;
    case CollectiveKind::all_gather:
      out.resize(n * part);
      for (std::size_t q = 0; q < n; ++q) {
        if (part > 0) std::memcpy(out.data() + q * part, members[q]->send, part);
      }
      break;
    case CollectiveKind::all_to_all:
      out.resize(n * part);
      for (std::size_t q = 0; q < n; ++q) {
        if (part > 0) std::memcpy(out.data() + q * part, members[q]->send + p * part, part);
      }
      break;
    case CollectiveKind::permute: {
      const auto* from = members[static_cast<std::size_t>(me.recv_from)]->send;
      out.assign(from, from + part);
      break;
    }
    case CollectiveKind::broadcast: {
      const auto* from = members[static_cast<std::size_t>(me.root)]->send;
      out.assign(from, from + part);
      break;
    }
  }
  return out;
}

}  // namespace

InProcessHub::InProcessHub(const CommPlan& plan)
    : transfers_(plan.transfers.size()), collectives_(plan.collectives.size()) {
  for (std::size_t c = 0; c < plan.collectives.size(); ++c) {
    collectives_[c].members.assign(plan.collectives[c].members.size(), nullptr);
  }
}

void InProcessHub::wait(std::unique_lock<std::mutex>& lock, const char* what, auto ready) {
  cv_.wait(lock, [&] { return aborted_ || ready(); });
  if (aborted_) throw ExecutionError(fmt::format("in-process {} aborted", what));
}

void InProcessHub::post_send(const ResolvedTransfer& t) {
  {
    const std::lock_guard lock(mu_);
    auto& s = transfers_[static_cast<std::size_t>(t.transfer)];
    s.data = t.data;
    s.bytes = t.bytes;
    s.posted = true;
  }
  cv_.notify_all();
}

void InProcessHub::wait_sent(const ResolvedTransfer& t) {
  std::unique_lock lock(mu_);
  auto& s = transfers_[static_cast<std::size_t>(t.transfer)];
  wait(lock, "send", [&] { return s.done; });
}

void InProcessHub::receive(const ResolvedTransfer& t) {
  std::unique_lock lock(mu_);
  auto& s = transfers_[static_cast<std::size_t>(t.transfer)];
  wait(lock, "receive", [&] { return s.posted; });
  MESHSIM_CHECK(s.bytes == t.bytes, fmt::format("transfer {}: {} bytes sent, {} expected",
                                                t.transfer, s.bytes, t.bytes));
  const std::byte* from = s.data;
  lock.unlock();
  if (t.bytes > 0) std::memcpy(t.data, from, static_cast<std::size_t>(t.bytes));
  lock.lock();
  s.done = true;
  lock.unlock();
  cv_.notify_all();
}

void InProcessHub::collective(const ResolvedCollective& c) {
  auto& s = collectives_[static_cast<std::size_t>(c.instance)];
  const int n = static_cast<int>(s.members.size());
  std::unique_lock lock(mu_);
  s.members[static_cast<std::size_t>(c.position)] = &c;
  ++s.arrived;
  cv_.notify_all();
  wait(lock, "collective", [&] { return s.arrived == n; });
  const std::vector<const ResolvedCollective*> members = s.members;
  lock.unlock();
  std::vector<std::byte> result = collective_result(members, c);
  lock.lock();
  ++s.finished;
  cv_.notify_all();
  // Nobody writes a result until every member has read the buffers it needs.
  wait(lock, "collective", [&] { return s.finished == n; });
  lock.unlock();
  if (!result.empty()) std::memcpy(c.recv, result.data(), result.size());
}

void InProcessHub::abort() {
  {
    const std::lock_guard lock(mu_);
    aborted_ = true;
  }
  cv_.notify_all();
}

void InProcessCommBackend::run(const Op& op, const RunClock& clock,
                               std::vector<TransferEnd>& recv_ends) {
  if (std::holds_alternative<P2PCall>(op.body)) {
    const ResolvedP2P& p = args_.p2p(op.id);
    for (const auto& t : p.sends) hub_.post_send(t);
    for (const auto& t : p.recvs) {
      hub_.receive(t);
      recv_ends.push_back({t.transfer, clock.now()});
    }
    for (const auto& t : p.sends) hub_.wait_sent(t);
    return;
  }
  const ResolvedCollective& c = args_.collective(op.id);
  if (c.stage_from != nullptr && c.stage_bytes > 0) {
    std::memcpy(c.send, c.stage_from, static_cast<std::size_t>(c.stage_bytes));
  }
  hub_.collective(c);
}

}  // namespace meshsim
