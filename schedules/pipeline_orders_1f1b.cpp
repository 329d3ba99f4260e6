// The 1F1B family of pipeline orders (pipeline_orders.hpp): GPipe, 1F1B, Megatron's interleaved
// 1F1B, ZB-H1 and ZB-H2. All but ZB-H2 leave communication to the Program builder's exchange at
// every step boundary; ZB-H2 places its own (zb_h2_orders). Where each order comes from is in
// pipeline_orders.cpp.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

#include "schedules/pipeline_orders_steps.hpp"
#include "sim/error.hpp"

namespace meshsim::pipeline_detail {
namespace {

// Megatron's schedule table: virtual step k -> (microbatch, chunk). Groups of g microbatches
// starting at s (a group that would reach the end takes every remaining microbatch); within a
// group, chunk 0 over the group's microbatches, then chunk 1, and so on.
std::vector<std::pair<int, int>> interleaved_table(int m, int v, int g) {
  std::vector<std::pair<int, int>> table;
  table.reserve(static_cast<std::size_t>(m) * static_cast<std::size_t>(v));
  for (int s = 0; s < m; s += g) {
    const int end = s + g >= m ? m : s + g;
    for (int c = 0; c < v; ++c) {
      for (int mb = s; mb < end; ++mb) table.emplace_back(mb, c);
    }
    if (end == m) break;
  }
  return table;
}

// Megatron's get_pp_rank_microbatches: 2(p-r-1) + (v-1)g, one more for the combined 1F1B, at
// most every (microbatch, chunk).
int interleaved_warmup(int p, int m, int v, int g, int r, bool combined) {
  return std::min(2 * (p - r - 1) + (v - 1) * g + (combined ? 1 : 0), m * v);
}

// The steady state's step: F then B, or both as one overlapped pair (combined 1F1B).
void steady_step(Order& out, const PipeAction& f, const PipeAction& b, bool combined) {
  if (!combined) {
    out.push_back(f);
    out.push_back(b);
    return;
  }
  PipeAction pair = f;
  pair.work = PipeWork::forward_backward;
  pair.pair_microbatch = b.microbatch;
  pair.pair_chunk = b.chunk;
  out.push_back(pair);
}

}  // namespace

// GPipe: every forward, then every backward, both in microbatch order.
Order gpipe_order(int m) {
  Order out;
  out.reserve(static_cast<std::size_t>(2 * m));
  for (int i = 0; i < m; ++i) out.push_back(make(PipeWork::forward, i, 0));
  for (int i = 0; i < m; ++i) out.push_back(make(PipeWork::backward, i, 0));
  return out;
}

// 1F1B: warm-up forwards, steady (F, B) pairs, cool-down backwards. Combined (p = 1, Megatron's
// combined_1f1b_schedule_for_no_pipelining): F0, then (F k+1, B k) overlapped, then B m-1.
Order one_f_one_b_order(int p, int m, int r, bool combined) {
  const int warmup = std::min(p - r - 1 + (combined ? 1 : 0), m);
  Order out;
  out.reserve(static_cast<std::size_t>(2 * m));
  for (int i = 0; i < warmup; ++i) out.push_back(make(PipeWork::forward, i, 0));
  for (int k = 0; k < m - warmup; ++k) {
    steady_step(out, make(PipeWork::forward, warmup + k, 0), make(PipeWork::backward, k, 0),
                combined);
  }
  for (int k = m - warmup; k < m; ++k) out.push_back(make(PipeWork::backward, k, 0));
  return out;
}

// Megatron's interleaved 1F1B: forward of step k is table[k]; backward of step k is
// (table[k].microbatch, v-1-table[k].chunk). Combined: one more warm-up forward, and each steady
// step's forward and backward one overlapped pair (Megatron's
// combined_1f1b_schedule_for_interleaved_pipelining with f = k + warmup, b = k).
Order interleaved_order(int p, int m, int v, int g, int r, bool combined) {
  const auto table = interleaved_table(m, v, g);
  const int total = m * v;
  const int warmup = interleaved_warmup(p, m, v, g, r, combined);
  const auto fwd = [&](int k) {
    const auto& e = table[static_cast<std::size_t>(k)];
    return make(PipeWork::forward, e.first, e.second);
  };
  const auto bwd = [&](int k) {
    const auto& e = table[static_cast<std::size_t>(k)];
    return make(PipeWork::backward, e.first, v - 1 - e.second);
  };
  Order out;
  out.reserve(static_cast<std::size_t>(2 * total));
  for (int k = 0; k < warmup; ++k) out.push_back(fwd(k));
  for (int k = 0; k < total - warmup; ++k) steady_step(out, fwd(k + warmup), bwd(k), combined);
  for (int k = total - warmup; k < total; ++k) out.push_back(bwd(k));
  return out;
}

// ZB-H1: 1F1B's warm-up and steady state with the backward split; after each B the W's wait in
// a FIFO, and rank r lets up to r of them wait (the last rank defers the most), so the W's that
// pile up fill the cool-down, and the rest run at the end.
Order zb_h1_order(int p, int m, int r) {
  const int warmup = std::min(p - r - 1, m);
  const auto deferred = static_cast<std::size_t>(r);
  Order out;
  out.reserve(static_cast<std::size_t>(3 * m));
  std::deque<int> pending;
  const auto input_grad = [&](int k) {
    out.push_back(make(PipeWork::input_grad, k, 0));
    pending.push_back(k);
    if (pending.size() > deferred) {
      out.push_back(make(PipeWork::weight_grad, pending.front(), 0));
      pending.pop_front();
    }
  };
  for (int i = 0; i < warmup; ++i) out.push_back(make(PipeWork::forward, i, 0));
  for (int k = 0; k < m - warmup; ++k) {
    out.push_back(make(PipeWork::forward, warmup + k, 0));
    input_grad(k);
  }
  for (int k = m - warmup; k < m; ++k) input_grad(k);
  for (const int k : pending) out.push_back(make(PipeWork::weight_grad, k, 0));
  return out;
}

// ZB-H2 (Qi et al., Sec. 3): rank r warms up with min(2(p-r)-1, m) forwards, so rank 0 holds up to
// 2p-1 microbatches; then every B_j is followed by
// - steady state (j <= m-2p, while rank 0 still has forwards to run): the next F, then a W;
// - tail (j > m-2p): one action only, the next F while any is left, else a W;
// and after the last B the deferred W's, first-in first-out. With unit F = B = W and free
// communication rank r runs B_j at 2p-1-r+3j in the steady state and at m+2j-r in the tail (B's
// two slots apart), and is never idle from its first F to its last W (2r+1 of them after its
// last B): the paper's parallelogram. Valid for any m: at least one forward precedes B_0 and one
// more precedes each later B while any is left, so F_j always comes before B_j.
Order zb_h2_compute(int p, int m, int r) {
  const int warmup = std::min(2 * (p - r) - 1, m);
  Order out;
  out.reserve(static_cast<std::size_t>(3 * m));
  std::deque<int> pending;  // B done, W not yet
  int next_forward = 0;
  const auto forward = [&] { out.push_back(make(PipeWork::forward, next_forward++, 0)); };
  const auto weight_grad = [&] {
    out.push_back(make(PipeWork::weight_grad, pending.front(), 0));
    pending.pop_front();
  };
  for (int i = 0; i < warmup; ++i) forward();
  for (int j = 0; j < m; ++j) {
    out.push_back(make(PipeWork::input_grad, j, 0));
    pending.push_back(j);
    if (j == m - 1) break;
    const bool forward_left = next_forward < m;
    if (forward_left) forward();
    if (!forward_left || j <= m - 2 * p) weight_grad();
  }
  while (!pending.empty()) weight_grad();
  return out;
}

namespace {

// ZB-H2's communication. Megatron's exchange at every step boundary batches a rank's send with
// the receive its next step needs; ZB-H2's neighbours differ by two warm-up forwards, so rank r
// would batch "send activation k, receive gradient j" with a peer that receives k several steps
// after it sends j, and the gradient would wait for that (about twice the makespan). Here, as for
// ZB-V (ZbVBuilder, pipeline_orders_v.cpp), the ranks take their next compute actions in
// synchronous rounds (an action runs in the first round after its input arrived), every message
// produced in a round is sent and received at the boundary that closes it, and each rank
// commits once per boundary without waiting (commit_async): both sides of a batch hold the same
// transfers, and a compute waits only for the exchange that delivered its own input. With
// F = B = W a round lasts one action on every rank and no exchange costs time.
class RoundComm {
 public:
  RoundComm(int p, int m)
      : p_(p), m_(m), flags_(static_cast<std::size_t>(p) * static_cast<std::size_t>(m), 0) {}

  std::vector<Order> build(const std::vector<Order>& compute) && {
    const auto ranks = static_cast<std::size_t>(p_);
    std::vector<Order> out(ranks), recvs(ranks);
    std::vector<std::size_t> next(ranks, 0);
    std::vector<char> runs(ranks, 0);
    std::size_t left = 0;
    for (const Order& o : compute) left += o.size();
    while (left > 0) {
      for (std::size_t r = 0; r < ranks; ++r) {  // decided on the state at the round's start
        runs[r] =
            next[r] < compute[r].size() && ready(static_cast<int>(r), compute[r][next[r]]) ? 1 : 0;
      }
      bool progress = false;
      for (std::size_t r = 0; r < ranks; ++r) {
        if (runs[r] == 0) continue;
        progress = true;
        --left;
        run(static_cast<int>(r), compute[r][next[r]++], out[r], recvs);
      }
      MESHSIM_CHECK(progress, "zb-h2 order: a round with nothing ready");
      for (std::size_t r = 0; r < ranks; ++r) {
        out[r].insert(out[r].end(), recvs[r].begin(), recvs[r].end());
        recvs[r].clear();
        if (!out[r].empty() && is_comm(out[r].back().work)) {
          out[r].push_back(make(PipeWork::commit_async, 0, 0));
        }
      }
    }
    return out;
  }

 private:
  static constexpr std::uint8_t kForwardDone = 1, kActivationIn = 2, kGradientIn = 4;

  std::uint8_t& flag(int r, int mb) {
    return flags_[static_cast<std::size_t>(r) * static_cast<std::size_t>(m_) +
                  static_cast<std::size_t>(mb)];
  }

  bool ready(int r, const PipeAction& a) {
    if (a.work == PipeWork::forward) {
      return r == 0 || (flag(r, a.microbatch) & kActivationIn) != 0;
    }
    if (a.work == PipeWork::input_grad) {
      return (flag(r, a.microbatch) & (r + 1 == p_ ? kForwardDone : kGradientIn)) != 0;
    }
    return true;  // a W follows its own B in the rank's order
  }

  void run(int r, const PipeAction& a, Order& o, std::vector<Order>& recvs) {
    o.push_back(a);
    if (a.work == PipeWork::forward) {
      flag(r, a.microbatch) |= kForwardDone;
      if (r + 1 < p_) {
        o.push_back(make(PipeWork::post_send_forward, a.microbatch, 0));
        recvs[static_cast<std::size_t>(r + 1)].push_back(
            make(PipeWork::post_recv_forward, a.microbatch, 0));
        flag(r + 1, a.microbatch) |= kActivationIn;
      }
    } else if (a.work == PipeWork::input_grad && r > 0) {
      o.push_back(make(PipeWork::post_send_backward, a.microbatch, 0));
      recvs[static_cast<std::size_t>(r - 1)].push_back(
          make(PipeWork::post_recv_backward, a.microbatch, 0));
      flag(r - 1, a.microbatch) |= kGradientIn;
    }
  }

  int p_, m_;
  std::vector<std::uint8_t> flags_;  // per (rank, microbatch)
};

}  // namespace

std::vector<Order> zb_h2_orders(int p, int m) {
  std::vector<Order> compute;
  compute.reserve(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) compute.push_back(zb_h2_compute(p, m, r));
  return RoundComm(p, m).build(compute);
}

}  // namespace meshsim::pipeline_detail
