#include "sim/engine.hpp"

#include <algorithm>
#include <queue>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

enum class OpKind : std::uint8_t { compute, p2p, collective };
enum class EventType : std::uint8_t { op_done, transfer_done, collective_done };

struct Event {
  Nanos time;
  std::uint64_t seq;
  std::int32_t id;
  EventType type;
};
struct EventLater {
  bool operator()(const Event& a, const Event& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

constexpr std::int32_t kNone = -1;

// One run of the readiness rules of design §2 over flat arrays built from the Program.
class Run {
 public:
  Run(const Program& p, const CommPlan& plan, const Durations& d, const EngineSignals& s)
      : program_(p), plan_(plan), durations_(d), signals_(s) {
    build();
  }

  Timeline execute() {
    for (std::size_t i = 0; i < n_; ++i) {
      if (pending_[i] == 0) ready_.push_back(static_cast<std::int32_t>(i));
    }
    drain_ready(0);
    release_parked(0);
    while (!heap_.empty()) {
      const Nanos t = heap_.top().time;
      while (!heap_.empty() && heap_.top().time == t) {
        const Event e = heap_.top();
        heap_.pop();
        ++timeline_.events;
        handle(e);
        drain_ready(t);
      }
      release_parked(t);
    }
    for (std::size_t i = 0; i < n_; ++i) {
      MESHSIM_CHECK(timeline_.ops[i].end >= 0,
                    fmt::format("engine stalled before {} completed",
                                describe_op(program_, static_cast<OpId>(i))));
      timeline_.makespan = std::max(timeline_.makespan, timeline_.ops[i].end);
    }
    return std::move(timeline_);
  }

 private:
  void build() {
    n_ = program_.ops.size();
    MESHSIM_CHECK(durations_.ops.size() == n_, "durations.ops size differs from op count");
    MESHSIM_CHECK(durations_.transfers.size() == plan_.transfers.size(),
                  "durations.transfers size differs from transfer count");
    MESHSIM_CHECK(durations_.collectives.size() == plan_.collectives.size(),
                  "durations.collectives size differs from collective count");
    single_queue_ = program_.single_queue;
    const auto ranks = static_cast<std::size_t>(program_.world_size());
    const std::size_t n_streams = program_.streams.size();

    pending_.assign(n_, 0);
    stream_next_.assign(n_, kNone);
    launch_next_.assign(n_, kNone);
    kind_.resize(n_);
    rank_.resize(n_);
    xfers_left_.assign(n_, 0);
    std::vector<std::int32_t> last_on_stream(ranks * n_streams, kNone);
    std::vector<std::int32_t> last_launched(ranks, kNone);
    std::vector<std::int32_t> dependents_count(n_ + 1, 0);
    for (std::size_t i = 0; i < n_; ++i) {
      const Op& op = program_.ops[i];
      const auto id = static_cast<std::int32_t>(i);
      rank_[i] = op.rank;
      kind_[i] = op.is_compute()                            ? OpKind::compute
                 : std::holds_alternative<P2PCall>(op.body) ? OpKind::p2p
                                                            : OpKind::collective;
      if (kind_[i] == OpKind::compute) {
        MESHSIM_CHECK(durations_.ops[i] >= 0, "negative compute duration");
      }
      auto& prev = last_on_stream[static_cast<std::size_t>(op.rank) * n_streams +
                                  static_cast<std::size_t>(op.stream)];
      if (prev != kNone) {
        stream_next_[static_cast<std::size_t>(prev)] = id;
        ++pending_[i];
      }
      prev = id;
      auto& launched = last_launched[static_cast<std::size_t>(op.rank)];
      if (single_queue_ && launched != kNone) {
        launch_next_[static_cast<std::size_t>(launched)] = id;
        ++pending_[i];
      }
      launched = id;
      pending_[i] += static_cast<std::int32_t>(op.deps.size());
      for (OpId d : op.deps) ++dependents_count[static_cast<std::size_t>(d)];
      if (kind_[i] == OpKind::p2p) {
        xfers_left_[i] = plan_.op_transfer_begin[i + 1] - plan_.op_transfer_begin[i];
      }
    }
    // Dependents in CSR form.
    dependents_begin_.assign(n_ + 1, 0);
    for (std::size_t i = 0; i < n_; ++i) {
      dependents_begin_[i + 1] = dependents_begin_[i] + dependents_count[i];
    }
    dependents_.resize(static_cast<std::size_t>(dependents_begin_[n_]));
    std::vector<std::int32_t> fill(dependents_begin_.begin(), dependents_begin_.end() - 1);
    for (std::size_t i = 0; i < n_; ++i) {
      for (OpId d : program_.ops[i].deps) {
        dependents_[static_cast<std::size_t>(fill[static_cast<std::size_t>(d)]++)] =
            static_cast<std::int32_t>(i);
      }
    }
    xfer_ready_.assign(plan_.transfers.size(), 0);
    coll_arrived_.assign(plan_.collectives.size(), 0);
    running_compute_.assign(ranks, 0);
    parked_.resize(ranks);
    parked_cause_.assign(ranks, kNone);

    timeline_.ops.assign(n_, OpTiming{});
    timeline_.causes.assign(n_, OpCause{});
    timeline_.transfers.assign(plan_.transfers.size(), WindowTiming{});
    timeline_.collectives.assign(plan_.collectives.size(), WindowTiming{});
    timeline_.completed_by.assign(n_, kNone);
    ready_.reserve(n_);
    std::vector<Event> storage;
    storage.reserve(std::min<std::size_t>(n_, 1u << 20));
    heap_ = decltype(heap_)(EventLater{}, std::move(storage));
  }

  void push(Nanos time, std::int32_t id, EventType type) {
    heap_.push(Event{time, seq_++, id, type});
  }

  void satisfy(std::int32_t op, std::int32_t by, bool by_dispatch) {
    if (--pending_[static_cast<std::size_t>(op)] == 0) {
      timeline_.causes[static_cast<std::size_t>(op)] = OpCause{by, by_dispatch};
      ready_.push_back(op);
    }
  }

  void drain_ready(Nanos t) {
    while (ready_head_ < ready_.size()) {
      const std::int32_t op = ready_[ready_head_++];
      const auto i = static_cast<std::size_t>(op);
      if (!single_queue_ && kind_[i] != OpKind::compute) {
        // Several hardware queues: comm waits until no compute kernel fills the device; it is
        // considered after every compute kernel that became ready at this instant.
        const auto r = static_cast<std::size_t>(rank_[i]);
        if (parked_[r].empty()) parked_ranks_.push_back(rank_[i]);
        parked_[r].push_back(op);
        continue;
      }
      dispatch(op, t);
    }
    ready_.clear();
    ready_head_ = 0;
  }

  // Several hardware queues: dispatch the parked comm kernels of every rank whose device is free
  // of compute, repeating while doing so frees more work at this instant.
  void release_parked(Nanos t) {
    bool progress = true;
    while (progress && !parked_ranks_.empty()) {
      progress = false;
      std::vector<int> ranks;
      ranks.swap(parked_ranks_);
      for (int r : ranks) {
        const auto ri = static_cast<std::size_t>(r);
        if (running_compute_[ri] > 0) {
          parked_ranks_.push_back(r);
          continue;
        }
        std::vector<std::int32_t> ops;
        ops.swap(parked_[ri]);
        for (std::int32_t op : ops) {
          if (parked_cause_[ri] != kNone) {
            timeline_.causes[static_cast<std::size_t>(op)] = OpCause{parked_cause_[ri], false};
          }
          dispatch(op, t);
        }
        parked_cause_[ri] = kNone;
        progress = true;
      }
      drain_ready(t);
    }
  }

  void dispatch(std::int32_t op, Nanos t) {
    const auto i = static_cast<std::size_t>(op);
    timeline_.ops[i].start = t;
    if (launch_next_[i] != kNone) satisfy(launch_next_[i], op, true);
    switch (kind_[i]) {
      case OpKind::compute:
        ++running_compute_[static_cast<std::size_t>(rank_[i])];
        push(t + durations_.ops[i], op, EventType::op_done);
        break;
      case OpKind::p2p: {
        const auto b = static_cast<std::size_t>(plan_.op_transfer_begin[i]);
        const auto e = static_cast<std::size_t>(plan_.op_transfer_begin[i + 1]);
        if (b == e) push(t, op, EventType::op_done);
        for (std::size_t k = b; k < e; ++k) {
          const std::int32_t tr = plan_.op_transfers[k];
          const auto ti = static_cast<std::size_t>(tr);
          if (++xfer_ready_[ti] == 2) {
            timeline_.transfers[ti].start = t;
            timeline_.transfers[ti].started_by = op;
            push(t + durations_.transfers[ti], tr, EventType::transfer_done);
          }
        }
        break;
      }
      case OpKind::collective: {
        const std::int32_t c = plan_.op_collective[i];
        const auto ci = static_cast<std::size_t>(c);
        if (++coll_arrived_[ci] ==
            static_cast<std::int32_t>(plan_.collectives[ci].members.size())) {
          timeline_.collectives[ci].start = t;
          timeline_.collectives[ci].started_by = op;
          push(t + durations_.collectives[ci], c, EventType::collective_done);
        }
        break;
      }
    }
  }

  void complete(std::int32_t op, Nanos t) {
    const auto i = static_cast<std::size_t>(op);
    timeline_.ops[i].end = t;
    if (kind_[i] == OpKind::compute) {
      const auto r = static_cast<std::size_t>(rank_[i]);
      if (--running_compute_[r] == 0 && !parked_[r].empty()) parked_cause_[r] = op;
    }
    if (stream_next_[i] != kNone) satisfy(stream_next_[i], op, false);
    const auto b = static_cast<std::size_t>(dependents_begin_[i]);
    const auto e = static_cast<std::size_t>(dependents_begin_[i + 1]);
    for (std::size_t k = b; k < e; ++k) satisfy(dependents_[k], op, false);
    if (signals_.on_op_complete) signals_.on_op_complete(op, timeline_.ops[i]);
  }

  void complete_comm(std::int32_t op, Nanos t, Nanos comm_start, std::int32_t by) {
    const auto i = static_cast<std::size_t>(op);
    timeline_.ops[i].comm_start = comm_start;
    timeline_.completed_by[i] = by;
    complete(op, t);
  }

  void handle(const Event& e) {
    switch (e.type) {
      case EventType::op_done:
        if (kind_[static_cast<std::size_t>(e.id)] == OpKind::p2p) {
          complete_comm(e.id, e.time, e.time, kNone);
        } else {
          complete(e.id, e.time);
        }
        break;
      case EventType::transfer_done: {
        const auto ti = static_cast<std::size_t>(e.id);
        auto& w = timeline_.transfers[ti];
        w.end = e.time;
        const auto& tr = plan_.transfers[ti];
        for (OpId side : {tr.send_op, tr.recv_op}) {
          const auto si = static_cast<std::size_t>(side);
          auto& ot = timeline_.ops[si];
          if (ot.comm_start < 0 || w.start < ot.comm_start) ot.comm_start = w.start;
          if (--xfers_left_[si] == 0) complete_comm(side, e.time, ot.comm_start, e.id);
        }
        if (signals_.on_transfer_complete) signals_.on_transfer_complete(e.id, w);
        break;
      }
      case EventType::collective_done: {
        const auto ci = static_cast<std::size_t>(e.id);
        auto& w = timeline_.collectives[ci];
        w.end = e.time;
        for (OpId m : plan_.collectives[ci].members) complete_comm(m, e.time, w.start, e.id);
        break;
      }
    }
  }

  const Program& program_;
  const CommPlan& plan_;
  const Durations& durations_;
  const EngineSignals& signals_;
  std::size_t n_ = 0;
  bool single_queue_ = true;

  std::vector<std::int32_t> pending_;
  std::vector<std::int32_t> stream_next_;
  std::vector<std::int32_t> launch_next_;
  std::vector<std::int32_t> dependents_begin_;
  std::vector<std::int32_t> dependents_;
  std::vector<OpKind> kind_;
  std::vector<int> rank_;
  std::vector<std::int32_t> xfers_left_;
  std::vector<std::uint8_t> xfer_ready_;
  std::vector<std::int32_t> coll_arrived_;
  std::vector<std::int32_t> running_compute_;
  std::vector<std::vector<std::int32_t>> parked_;
  std::vector<std::int32_t> parked_cause_;
  std::vector<int> parked_ranks_;

  std::vector<std::int32_t> ready_;
  std::size_t ready_head_ = 0;
  std::priority_queue<Event, std::vector<Event>, EventLater> heap_;
  std::uint64_t seq_ = 0;
  Timeline timeline_;
};

}  // namespace

Timeline simulate(const Program& program, const CommPlan& plan, const Durations& durations,
                  const EngineSignals& signals) {
  return Run(program, plan, durations, signals).execute();
}

}  // namespace meshsim
