#include "schedules/pipeline.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/time.hpp"

namespace meshsim {
namespace {

// A message between two actions: which global stage it feeds and whether it is a gradient.
struct Message {
  int peer = 0;
  bool gradient = false;
  int stage = 0;  // the receiving stage
  int microbatch = 0;
};

class PipelineBuilder {
 public:
  explicit PipelineBuilder(const PipelineConfig& c)
      : cfg_(c),
        p_(c.shape.stages),
        v_(chunks_of(c.shape)),
        stages_(p_ * v_),
        builder_(Mesh({{"pp", c.shape.stages}}, c.gpus_per_node), c.single_queue, describe(c)) {
    compute_ = builder_.stream("compute");
    bytes_ = pipeline_message_bytes(c);
    rank_of_stage_.assign(static_cast<std::size_t>(stages_), 0);
    chunk_of_stage_.assign(static_cast<std::size_t>(stages_), 0);
    for (int r = 0; r < p_; ++r) {
      for (int ch = 0; ch < v_; ++ch) {
        const int s = global_stage(c.shape, r, ch);
        rank_of_stage_[static_cast<std::size_t>(s)] = r;
        chunk_of_stage_[static_cast<std::size_t>(s)] = ch;
      }
    }
  }

  Program build() && {
    const auto orders = pipeline_orders(cfg_.shape);
    for (int r = 0; r < p_; ++r)
      make_slots(r, splits_backward(orders[static_cast<std::size_t>(r)]));
    std::vector<RankPlan> plans;
    // sent_to[src][dst]: the messages src sends to dst, in src's order (peer = dst).
    std::vector<std::vector<std::vector<Message>>> sent_to(
        static_cast<std::size_t>(p_),
        std::vector<std::vector<Message>>(static_cast<std::size_t>(p_)));
    for (int r = 0; r < p_; ++r) {
      plans.push_back(plan_rank(r, orders[static_cast<std::size_t>(r)]));
      for (const auto& step : plans.back().makes) {
        for (const Message& m : step) {
          sent_to[static_cast<std::size_t>(r)][static_cast<std::size_t>(m.peer)].push_back(m);
        }
      }
    }
    for (int r = 0; r < p_; ++r) {
      const auto& actions = orders[static_cast<std::size_t>(r)];
      if (has_explicit_comm(actions)) {
        emit_rank_explicit(r, actions);
      } else {
        emit_rank(r, plans[static_cast<std::size_t>(r)], sent_to);
      }
    }
    return std::move(builder_).finish();
  }

  static std::string describe(const PipelineConfig& c) {
    return fmt::format(
        "pipeline: schedule={} stages={} microbatches={} chunks={}{}", to_string(c.shape.schedule),
        c.shape.stages, c.shape.microbatches, chunks_of(c.shape),
        c.time_f >= 0
            ? fmt::format(" F={}s B={}s W={}s", c.time_f, c.time_b, c.time_w)
            : fmt::format(" tokens={} hidden={} dtype={}", c.tokens, c.hidden, to_string(c.dtype)));
  }

 private:
  // The tensor slots of one chunk of one rank (pipeline.hpp); per-microbatch vectors.
  struct ChunkSlots {
    SlotId w = -1, dw = -1;
    std::vector<SlotId> x, pre, y, dy, dx, dh;
  };

  static bool splits_backward(const std::vector<PipeAction>& actions) {
    return std::any_of(actions.begin(), actions.end(), [](const PipeAction& a) {
      return a.work == PipeWork::input_grad ||
             (a.work == PipeWork::forward_backward && a.pair_split);
    });
  }

  int stage_rank(int stage) const { return rank_of_stage_[static_cast<std::size_t>(stage)]; }
  int stage_chunk(int stage) const { return chunk_of_stage_[static_cast<std::size_t>(stage)]; }

  const ChunkSlots& chunk_slots(int rank, int chunk) const {
    return slots_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(chunk)];
  }
  static SlotId at(const std::vector<SlotId>& per_mb, int mb) {
    return per_mb[static_cast<std::size_t>(mb)];
  }

  // Weights first, then microbatch by microbatch, chunk by chunk; a stage's input is the previous
  // stage's output slot when both are on this rank, and likewise for the gradients.
  void make_slots(int rank, bool split) {
    const std::vector<std::int64_t> act{cfg_.tokens, cfg_.hidden};
    const std::vector<std::int64_t> weight{cfg_.hidden, cfg_.hidden};
    const int m = cfg_.shape.microbatches;
    auto& mine = slots_.emplace_back(static_cast<std::size_t>(v_));
    for (int ch = 0; ch < v_; ++ch) {
      ChunkSlots& cs = mine[static_cast<std::size_t>(ch)];
      cs.w = builder_.slot(rank, pipeline_slot_name("w", ch), cfg_.dtype, weight);
      cs.dw =
          builder_.slot(rank, pipeline_slot_name("dw", ch), accumulator_dtype(cfg_.dtype), weight);
      for (auto* v : {&cs.x, &cs.pre, &cs.y, &cs.dy, &cs.dx, &cs.dh}) {
        v->assign(static_cast<std::size_t>(m), -1);
      }
    }
    for (int mb = 0; mb < m; ++mb) {
      for (int ch = 0; ch < v_; ++ch) {
        ChunkSlots& cs = mine[static_cast<std::size_t>(ch)];
        const int s = global_stage(cfg_.shape, rank, ch);
        const auto idx = static_cast<std::size_t>(mb);
        auto add = [&](std::string_view what) {
          return builder_.slot(rank, pipeline_slot_name(what, ch, mb), cfg_.dtype, act);
        };
        if (s == 0 || stage_rank(s - 1) != rank) cs.x[idx] = add("x");
        cs.pre[idx] = add("pre");
        cs.y[idx] = add("y");
        if (s + 1 == stages_ || stage_rank(s + 1) != rank) cs.dy[idx] = add("dy");
        cs.dx[idx] = add("dx");
        if (split) cs.dh[idx] = add("dh");
      }
    }
    for (int ch = 0; ch < v_; ++ch) {
      ChunkSlots& cs = mine[static_cast<std::size_t>(ch)];
      const int s = global_stage(cfg_.shape, rank, ch);
      for (std::size_t mb = 0; mb < static_cast<std::size_t>(m); ++mb) {
        if (cs.x[mb] < 0) cs.x[mb] = mine[static_cast<std::size_t>(stage_chunk(s - 1))].y[mb];
        if (cs.dy[mb] < 0) cs.dy[mb] = mine[static_cast<std::size_t>(stage_chunk(s + 1))].dx[mb];
      }
    }
  }

  // The slot a transfer of message `m` uses on `rank`: a send reads the producing stage's y (or
  // dx), a receive writes the consuming stage's x (or dy).
  SlotId send_slot(int rank, const Message& m) const {
    const int from = m.gradient ? m.stage + 1 : m.stage - 1;
    const ChunkSlots& cs = chunk_slots(rank, stage_chunk(from));
    return at(m.gradient ? cs.dx : cs.y, m.microbatch);
  }
  SlotId recv_slot(int rank, const Message& m) const {
    const ChunkSlots& cs = chunk_slots(rank, stage_chunk(m.stage));
    return at(m.gradient ? cs.dy : cs.x, m.microbatch);
  }

  // Inputs an action needs from other ranks, and outputs it sends, for one (work, mb, chunk).
  void messages(int rank, PipeWork work, int mb, int chunk, std::vector<Message>& in,
                std::vector<Message>& out) const {
    const int s = global_stage(cfg_.shape, rank, chunk);
    auto other = [&](int stage) { return rank_of_stage_[static_cast<std::size_t>(stage)]; };
    if (work == PipeWork::forward) {
      if (s > 0 && other(s - 1) != rank) in.push_back({other(s - 1), false, s, mb});
      if (s + 1 < stages_ && other(s + 1) != rank) out.push_back({other(s + 1), false, s + 1, mb});
    } else if (work == PipeWork::backward || work == PipeWork::input_grad) {
      if (s + 1 < stages_ && other(s + 1) != rank) in.push_back({other(s + 1), true, s, mb});
      if (s > 0 && other(s - 1) != rank) out.push_back({other(s - 1), true, s - 1, mb});
    }
  }

  int tag_of(const Message& m) const {
    return (m.microbatch * stages_ + m.stage) * 2 + (m.gradient ? 1 : 0);
  }

  Nanos fixed(double per_rank_seconds) const {
    return per_rank_seconds < 0 ? -1 : seconds_to_ns(per_rank_seconds / v_);
  }

  OpId compute(int rank, PipeWork work, int mb, int chunk, std::vector<OpId> deps) {
    const GemmShape fwd{cfg_.tokens, cfg_.hidden, cfg_.hidden, false, false, false};
    const ChunkSlots& cs = chunk_slots(rank, chunk);
    const SlotId x = at(cs.x, mb), pre = at(cs.pre, mb), y = at(cs.y, mb), dy = at(cs.dy, mb),
                 dx = at(cs.dx, mb), dh = at(cs.dh, mb);
    KernelCall call{KernelKind::gemm, cfg_.dtype, fwd, {x, cs.w}, {y, pre}, kPipelineActivation};
    Phase phase = Phase::fwd;
    Nanos ns = fixed(cfg_.time_f);
    std::string_view letter = "F";
    switch (work) {
      case PipeWork::forward:
        break;
      case PipeWork::backward:  // dX and dW together
        call.kind = KernelKind::linear_bwd;
        call.inputs = {x, cs.w, dy, pre};
        call.outputs = {dx, cs.dw};
        phase = Phase::bwd;
        ns = cfg_.time_b < 0 ? -1 : seconds_to_ns((cfg_.time_b + cfg_.time_w) / v_);
        letter = "BW";
        break;
      case PipeWork::input_grad:  // dX = dY W^T
        call.shape = GemmShape{cfg_.tokens, cfg_.hidden, cfg_.hidden, false, true, false};
        call.inputs = {dy, cs.w, pre};
        call.outputs = {dx, dh};
        phase = Phase::bwd;
        ns = fixed(cfg_.time_b);
        letter = "B";
        break;
      case PipeWork::weight_grad:  // dW += X^T dY
        call.shape = GemmShape{cfg_.hidden, cfg_.hidden, cfg_.tokens, true, false, true};
        call.inputs = {x, dh, cs.dw};
        call.outputs = {cs.dw};
        call.fn = ElementwiseFn::none;
        phase = Phase::wgrad;
        ns = fixed(cfg_.time_w);
        letter = "W";
        break;
      default:
        MESHSIM_CHECK(false, "pairs and communication items are not compute parts");
    }
    const OpId op =
        builder_.add(rank, compute_, fmt::format("{}{} c{}", letter, mb, chunk),
                     OpLabels{phase, -1, mb, -1, chunk}, std::move(call), std::move(deps));
    if (ns >= 0) builder_.set_fixed_time(op, ns);
    return op;
  }

  // The stream of the p2p communicator between two ranks (one per pair, as ProcessGroupNCCL
  // creates for send/recv).
  StreamId pair_stream(int a, int b) {
    return builder_.stream(fmt::format("pp_comm {}-{}", std::min(a, b), std::max(a, b)));
  }

  // At one boundary, one batched exchange per peer: the sends to that peer and the receives from
  // it, on the pair's stream. Returns the exchange op per receive, in `recvs` order.
  std::vector<OpId> exchange(int rank, const std::vector<Message>& sends,
                             const std::vector<Message>& recvs, OpId after, int boundary,
                             std::vector<OpId>* created = nullptr) {
    std::vector<int> peers;
    for (const auto* list : {&sends, &recvs}) {
      for (const auto& m : *list) {
        if (std::find(peers.begin(), peers.end(), m.peer) == peers.end()) peers.push_back(m.peer);
      }
    }
    std::sort(peers.begin(), peers.end());
    std::vector<OpId> delivered(recvs.size(), -1);
    for (int peer : peers) {
      P2PCall call;
      std::string name = "p2p";
      for (const auto& m : sends) {
        if (m.peer != peer) continue;
        call.sends.push_back(Transfer{peer, bytes_, tag_of(m), send_slot(rank, m)});
        name += fmt::format(" send {}{}", m.gradient ? "grad" : "act", m.microbatch);
      }
      for (const auto& m : recvs) {
        if (m.peer != peer) continue;
        call.recvs.push_back(Transfer{peer, bytes_, tag_of(m), recv_slot(rank, m)});
        name += fmt::format(" recv {}{}", m.gradient ? "grad" : "act", m.microbatch);
      }
      const OpId op = builder_.add(rank, pair_stream(rank, peer), std::move(name),
                                   OpLabels{Phase::none, -1, -1, boundary, -1}, std::move(call),
                                   after >= 0 ? std::vector<OpId>{after} : std::vector<OpId>{});
      if (cfg_.p2p_time >= 0) builder_.set_fixed_time(op, seconds_to_ns(cfg_.p2p_time));
      if (created != nullptr) created->push_back(op);
      for (std::size_t i = 0; i < recvs.size(); ++i) {
        if (recvs[i].peer == peer) delivered[i] = op;
      }
    }
    return delivered;
  }

  using Part = std::pair<PipeWork, std::pair<int, int>>;  // work, (microbatch, chunk)

  static std::vector<Part> parts_of(const PipeAction& a) {
    if (a.work != PipeWork::forward_backward) return {{a.work, {a.microbatch, a.chunk}}};
    return {{PipeWork::forward, {a.microbatch, a.chunk}},
            {a.pair_split ? PipeWork::input_grad : PipeWork::backward,
             {a.pair_microbatch, a.pair_chunk}}};
  }

  static bool is_backward(PipeWork w) {
    return w == PipeWork::backward || w == PipeWork::input_grad;
  }

  // Steps: the actions between two p2p groups, as the frameworks issue them. A weight gradient
  // joins the step after it (the exchange that follows a B goes out before the deferred W runs);
  // in interleaved 1F1B a forward joins the backward that follows it (Megatron exchanges once
  // per forward-backward pair, in both directions at once).
  std::vector<std::vector<Part>> steps_of(int rank, const std::vector<PipeAction>& actions) const {
    std::vector<std::vector<Part>> steps;
    // A rank whose warm-up runs every forward (Megatron's all-warm-up case) has no 1F1B pairs.
    const bool pairs = cfg_.shape.schedule == PipelineSchedule::interleaved &&
                       warmup_forwards(cfg_.shape, rank) < cfg_.shape.microbatches * v_;
    bool join = false;
    for (std::size_t k = 0; k < actions.size(); ++k) {
      const PipeAction& a = actions[k];
      if (!join || steps.empty()) steps.emplace_back();
      for (const auto& part : parts_of(a)) steps.back().push_back(part);
      const bool next_backward = k + 1 < actions.size() && is_backward(actions[k + 1].work);
      join = a.work == PipeWork::weight_grad ||
             (pairs && a.work == PipeWork::forward && next_backward);
    }
    return steps;
  }

  static bool has_explicit_comm(const std::vector<PipeAction>& actions) {
    return std::any_of(actions.begin(), actions.end(), [](const PipeAction& a) {
      return a.work == PipeWork::commit || a.work == PipeWork::commit_async;
    });
  }

  // A rank whose order places its own communication: post_* queue transfers, commit issues them
  // (one batched exchange per peer) and the host waits for all of them before its next compute.
  void emit_rank_explicit(int rank, const std::vector<PipeAction>& actions) {
    std::vector<Message> sends, recvs, in, out;
    std::vector<OpId> waits;
    std::map<std::pair<int, int>, OpId> received_by;  // (peer, tag) -> exchange, async commits
    OpId last_compute = -1;
    int commits = 0;
    for (const PipeAction& a : actions) {
      in.clear();
      out.clear();
      switch (a.work) {
        case PipeWork::post_recv_forward:
        case PipeWork::post_send_forward:
          messages(rank, PipeWork::forward, a.microbatch, a.chunk, in, out);
          break;
        case PipeWork::post_recv_backward:
        case PipeWork::post_send_backward:
          messages(rank, PipeWork::backward, a.microbatch, a.chunk, in, out);
          break;
        default:
          break;
      }
      switch (a.work) {
        case PipeWork::post_recv_forward:
        case PipeWork::post_recv_backward:
          recvs.insert(recvs.end(), in.begin(), in.end());
          break;
        case PipeWork::post_send_forward:
        case PipeWork::post_send_backward:
          sends.insert(sends.end(), out.begin(), out.end());
          break;
        case PipeWork::commit:
        case PipeWork::commit_async: {
          std::vector<OpId> created;
          const auto delivered = exchange(rank, sends, recvs, last_compute, commits++, &created);
          if (a.work == PipeWork::commit) {
            waits.insert(waits.end(), created.begin(), created.end());
          } else {
            for (std::size_t i = 0; i < recvs.size(); ++i) {
              received_by[{recvs[i].peer, tag_of(recvs[i])}] = delivered[i];
            }
          }
          sends.clear();
          recvs.clear();
          break;
        }
        default:
          for (const auto& [work, id] : parts_of(a)) {
            std::vector<Message> needs, makes;
            messages(rank, work, id.first, id.second, needs, makes);
            for (const Message& m : needs) {
              const auto it = received_by.find({m.peer, tag_of(m)});
              if (it != received_by.end() &&
                  std::find(waits.begin(), waits.end(), it->second) == waits.end()) {
                waits.push_back(it->second);
              }
            }
            last_compute = compute(rank, work, id.first, id.second, std::move(waits));
            waits.clear();
          }
      }
    }
    MESHSIM_CHECK(sends.empty() && recvs.empty(), "transfers posted after the last commit");
  }

  // What one rank does, step by step: the step's compute parts, the messages its parts need
  // from other ranks, and the messages they produce for other ranks.
  struct RankPlan {
    std::vector<std::vector<Part>> steps;
    std::vector<std::vector<Message>> needs;
    std::vector<std::vector<Message>> makes;
  };

  RankPlan plan_rank(int rank, const std::vector<PipeAction>& actions) const {
    RankPlan plan;
    plan.steps = steps_of(rank, actions);
    for (const auto& step : plan.steps) {
      plan.needs.emplace_back();
      plan.makes.emplace_back();
      for (const auto& [work, id] : step) {
        messages(rank, work, id.first, id.second, plan.needs.back(), plan.makes.back());
      }
    }
    return plan;
  }

  // Before each step, one batched exchange: send what the previous step produced and receive
  // what this step needs. Receives from a peer are posted in the order that peer sends (p2p
  // matches in posting order), so a message the peer sends earlier than this rank needs it is
  // received early into its own buffer. Each compute part waits only for the exchanges that
  // delivered its inputs; sends do not hold compute back.
  void emit_rank(int rank, const RankPlan& plan,
                 const std::vector<std::vector<std::vector<Message>>>& sent_to) {
    std::vector<std::size_t> cursor(static_cast<std::size_t>(p_), 0);
    std::map<std::pair<int, int>, OpId> received_by;  // (peer, tag) -> exchange op
    std::vector<Message> pending_sends;
    OpId last_compute = -1;
    for (std::size_t k = 0; k <= plan.steps.size(); ++k) {
      std::vector<Message> recvs;
      if (k < plan.steps.size()) {
        for (const Message& m : plan.needs[k]) {
          if (received_by.count({m.peer, tag_of(m)}) != 0) continue;
          const auto& from_peer =
              sent_to[static_cast<std::size_t>(m.peer)][static_cast<std::size_t>(rank)];
          auto& at = cursor[static_cast<std::size_t>(m.peer)];
          bool found = false;
          while (!found) {
            MESHSIM_CHECK(at < from_peer.size(), "a needed message is never sent");
            Message early = from_peer[at++];
            early.peer = m.peer;
            found = tag_of(early) == tag_of(m);
            received_by[{m.peer, tag_of(early)}] = -1;
            recvs.push_back(early);
          }
        }
      }
      const auto delivered =
          exchange(rank, pending_sends, recvs, last_compute, static_cast<int>(k));
      for (std::size_t i = 0; i < recvs.size(); ++i) {
        received_by[{recvs[i].peer, tag_of(recvs[i])}] = delivered[i];
      }
      if (k == plan.steps.size()) break;
      pending_sends = plan.makes[k];
      for (const auto& [work, id] : plan.steps[k]) {
        std::vector<Message> in, out;
        messages(rank, work, id.first, id.second, in, out);
        std::vector<OpId> deps;
        for (const Message& m : in) {
          const OpId by = received_by.at({m.peer, tag_of(m)});
          if (std::find(deps.begin(), deps.end(), by) == deps.end()) deps.push_back(by);
        }
        last_compute = compute(rank, work, id.first, id.second, std::move(deps));
      }
    }
  }

  const PipelineConfig& cfg_;
  int p_, v_, stages_;
  ProgramBuilder builder_;
  StreamId compute_ = 0;
  std::int64_t bytes_ = 0;
  std::vector<int> rank_of_stage_;
  std::vector<int> chunk_of_stage_;
  std::vector<std::vector<ChunkSlots>> slots_;  // [rank][chunk]
};

}  // namespace

std::string pipeline_slot_name(std::string_view tensor, int chunk, int microbatch) {
  return microbatch < 0 ? fmt::format("{} c{}", tensor, chunk)
                        : fmt::format("{} mb{} c{}", tensor, microbatch, chunk);
}

std::int64_t pipeline_message_bytes(const PipelineConfig& c) {
  return c.activation_bytes > 0 ? c.activation_bytes : c.tokens * c.hidden * dtype_bytes(c.dtype);
}

void check_pipeline_config(const PipelineConfig& c) {
  check_pipeline_shape(c.shape);
  if (c.tokens <= 0) throw InputError(fmt::format("--tokens must be positive, got {}", c.tokens));
  if (c.hidden <= 0) throw InputError(fmt::format("--hidden must be positive, got {}", c.hidden));
  if (c.gpus_per_node <= 0) throw InputError("--gpus-per-node must be positive");
  const bool any_time = c.time_f >= 0 || c.time_b >= 0 || c.time_w >= 0;
  if (any_time && (c.time_f < 0 || c.time_b < 0 || c.time_w < 0)) {
    throw InputError("--time-f, --time-b and --time-w go together: give all three (seconds)");
  }
  if (c.activation_bytes < 0) throw InputError("--activation-bytes must not be negative");
  constexpr std::int64_t kMaxActions = std::int64_t{1} << 24;
  if (std::int64_t{c.shape.stages} * c.shape.microbatches * chunks_of(c.shape) > kMaxActions) {
    throw InputError("--stages x --microbatches x chunks exceeds 16 million forward actions");
  }
}

std::vector<int> peak_inflight(const PipelineShape& shape) {
  const auto orders = pipeline_orders(shape);
  std::vector<int> peaks;
  for (const auto& actions : orders) {
    int held = 0, peak = 0;
    for (const auto& a : actions) {
      if (a.work == PipeWork::forward || a.work == PipeWork::forward_backward) {
        peak = std::max(peak, ++held);
      }
      if (a.work == PipeWork::backward || a.work == PipeWork::input_grad ||
          a.work == PipeWork::forward_backward) {
        --held;
      }
    }
    peaks.push_back(peak);
  }
  return peaks;
}

Program build_pipeline(const PipelineConfig& config) {
  check_pipeline_config(config);
  return PipelineBuilder(config).build();
}

}  // namespace meshsim
