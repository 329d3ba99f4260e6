#include "validate/mpi/mpi_comm_backend.hpp"

#include <climits>
#include <cstring>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "validate/mpi/mpi_check.hpp"
#include "validate/mpi/mpi_collective_call.hpp"
#include "validate/mpi/mpi_types.hpp"
#include "validate/run/executor.hpp"
#include "validate/run/issue_order.hpp"

namespace meshsim {

struct MpiCommBackend::Impl {
  const Program& program;
  const CommArgs& args;
  bool serialize;
  std::mutex mpi_mu;  // held around every MPI call when serialize
  MPI_Comm p2p = MPI_COMM_NULL;
  std::vector<MPI_Comm> groups;  // by group id; MPI_COMM_NULL where this rank is not a member
  MpiSumOps sums;
  GroupIssueOrder order;
  int tag_ub = 32767;

  Impl(const Program& p, const CommArgs& a, const MpiSession& session, bool force_serialized)
      : program(p),
        args(a),
        serialize(force_serialized || !session.thread_multiple()),
        order(p.groups.size()) {
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &p2p));
    int* ub = nullptr;
    int flag = 0;
    MPI_CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
    if (flag != 0 && ub != nullptr) tag_ub = *ub;
    MPI_Group world = MPI_GROUP_NULL;
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    groups.assign(p.groups.size(), MPI_COMM_NULL);
    for (const Group& g : p.groups) {
      bool member = false;
      for (int r : g.ranks) member = member || r == session.rank();
      if (!member) continue;
      MPI_Group group = MPI_GROUP_NULL;
      MPI_CHECK(MPI_Group_incl(world, static_cast<int>(g.ranks.size()), g.ranks.data(), &group));
      MPI_CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, group, tag(g.id),
                                      &groups[static_cast<std::size_t>(g.id)]));
      MPI_CHECK(MPI_Group_free(&group));
    }
    MPI_CHECK(MPI_Group_free(&world));
  }

  ~Impl() {
    for (auto& c : groups) {
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    }
    if (p2p != MPI_COMM_NULL) MPI_Comm_free(&p2p);
  }

  // Runs `f` (MPI calls) under the mutex when MPI is not thread-multiple.
  template <typename F>
  void call(F&& f) {
    if (serialize) {
      const std::lock_guard lock(mpi_mu);
      f();
    } else {
      f();
    }
  }

  // Waits for every request; on_done(i) as request i completes.
  template <typename OnDone>
  void wait_all(std::vector<MPI_Request>& requests, OnDone&& on_done) {
    const int n = static_cast<int>(requests.size());
    std::vector<int> indices(requests.size());
    int left = n;
    while (left > 0) {
      int done = 0;
      if (serialize) {
        {
          const std::lock_guard lock(mpi_mu);
          MPI_CHECK(MPI_Testsome(n, requests.data(), &done, indices.data(), MPI_STATUSES_IGNORE));
        }
        if (done == 0) std::this_thread::yield();
      } else {
        MPI_CHECK(MPI_Waitsome(n, requests.data(), &done, indices.data(), MPI_STATUSES_IGNORE));
      }
      if (done == MPI_UNDEFINED) break;
      for (int k = 0; k < done; ++k) on_done(indices[static_cast<std::size_t>(k)]);
      left -= done;
    }
  }

  void run_p2p(const ResolvedP2P& p, const RunClock& clock, std::vector<TransferEnd>& ends) {
    std::vector<MPI_Request> requests(p.sends.size() + p.recvs.size(), MPI_REQUEST_NULL);
    call([&] {
      for (std::size_t i = 0; i < p.recvs.size(); ++i) {
        const auto& t = p.recvs[i];
        MPI_CHECK(MPI_Irecv(t.data, byte_count(t), MPI_BYTE, t.peer, tag_of(t), p2p,
                            &requests[p.sends.size() + i]));
      }
      for (std::size_t i = 0; i < p.sends.size(); ++i) {
        const auto& t = p.sends[i];
        MPI_CHECK(MPI_Isend(t.data, byte_count(t), MPI_BYTE, t.peer, tag_of(t), p2p, &requests[i]));
      }
    });
    wait_all(requests, [&](int i) {
      const auto u = static_cast<std::size_t>(i);
      if (u >= p.sends.size()) ends.push_back({p.recvs[u - p.sends.size()].transfer, clock.now()});
    });
  }

  void run_collective(const ResolvedCollective& c) {
    if (c.stage_from != nullptr && c.stage_bytes > 0) {
      std::memcpy(c.send, c.stage_from, static_cast<std::size_t>(c.stage_bytes));
    }
    const MPI_Comm comm = groups[static_cast<std::size_t>(c.group)];
    MESHSIM_CHECK(comm != MPI_COMM_NULL, "collective on a group without this rank");
    if (!order.wait_turn(c.group, c.ordinal)) throw ExecutionError("MPI backend aborted");
    MpiPendingCollective pending;
    try {
      call([&] { start_collective(c, comm, sums.sum(c.dtype), tag(c.ordinal), pending); });
    } catch (...) {
      order.issued(c.group);
      throw;
    }
    order.issued(c.group);
    wait_all(pending.requests, [](int) {});
    if (pending.move_bytes > 0 && pending.move_to != pending.move_from) {
      std::memmove(pending.move_to, pending.move_from, pending.move_bytes);
    }
  }

  // A message tag from a non-negative number, wrapped into [0, MPI_TAG_UB].
  int tag(std::int64_t n) const {
    return static_cast<int>(n % (static_cast<std::int64_t>(tag_ub) + 1));
  }
  int tag_of(const ResolvedTransfer& t) const { return tag(t.transfer); }

  static int byte_count(const ResolvedTransfer& t) {
    if (t.bytes > INT_MAX) {
      throw InputError(
          fmt::format("a transfer of {} bytes exceeds MPI's int count (2^31 - 1)", t.bytes));
    }
    return static_cast<int>(t.bytes);
  }
};

MpiCommBackend::MpiCommBackend(const Program& program, const CommArgs& args,
                               const MpiSession& session, bool force_serialized)
    : impl_(std::make_unique<Impl>(program, args, session, force_serialized)) {}

MpiCommBackend::~MpiCommBackend() = default;

void MpiCommBackend::run(const Op& op, const RunClock& clock, std::vector<TransferEnd>& recv_ends) {
  if (std::holds_alternative<P2PCall>(op.body)) {
    impl_->run_p2p(impl_->args.p2p(op.id), clock, recv_ends);
  } else {
    impl_->run_collective(impl_->args.collective(op.id));
  }
}

void MpiCommBackend::abort() {
  impl_->order.abort();
}

}  // namespace meshsim
