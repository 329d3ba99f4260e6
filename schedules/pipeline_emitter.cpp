#include "schedules/pipeline_emitter.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

using Part = std::pair<PipeWork, std::pair<int, int>>;

constexpr int kNever = INT_MAX;

std::vector<Part> parts_of(const PipeAction& a) {
  if (a.work != PipeWork::forward_backward) return {{a.work, {a.microbatch, a.chunk}}};
  return {{PipeWork::forward, {a.microbatch, a.chunk}},
          {a.pair_split ? PipeWork::input_grad : PipeWork::backward,
           {a.pair_microbatch, a.pair_chunk}}};
}

bool is_backward(PipeWork w) {
  return w == PipeWork::backward || w == PipeWork::input_grad;
}

bool has_explicit_comm(const std::vector<PipeAction>& actions) {
  return std::any_of(actions.begin(), actions.end(), [](const PipeAction& a) {
    return a.work == PipeWork::commit || a.work == PipeWork::commit_async;
  });
}

}  // namespace

PipelineEmitter::PipelineEmitter(const PipelineShape& shape)
    : shape_(shape),
      p_(shape.stages),
      v_(chunks_of(shape)),
      stages_(p_ * v_),
      rank_of_stage_(static_cast<std::size_t>(stages_), 0),
      chunk_of_stage_(static_cast<std::size_t>(stages_), 0),
      orders_(pipeline_orders(shape)),
      sent_to_(static_cast<std::size_t>(p_),
               std::vector<std::vector<PipeMessage>>(static_cast<std::size_t>(p_))) {
  for (int r = 0; r < p_; ++r) {
    for (int ch = 0; ch < v_; ++ch) {
      const int s = global_stage(shape, r, ch);
      rank_of_stage_[static_cast<std::size_t>(s)] = r;
      chunk_of_stage_[static_cast<std::size_t>(s)] = ch;
    }
  }
  for (int r = 0; r < p_; ++r) {
    plans_.push_back(plan_rank(r, orders_[static_cast<std::size_t>(r)]));
    for (const auto& step : plans_.back().makes) {
      for (const PipeMessage& m : step) {
        sent_to_[static_cast<std::size_t>(r)][static_cast<std::size_t>(m.peer)].push_back(m);
      }
    }
  }
  nominal_clock();
}

void PipelineEmitter::nominal_clock() {
  const auto P = static_cast<std::size_t>(p_);
  // (sender, receiver, tag) -> (sender's step that makes it)
  std::map<std::tuple<int, int, int>, std::size_t> made_by;
  for (std::size_t r = 0; r < P; ++r) {
    const auto& makes = plans_[r].makes;
    for (std::size_t k = 0; k < makes.size(); ++k) {
      for (const PipeMessage& m : makes[k]) made_by[{static_cast<int>(r), m.peer, tag_of(m)}] = k;
    }
  }
  std::vector<std::vector<int>> start(P);  // start[r][k]: tick at which step k of rank r starts
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::size_t r = 0; r < P; ++r) {
      const RankPlan& plan = plans_[r];
      auto& at = start[r];
      while (at.size() < plan.steps.size()) {
        int begin = at.empty() ? 0 : at.back() + 1;
        bool ready = true;
        for (const PipeMessage& m : plan.needs[at.size()]) {
          const auto it = made_by.find({m.peer, static_cast<int>(r), tag_of(m)});
          const auto& sender = start[static_cast<std::size_t>(m.peer)];
          if (it == made_by.end() || it->second >= sender.size()) {
            ready = false;
            break;
          }
          begin = std::max(begin, sender[it->second] + 1);
        }
        if (!ready) break;
        at.push_back(begin);
        progress = true;
      }
    }
  }
  sent_at_.assign(P, std::vector<std::vector<int>>(P));
  for (std::size_t r = 0; r < P; ++r) {
    RankPlan& plan = plans_[r];
    plan.posted_at.assign(plan.steps.size() + 1, kNever);
    plan.posted_at[0] = 0;
    for (std::size_t k = 0; k < start[r].size(); ++k) plan.posted_at[k + 1] = start[r][k] + 1;
    for (std::size_t k = 0; k < plan.makes.size(); ++k) {
      for (const PipeMessage& m : plan.makes[k]) {
        sent_at_[r][static_cast<std::size_t>(m.peer)].push_back(plan.posted_at[k + 1]);
      }
    }
  }
}

void PipelineEmitter::emit(int pr, PipelineEmitHost& host) const {
  if (has_explicit_comm(orders_[static_cast<std::size_t>(pr)])) {
    emit_explicit(pr, host);
  } else {
    emit_steps(pr, host);
  }
}

void PipelineEmitter::messages(int pr, PipeWork work, int mb, int chunk,
                               std::vector<PipeMessage>& in, std::vector<PipeMessage>& out) const {
  const int s = global_stage(shape_, pr, chunk);
  if (work == PipeWork::forward) {
    if (s > 0 && stage_rank(s - 1) != pr) in.push_back({stage_rank(s - 1), false, s, mb});
    if (s + 1 < stages_ && stage_rank(s + 1) != pr) {
      out.push_back({stage_rank(s + 1), false, s + 1, mb});
    }
  } else if (is_backward(work)) {
    if (s + 1 < stages_ && stage_rank(s + 1) != pr) in.push_back({stage_rank(s + 1), true, s, mb});
    if (s > 0 && stage_rank(s - 1) != pr) out.push_back({stage_rank(s - 1), true, s - 1, mb});
  }
}

std::vector<std::vector<Part>> PipelineEmitter::steps_of(int pr,
                                                         const std::vector<PipeAction>& actions,
                                                         std::vector<int>* pair_at) const {
  std::vector<std::vector<Part>> steps;
  // A rank whose warm-up runs every forward (Megatron's all-warm-up case) has no 1F1B pairs.
  const bool pairs = shape_.schedule == PipelineSchedule::interleaved &&
                     warmup_forwards(shape_, pr) < shape_.microbatches * v_;
  bool join = false;
  for (std::size_t k = 0; k < actions.size(); ++k) {
    const PipeAction& a = actions[k];
    if (!join || steps.empty()) {
      steps.emplace_back();
      if (pair_at != nullptr) pair_at->push_back(-1);
    }
    if (pair_at != nullptr && a.work == PipeWork::forward_backward) {
      pair_at->back() = static_cast<int>(steps.back().size());
    }
    for (const auto& part : parts_of(a)) steps.back().push_back(part);
    const bool next_backward = k + 1 < actions.size() && is_backward(actions[k + 1].work);
    join =
        a.work == PipeWork::weight_grad || (pairs && a.work == PipeWork::forward && next_backward);
  }
  return steps;
}

PipelineEmitter::RankPlan PipelineEmitter::plan_rank(int pr,
                                                     const std::vector<PipeAction>& actions) const {
  RankPlan plan;
  plan.steps = steps_of(pr, actions, &plan.pair_at);
  for (const auto& step : plan.steps) {
    plan.needs.emplace_back();
    plan.makes.emplace_back();
    for (const auto& [work, id] : step) {
      messages(pr, work, id.first, id.second, plan.needs.back(), plan.makes.back());
    }
  }
  return plan;
}

// At one boundary, one batched exchange per peer (in peer order): the sends to that peer and the
// receives from it. Returns the exchange op per receive, in `recvs` order.
std::vector<OpId> PipelineEmitter::exchange(int pr, PipelineEmitHost& host,
                                            const std::vector<PipeMessage>& sends,
                                            const std::vector<PipeMessage>& recvs, OpId after,
                                            int boundary, std::vector<OpId>* created) const {
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
      call.sends.push_back(host.emit_transfer(pr, m, tag_of(m), true));
      name += fmt::format(" send {}{}", m.gradient ? "grad" : "act", m.microbatch);
    }
    for (const auto& m : recvs) {
      if (m.peer != peer) continue;
      call.recvs.push_back(host.emit_transfer(pr, m, tag_of(m), false));
      name += fmt::format(" recv {}{}", m.gradient ? "grad" : "act", m.microbatch);
    }
    const OpId op = host.emit_exchange(pr, peer, std::move(name), std::move(call), boundary, after);
    if (created != nullptr) created->push_back(op);
    for (std::size_t i = 0; i < recvs.size(); ++i) {
      if (recvs[i].peer == peer) delivered[i] = op;
    }
  }
  return delivered;
}

void PipelineEmitter::emit_explicit(int pr, PipelineEmitHost& host) const {
  std::vector<PipeMessage> sends, recvs, in, out;
  std::vector<OpId> waits;
  std::map<std::pair<int, int>, OpId> received_by;  // (peer, tag) -> exchange, async commits
  OpId last_output = -1;
  int commits = 0;
  for (const PipeAction& a : orders_[static_cast<std::size_t>(pr)]) {
    in.clear();
    out.clear();
    switch (a.work) {
      case PipeWork::post_recv_forward:
      case PipeWork::post_send_forward:
        messages(pr, PipeWork::forward, a.microbatch, a.chunk, in, out);
        break;
      case PipeWork::post_recv_backward:
      case PipeWork::post_send_backward:
        messages(pr, PipeWork::backward, a.microbatch, a.chunk, in, out);
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
        const auto delivered = exchange(pr, host, sends, recvs, last_output, commits++, &created);
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
      default: {
        std::vector<PipelineEmitHost::Part> parts;
        for (const auto& [work, id] : parts_of(a)) {
          std::vector<PipeMessage> needs, makes;
          messages(pr, work, id.first, id.second, needs, makes);
          for (const PipeMessage& m : needs) {
            const auto it = received_by.find({m.peer, tag_of(m)});
            if (it != received_by.end() &&
                std::find(waits.begin(), waits.end(), it->second) == waits.end()) {
              waits.push_back(it->second);
            }
          }
          parts.push_back({work, id.first, id.second, std::move(waits)});
          waits.clear();
        }
        if (parts.size() == 2) {
          last_output = host.emit_pair(pr, std::move(parts[0]), std::move(parts[1]));
        } else {
          PipelineEmitHost::Part& p = parts.front();
          last_output = host.emit_compute(pr, p.work, p.microbatch, p.chunk, std::move(p.deps));
        }
      }
    }
  }
  MESHSIM_CHECK(sends.empty() && recvs.empty(), "transfers posted after the last commit");
}

void PipelineEmitter::emit_steps(int pr, PipelineEmitHost& host) const {
  const RankPlan& plan = plans_[static_cast<std::size_t>(pr)];
  std::vector<std::size_t> cursor(static_cast<std::size_t>(p_), 0);
  std::map<std::pair<int, int>, OpId> received_by;  // (peer, tag) -> exchange op
  std::vector<PipeMessage> pending_sends;
  OpId last_output = -1;
  const bool lockstep = shape_.schedule == PipelineSchedule::interleaved;
  for (std::size_t k = 0; k <= plan.steps.size(); ++k) {
    std::vector<PipeMessage> recvs;
    if (k < plan.steps.size()) {
      for (const PipeMessage& m : plan.needs[k]) {
        if (received_by.count({m.peer, tag_of(m)}) != 0) continue;
        const auto& from_peer =
            sent_to_[static_cast<std::size_t>(m.peer)][static_cast<std::size_t>(pr)];
        auto& at = cursor[static_cast<std::size_t>(m.peer)];
        bool found = false;
        while (!found) {
          MESHSIM_CHECK(at < from_peer.size(), "a needed message is never sent");
          PipeMessage early = from_peer[at++];
          early.peer = m.peer;
          found = tag_of(early) == tag_of(m);
          received_by[{m.peer, tag_of(early)}] = -1;
          recvs.push_back(early);
        }
      }
      // Interleaved 1F1B: messages a peer sends no later than this boundary is posted are received
      // here, as Megatron does (each call receives what the peer's matching call sends and queues
      // it per chunk until that chunk runs): with microbatch groups larger than the pipeline an
      // activation crosses from the last rank to the first several steps before it is needed,
      // and a send left waiting for that later receive would hold the sender's own receives.
      for (std::size_t peer = 0; lockstep && peer < cursor.size(); ++peer) {
        const auto& from_peer = sent_to_[peer][static_cast<std::size_t>(pr)];
        const auto& when = sent_at_[peer][static_cast<std::size_t>(pr)];
        auto& at = cursor[peer];
        while (at < from_peer.size() && when[at] <= plan.posted_at[k]) {
          PipeMessage early = from_peer[at++];
          early.peer = static_cast<int>(peer);
          received_by[{early.peer, tag_of(early)}] = -1;
          recvs.push_back(early);
        }
      }
    }
    const auto delivered =
        exchange(pr, host, pending_sends, recvs, last_output, static_cast<int>(k));
    for (std::size_t i = 0; i < recvs.size(); ++i) {
      received_by[{recvs[i].peer, tag_of(recvs[i])}] = delivered[i];
    }
    if (k == plan.steps.size()) break;
    pending_sends = plan.makes[k];
    last_output = emit_step_parts(pr, host, k, received_by);
  }
}

OpId PipelineEmitter::emit_step_parts(
    int pr, PipelineEmitHost& host, std::size_t k,
    const std::map<std::pair<int, int>, OpId>& received_by) const {
  const RankPlan& plan = plans_[static_cast<std::size_t>(pr)];
  const auto& step = plan.steps[k];
  const auto part = [&](std::size_t j) {
    const auto& [work, id] = step[j];
    std::vector<PipeMessage> in, out;
    messages(pr, work, id.first, id.second, in, out);
    PipelineEmitHost::Part p{work, id.first, id.second, {}};
    for (const PipeMessage& m : in) {
      const OpId by = received_by.at({m.peer, tag_of(m)});
      if (std::find(p.deps.begin(), p.deps.end(), by) == p.deps.end()) p.deps.push_back(by);
    }
    return p;
  };
  OpId last_output = -1;
  for (std::size_t j = 0; j < step.size(); ++j) {
    if (static_cast<int>(j) == plan.pair_at[k]) {  // a combined 1F1B pair: forward, backward
      last_output = host.emit_pair(pr, part(j), part(j + 1));
      ++j;
      continue;
    }
    PipelineEmitHost::Part p = part(j);
    last_output = host.emit_compute(pr, p.work, p.microbatch, p.chunk, std::move(p.deps));
  }
  return last_output;
}

}  // namespace meshsim
