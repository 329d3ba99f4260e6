#include "sim/engine.hpp"

#include "sim/engine_index.hpp"
#include "sim/host_clock.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <queue>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

enum class EventType : std::uint8_t {
  op_done,
  transfer_done,
  collective_done,
  transfer_flow_start,    // latency paid: the transfer's bytes enter the flow network
  collective_flow_start,  // same for a collective instance
  op_issued,              // the host issued an op that was ready before (host issue clock)
};

struct Event {
  Nanos time;
  std::uint64_t seq;
  std::int32_t id;  // internal op index, transfer or collective instance
  EventType type;
};
struct EventLater {
  bool operator()(const Event& a, const Event& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

constexpr std::int32_t kNone = kNoOp;

// One run of the readiness rules of ARCHITECTURE.md §2. Ops are renumbered internally by (position
// in their rank's launch order, rank), the order in which a step advances across ranks, so the
// records an event touches sit close together; the Timeline is indexed by Program op id.
class Run {
 public:
  Run(const Program& p, const CommPlan& plan, const Durations& d, const EngineSignals& s,
      const FlowPlan* flows)
      : program_(p), plan_(plan), durations_(d), signals_(s), flows_(flows) {
    build();
    if (flows_ != nullptr) {
      MESHSIM_CHECK(flows_->transfers.size() == plan_.transfers.size() &&
                        flows_->collectives.size() == plan_.collectives.size(),
                    "flow plan does not match the comm plan");
      network_.emplace(flows_->port_capacity);
      network_->sample_classes(flows_->port_class,
                               static_cast<int>(FlowPlan::kLinkClassNames.size()),
                               flows_->port_multiplicity);
    }
  }

  Timeline execute() {
    for (std::size_t id = 0; id < n_; ++id) {  // in Program order, for stable tie-breaking
      const std::int32_t i = index_->internal[id];
      if (pending_[static_cast<std::size_t>(i)] == 0) ready_.push_back(i);
    }
    for (std::size_t r = 0; r < host_.ranks(); ++r) advance_host(r, 0);
    drain_ready(0);
    release_parked(0);
    std::vector<std::int32_t> finished;
    while (true) {
      const Nanos t = std::min(heap_.empty() ? FlowNetwork::kNever : heap_.top().time,
                               network_ ? network_->next_completion() : FlowNetwork::kNever);
      if (t == FlowNetwork::kNever) break;
      // Everything that happens at t: flows finishing, then events, until neither has more.
      while (true) {
        if (network_ && network_->next_completion() == t) {
          finished.clear();
          network_->finish_due(t, finished);
          for (std::int32_t tag : finished) {
            ++timeline_.events;
            if (tag % 2 == 0) {
              finish_transfer(tag / 2, t);
            } else {
              finish_collective(tag / 2, t);
            }
            drain_ready(t);
          }
          continue;
        }
        if (heap_.empty() || heap_.top().time != t) break;
        const Event e = heap_.top();
        heap_.pop();
        ++timeline_.events;
        handle(e);
        drain_ready(t);
      }
      release_parked(t);
    }
    if (host_.ranks() > 0) timeline_.host_waits = host_.take_waits();
    if (network_) {
      timeline_.ports = network_->stats();
      timeline_.link_rates = network_->samples();
    }
    for (std::size_t id = 0; id < n_; ++id) {
      MESHSIM_CHECK(timeline_.ops[id].end >= 0,
                    fmt::format("engine stalled before {} completed",
                                describe_op(program_, static_cast<OpId>(id))));
      timeline_.makespan = std::max(timeline_.makespan, timeline_.ops[id].end);
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

    index_ = &engine_index_of(program_, plan_, local_index_);
    ops_ = index_->ops.data();
    initial_counts(*index_, pending_, xfers_left_);
    for (std::size_t id = 0; id < n_; ++id) {
      MESHSIM_CHECK(!program_.ops[id].is_compute() || durations_.ops[id] >= 0,
                    "negative compute duration");
    }
    xfer_ready_.assign(plan_.transfers.size(), 0);
    coll_arrived_.assign(plan_.collectives.size(), 0);
    running_compute_.assign(ranks, 0);
    interference_ = durations_.comm_interference > 1.0;
    if (interference_) {
      comm_running_.assign(ranks, 0);
      running_work_.resize(ranks);
      expected_seq_.assign(n_, 0);
    }
    parked_.resize(ranks);
    parked_cause_.assign(ranks, kNone);
    if (!durations_.host.empty()) {  // every op also waits for its issue
      host_ = HostClock(program_, *index_, durations_.host);
      for (std::int32_t& p : pending_) ++p;
    }

    timeline_.ops.assign(n_, OpTiming{});
    timeline_.causes.assign(n_, OpCause{});
    timeline_.transfers.assign(plan_.transfers.size(), WindowTiming{});
    timeline_.collectives.assign(plan_.collectives.size(), WindowTiming{});
    timeline_.completed_by.assign(n_, kNone);
    ready_.reserve(n_);
    std::vector<Event> storage;
    storage.reserve(std::min<std::size_t>(n_, std::size_t{1} << 20));
    heap_ = decltype(heap_)(EventLater{}, std::move(storage));
  }

  // The host issues ops up to its next wait: their issue times are known from here on (one more
  // readiness condition met); an op ready before its issue time waits for it in drain_ready.
  void advance_host(std::size_t r, Nanos t) {
    issues_.clear();
    host_.advance(r, t, timeline_.ops, issues_);
    for (const std::int32_t op : issues_) {
      if (--pending_[static_cast<std::size_t>(op)] > 0) continue;
      timeline_.causes[static_cast<std::size_t>(id_of(op))] = host_.cause(op);
      ready_.push_back(op);
    }
  }

  OpId id_of(std::int32_t i) const { return index_->order[static_cast<std::size_t>(i)]; }

  void push(Nanos time, std::int32_t id, EventType type) {
    heap_.push(Event{time, seq_++, id, type});
  }

  // `by` is an internal index.
  void satisfy(std::int32_t op, std::int32_t by, bool by_dispatch) {
    if (--pending_[static_cast<std::size_t>(op)] == 0) {
      timeline_.causes[static_cast<std::size_t>(id_of(op))] = OpCause{id_of(by), by_dispatch};
      ready_.push_back(op);
    }
  }

  void drain_ready(Nanos t) {
    while (ready_head_ < ready_.size()) {
      const std::int32_t op = ready_[ready_head_++];
      if (host_.ranks() > 0 && host_.issue_at(op) > t) {  // ready before the host issued it
        timeline_.causes[static_cast<std::size_t>(id_of(op))] = host_.cause(op);
        push(host_.issue_at(op), op, EventType::op_issued);
        continue;
      }
      const HotOp& h = ops_[static_cast<std::size_t>(op)];
      if (!single_queue_ && h.kind != OpKind::compute) {
        // Several hardware queues: comm waits for the running compute kernel to finish (the next
        // kernel boundary); it is considered after every compute kernel that became ready at
        // this instant.
        const auto r = static_cast<std::size_t>(h.rank);
        if (parked_[r].empty()) parked_ranks_.push_back(h.rank);
        parked_[r].push_back(op);
        continue;
      }
      dispatch(op, t);
    }
    ready_.clear();
    ready_head_ = 0;
  }

  // Several hardware queues: dispatch the parked comm kernels of every rank whose device is free
  // of compute or that passed a compute kernel boundary, repeating while doing so frees more work
  // at this instant.
  void release_parked(Nanos t) {
    bool progress = true;
    while (progress && !parked_ranks_.empty()) {
      progress = false;
      std::vector<int> ranks;
      ranks.swap(parked_ranks_);
      for (int r : ranks) {
        const auto ri = static_cast<std::size_t>(r);
        // Parked comm starts once the device is free of compute, or at the first compute
        // kernel boundary after it parked (the finishing kernel's SMs go to the comm kernel that
        // waited, alongside the next compute kernel).
        if (running_compute_[ri] > 0 && parked_cause_[ri] == kNone) {
          parked_ranks_.push_back(r);
          continue;
        }
        std::vector<std::int32_t> ops;
        ops.swap(parked_[ri]);
        for (std::int32_t op : ops) {
          if (parked_cause_[ri] != kNone) {
            timeline_.causes[static_cast<std::size_t>(id_of(op))] =
                OpCause{id_of(parked_cause_[ri]), false};
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
    const HotOp& h = ops_[static_cast<std::size_t>(op)];
    const OpId id = id_of(op);
    const auto uid = static_cast<std::size_t>(id);
    timeline_.ops[uid].start = t;
    if (h.launch_next != kNone) satisfy(h.launch_next, op, true);
    switch (h.kind) {
      case OpKind::compute:
        ++running_compute_[static_cast<std::size_t>(h.rank)];
        if (interference_) {
          auto& running = running_work_[static_cast<std::size_t>(h.rank)];
          running.push_back(RunningWork{op, static_cast<double>(durations_.ops[uid]), t});
          schedule_work(running.back(), slowdown(h.rank));
        } else {
          push(t + durations_.ops[uid], op, EventType::op_done);
        }
        break;
      case OpKind::p2p: {
        const auto b = static_cast<std::size_t>(plan_.op_transfer_begin[uid]);
        const auto e = static_cast<std::size_t>(plan_.op_transfer_begin[uid + 1]);
        if (b == e) push(t, op, EventType::op_done);
        for (std::size_t k = b; k < e; ++k) {
          const std::int32_t tr = plan_.op_transfers[k];
          const auto ti = static_cast<std::size_t>(tr);
          if (++xfer_ready_[ti] == 2) {
            timeline_.transfers[ti].start = t;
            timeline_.transfers[ti].started_by = id;
            if (interference_) transfer_moving(ti, +1, t);
            if (flows_ != nullptr) {
              push(t + flows_->transfers[ti].latency, tr, EventType::transfer_flow_start);
            } else {
              push(t + durations_.transfers[ti], tr, EventType::transfer_done);
            }
          }
        }
        break;
      }
      case OpKind::collective: {
        const std::int32_t c = plan_.op_collective[uid];
        const auto ci = static_cast<std::size_t>(c);
        if (++coll_arrived_[ci] ==
            static_cast<std::int32_t>(plan_.collectives[ci].members.size())) {
          timeline_.collectives[ci].start = t;
          timeline_.collectives[ci].started_by = id;
          if (interference_) collective_moving(ci, +1, t);
          if (flows_ != nullptr) {
            push(t + flows_->collectives[ci].latency, c, EventType::collective_flow_start);
          } else {
            push(t + durations_.collectives[ci], c, EventType::collective_done);
          }
        }
        break;
      }
    }
  }

  // Compute under interference: work left in full-speed ns, progressing 1/slowdown per ns.
  struct RunningWork {
    std::int32_t op;
    double remaining;
    Nanos since;
  };

  double slowdown(int rank) const {
    return comm_running_[static_cast<std::size_t>(rank)] > 0 ? durations_.comm_interference : 1.0;
  }

  void schedule_work(const RunningWork& w, double slow) {
    const auto end = w.since + static_cast<Nanos>(std::ceil(w.remaining * slow - 1e-9));
    expected_seq_[static_cast<std::size_t>(w.op)] = seq_;
    push(end, w.op, EventType::op_done);
  }

  // Whether a collective's kernel slows the compute beside it (comm_interference). Transformer
  // Engine's userbuffers transfers do not: copy-engine copies take no SMs, and the GEMMs beside
  // its SM-based kernels already run on the SMs those leave (KernelCall::sm_share).
  bool takes_sms(OpId id) const {
    const auto& call = std::get<CollectiveCall>(program_.ops[static_cast<std::size_t>(id)].body);
    return call.algo != CollectiveAlgo::userbuffers;
  }

  // A p2p transfer's data moves (+1: both sides posted) or stops (-1: it completed): the comm
  // kernels of its sending and receiving rank slow the compute beside them meanwhile. Waiting
  // for the peer moves no data and slows nothing.
  void transfer_moving(std::size_t ti, int delta, Nanos t) {
    const auto& transfer = plan_.transfers[ti];
    for (OpId side : {transfer.send_op, transfer.recv_op}) {
      const std::int32_t i = index_->internal[static_cast<std::size_t>(side)];
      comm_running_changed(ops_[static_cast<std::size_t>(i)].rank, delta, t);
    }
  }

  // Same for a collective instance: from the moment its last member arrives (its start) to its
  // completion, on every member rank whose kernel takes SMs (takes_sms).
  void collective_moving(std::size_t ci, int delta, Nanos t) {
    for (OpId m : plan_.collectives[ci].members) {
      if (!takes_sms(m)) continue;
      const std::int32_t i = index_->internal[static_cast<std::size_t>(m)];
      comm_running_changed(ops_[static_cast<std::size_t>(i)].rank, delta, t);
    }
  }

  // Comm data starts or stops moving on `rank`: running compute there changes speed.
  void comm_running_changed(int rank, int delta, Nanos t) {
    auto& count = comm_running_[static_cast<std::size_t>(rank)];
    const double before = slowdown(rank);
    count += delta;
    const double after = slowdown(rank);
    if (before == after) return;
    for (auto& w : running_work_[static_cast<std::size_t>(rank)]) {
      w.remaining = std::max(0.0, w.remaining - static_cast<double>(t - w.since) / before);
      w.since = t;
      schedule_work(w, after);
    }
  }

  void complete(std::int32_t op, Nanos t) {
    const HotOp& h = ops_[static_cast<std::size_t>(op)];
    const OpId id = id_of(op);
    timeline_.ops[static_cast<std::size_t>(id)].end = t;
    if (h.kind == OpKind::compute) {
      const auto r = static_cast<std::size_t>(h.rank);
      --running_compute_[r];
      if (!parked_[r].empty()) parked_cause_[r] = op;
      if (interference_) {
        auto& running = running_work_[r];
        running.erase(std::find_if(running.begin(), running.end(),
                                   [op](const RunningWork& w) { return w.op == op; }));
      }
    }
    if (host_.ranks() > 0 && host_.waits_for(static_cast<std::size_t>(h.rank), id)) {
      advance_host(static_cast<std::size_t>(h.rank), t);
    }
    if (h.stream_next != kNone) satisfy(h.stream_next, op, false);
    for (std::int32_t k = h.dependents_begin; k < h.dependents_end; ++k) {
      satisfy(index_->dependents[static_cast<std::size_t>(k)], op, false);
    }
    if (signals_.on_op_complete) {
      signals_.on_op_complete(id, timeline_.ops[static_cast<std::size_t>(id)]);
    }
  }

  void complete_comm(std::int32_t op, Nanos t, Nanos comm_start, std::int32_t by) {
    const auto uid = static_cast<std::size_t>(id_of(op));
    timeline_.ops[uid].comm_start = comm_start;
    timeline_.completed_by[uid] = by;
    complete(op, t);
  }

  void finish_transfer(std::int32_t tr, Nanos t) {
    const auto ti = static_cast<std::size_t>(tr);
    auto& w = timeline_.transfers[ti];
    w.end = t;
    if (interference_) transfer_moving(ti, -1, t);
    const auto& transfer = plan_.transfers[ti];
    for (OpId side : {transfer.send_op, transfer.recv_op}) {
      const std::int32_t i = index_->internal[static_cast<std::size_t>(side)];
      auto& ot = timeline_.ops[static_cast<std::size_t>(side)];
      if (ot.comm_start < 0 || w.start < ot.comm_start) ot.comm_start = w.start;
      if (--xfers_left_[static_cast<std::size_t>(i)] == 0) {
        complete_comm(i, t, ot.comm_start, tr);
      }
    }
    if (signals_.on_transfer_complete) signals_.on_transfer_complete(tr, w);
  }

  void finish_collective(std::int32_t c, Nanos t) {
    const auto ci = static_cast<std::size_t>(c);
    auto& w = timeline_.collectives[ci];
    w.end = t;
    if (interference_) collective_moving(ci, -1, t);
    for (OpId m : plan_.collectives[ci].members) {
      complete_comm(index_->internal[static_cast<std::size_t>(m)], t, w.start, c);
    }
  }

  void handle(const Event& e) {
    switch (e.type) {
      case EventType::op_done:
        if (interference_ && ops_[static_cast<std::size_t>(e.id)].kind == OpKind::compute &&
            expected_seq_[static_cast<std::size_t>(e.id)] != e.seq) {
          break;  // superseded: the op's speed changed after this completion was scheduled
        }
        if (ops_[static_cast<std::size_t>(e.id)].kind == OpKind::p2p) {
          complete_comm(e.id, e.time, e.time, kNone);
        } else {
          complete(e.id, e.time);
        }
        break;
      case EventType::transfer_done:
        finish_transfer(e.id, e.time);
        break;
      case EventType::collective_done:
        finish_collective(e.id, e.time);
        break;
      case EventType::transfer_flow_start:
        network_->start(2 * e.id, flows_->transfers[static_cast<std::size_t>(e.id)], e.time);
        break;
      case EventType::collective_flow_start:
        network_->start(2 * e.id + 1, flows_->collectives[static_cast<std::size_t>(e.id)], e.time);
        break;
      case EventType::op_issued:
        ready_.push_back(e.id);
        break;
    }
  }

  const Program& program_;
  const CommPlan& plan_;
  const Durations& durations_;
  const EngineSignals& signals_;
  const FlowPlan* flows_;
  std::optional<FlowNetwork> network_;
  std::size_t n_ = 0;
  bool single_queue_ = true;

  const EngineIndex* index_ = nullptr;
  EngineIndex local_index_;
  const HotOp* ops_ = nullptr;                      // the index's records, read in place
  std::vector<std::int32_t> pending_, xfers_left_;  // counted down, by internal index
  std::vector<std::uint8_t> xfer_ready_;
  std::vector<std::int32_t> coll_arrived_;
  std::vector<std::int32_t> running_compute_;
  bool interference_ = false;
  std::vector<std::int32_t> comm_running_;              // comm windows moving data, per rank
  std::vector<std::vector<RunningWork>> running_work_;  // compute in progress, per rank
  std::vector<std::uint64_t> expected_seq_;             // valid completion event per op
  std::vector<std::vector<std::int32_t>> parked_;
  std::vector<std::int32_t> parked_cause_;  // internal index of the compute that freed the rank
  std::vector<int> parked_ranks_;
  HostClock host_;                    // no ranks: the host issue clock is off
  std::vector<std::int32_t> issues_;  // ops the host just issued

  std::vector<std::int32_t> ready_;
  std::size_t ready_head_ = 0;
  std::priority_queue<Event, std::vector<Event>, EventLater> heap_;
  std::uint64_t seq_ = 0;
  Timeline timeline_;
};

}  // namespace

Timeline simulate(const Program& program, const CommPlan& plan, const Durations& durations,
                  const EngineSignals& signals, const FlowPlan* flows) {
  return Run(program, plan, durations, signals, flows).execute();
}

}  // namespace meshsim
