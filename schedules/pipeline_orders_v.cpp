// The V-shaped pipeline orders (pipeline_orders.hpp): ZB-V and DualPipeV, two chunks per rank
// (stages r and 2p-1-r), each with its communication as post_* and commit items. Where each order
// comes from is in pipeline_orders.cpp.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

#include "schedules/pipeline_orders_steps.hpp"
#include "sim/error.hpp"

namespace meshsim::pipeline_detail {
namespace {

PipeAction make_pair(int f_microbatch, int f_chunk, int b_microbatch, int b_chunk) {
  PipeAction a = make(PipeWork::forward_backward, f_microbatch, f_chunk);
  a.pair_microbatch = b_microbatch;
  a.pair_chunk = b_chunk;
  a.pair_split = false;  // DualPipeV overlaps a forward with a full (B + W) backward
  return a;
}

// ZB-V (PyTorch's ScheduleZBVZeroBubble order). Chunk 0 is stage r, chunk 1 stage 2p-1-r. The
// order is built for max(2p-1, m) microbatches and the actions of microbatches >= m dropped.
Order zb_v_order(int p, int m, int r) {
  const int n = std::max(2 * p - 1, m);
  Order out;
  out.reserve(static_cast<std::size_t>(6 * n));
  int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  const auto push = [&](PipeWork w, int mb, int chunk) {
    if (mb < m) out.push_back(make(w, mb, chunk));
  };
  for (int i = 0; i < 2 * (p - r) - 1; ++i) push(PipeWork::forward, f0++, 0);
  for (int i = 0; i < r; ++i) {
    push(PipeWork::forward, f1++, 1);
    push(PipeWork::forward, f0++, 0);
  }
  for (int i = 0; i < p - r; ++i) {
    push(PipeWork::forward, f1++, 1);
    push(PipeWork::input_grad, b1, 1);
    push(PipeWork::weight_grad, b1++, 1);
  }
  while (f1 < f0 || f0 < n) {
    if (f0 < n) push(PipeWork::forward, f0++, 0);
    push(PipeWork::input_grad, b0, 0);
    push(PipeWork::weight_grad, b0++, 0);
    push(PipeWork::forward, f1++, 1);
    push(PipeWork::input_grad, b1, 1);
    push(PipeWork::weight_grad, b1++, 1);
  }
  int w0 = b0, w1 = b1;
  for (int i = 0; i < r; ++i) {
    push(PipeWork::input_grad, b0++, 0);
    push(PipeWork::input_grad, b1++, 1);
  }
  for (int i = 0; i < p - r; ++i) {
    push(PipeWork::input_grad, b0++, 0);
    push(PipeWork::weight_grad, w0++, 0);
  }
  while (w1 < b1) push(PipeWork::weight_grad, w1++, 1);
  while (w0 < b0) push(PipeWork::weight_grad, w0++, 0);
  MESHSIM_CHECK(f0 == n && f1 == n && b0 == n && b1 == n && w0 == n && w1 == n,
                "zb-v order: every chunk runs F, B and W once per microbatch");
  return out;
}

// ZB-V with its communication, after PyTorch's pipelining runtime. Its lowering (_add_send_recv)
// puts the send right after each compute action whose output goes to another rank, and the
// matching receive into the receiver's list at the moment the sender produces the message, so
// every rank pair posts its receives in the order the sender sends. The runtime issues each send
// and receive as it meets it and waits for a receive only before the compute that uses it (sends
// only at the end). A commit here waits before the next compute, so each transfer is committed
// where both of its sides meet: the ranks take their next compute actions in synchronous rounds
// (an action runs in the first round after its input arrived; a rank with nothing ready idles),
// every message produced in a round is sent and received at the boundary that closes the round,
// and each rank commits once per boundary (one batched exchange per peer, sends and receives
// together). With F = B = W a round lasts one action on every rank, both sides of each transfer
// reach its boundary at the same instant and no commit costs time; with other ratios a rank can
// reach a boundary before its peer and wait there (the runtime would not).
class ZbVBuilder {
 public:
  ZbVBuilder(int p, int m) : p_(p), m_(m) {
    flags_.assign(static_cast<std::size_t>(2 * p) * static_cast<std::size_t>(m), 0);
  }

  std::vector<Order> build() && {
    const auto ranks = static_cast<std::size_t>(p_);
    std::vector<Order> compute(ranks), out(ranks);
    std::size_t left = 0;
    for (int r = 0; r < p_; ++r) {
      compute[idx(r)] = zb_v_order(p_, m_, r);
      left += compute[idx(r)].size();
      out[idx(r)].reserve(3 * compute[idx(r)].size());
    }
    std::vector<std::size_t> next(ranks, 0);
    std::vector<char> runs(ranks, 0);
    std::vector<Order> recvs(ranks);
    while (left > 0) {
      for (int r = 0; r < p_; ++r) {  // decide on the state at the start of the round
        const auto& order = compute[idx(r)];
        runs[idx(r)] = next[idx(r)] < order.size() && ready(r, order[next[idx(r)]]) ? 1 : 0;
      }
      bool progress = false;
      for (int r = 0; r < p_; ++r) {
        if (runs[idx(r)] == 0) continue;
        progress = true;
        --left;
        run(r, compute[idx(r)][next[idx(r)]++], out[idx(r)], recvs);
      }
      MESHSIM_CHECK(progress, "zb-v order: a round with nothing ready");
      for (int r = 0; r < p_; ++r) {
        Order& o = out[idx(r)];
        o.insert(o.end(), recvs[idx(r)].begin(), recvs[idx(r)].end());
        recvs[idx(r)].clear();
        if (!o.empty() && is_comm(o.back().work)) {
          o.push_back(make(PipeWork::commit_async, 0, 0));
        }
      }
    }
    return out;
  }

 private:
  static constexpr std::uint8_t kForwardDone = 1, kBackwardDone = 2, kActivationIn = 4,
                                kGradientIn = 8;

  int stage(int r, int chunk) const { return chunk == 0 ? r : 2 * p_ - 1 - r; }
  int owner(int s) const { return s < p_ ? s : 2 * p_ - 1 - s; }
  int chunk_of(int s) const { return s < p_ ? 0 : 1; }
  std::uint8_t& flag(int s, int mb) {
    return flags_[static_cast<std::size_t>(s) * static_cast<std::size_t>(m_) + idx(mb)];
  }
  static std::size_t idx(int i) { return static_cast<std::size_t>(i); }

  // Whether the action's input is there: the neighbouring stage done on this rank (the V's
  // turn), or its message received in an earlier round.
  bool ready(int r, const PipeAction& a) {
    const int s = stage(r, a.chunk);
    if (a.work == PipeWork::forward && s > 0) {
      return owner(s - 1) == r ? (flag(s - 1, a.microbatch) & kForwardDone) != 0
                               : (flag(s, a.microbatch) & kActivationIn) != 0;
    }
    if (a.work == PipeWork::input_grad && s + 1 < 2 * p_) {
      return owner(s + 1) == r ? (flag(s + 1, a.microbatch) & kBackwardDone) != 0
                               : (flag(s, a.microbatch) & kGradientIn) != 0;
    }
    return true;
  }

  void run(int r, const PipeAction& a, Order& o, std::vector<Order>& recvs) {
    const int s = stage(r, a.chunk);
    o.push_back(a);
    if (a.work == PipeWork::forward) {
      flag(s, a.microbatch) |= kForwardDone;
      if (s + 1 < 2 * p_ && owner(s + 1) != r) {
        o.push_back(make(PipeWork::post_send_forward, a.microbatch, a.chunk));
        recvs[idx(owner(s + 1))].push_back(
            make(PipeWork::post_recv_forward, a.microbatch, chunk_of(s + 1)));
        flag(s + 1, a.microbatch) |= kActivationIn;
      }
    } else if (a.work == PipeWork::input_grad) {
      flag(s, a.microbatch) |= kBackwardDone;
      if (s > 0 && owner(s - 1) != r) {
        o.push_back(make(PipeWork::post_send_backward, a.microbatch, a.chunk));
        recvs[idx(owner(s - 1))].push_back(
            make(PipeWork::post_recv_backward, a.microbatch, chunk_of(s - 1)));
        flag(s - 1, a.microbatch) |= kGradientIn;
      }
    }
  }

  int p_, m_;
  std::vector<std::uint8_t> flags_;  // per (global stage, microbatch)
};

// DualPipeV: DeepSeek's eight steps, with its communication. Per chunk, forwards and backwards
// each take microbatches in order; a zero-bubble backward (input_grad) queues its W in a FIFO that
// the W steps pop. dualpipev.py queues a receive before the compute that needs it and a send after
// the compute that produced it, and issues everything queued as one batch it waits for right
// before each compute (_commit_and_wait_comm); a chunk step that finds nothing queued issues
// nothing. The same points here: post_* items where it appends, commit where it commits. Per
// (chunk, direction) the transfers take microbatches in order, as its per-chunk counters do; the
// ones it never appends (no peer: the pipeline's ends, or the V's turn on the last rank) are not
// posted.
class DualPipeVBuilder {
 public:
  DualPipeVBuilder(int p, int m, int r) : p_(p), m_(m), r_(r), first_(r == 0), last_(r == p - 1) {
    out_.reserve(static_cast<std::size_t>(14 * m));
  }

  Order build() && {
    const int p = p_, r = r_;
    // Step 1: nF0.
    for (int i = 0; i < 2 * (p - r - 1); ++i) forward_chunk(0);
    // Step 2: nF0F1; the next chunk-0 input is always asked for ahead, and a chunk-0 output goes
    // out after the chunk-1 forward that follows it. The last rank keeps its last chunk-1 output
    // for step 4.
    recv_forward(0);
    for (int i = 0; i < r + 1; ++i) {
      forward_chunk(0, false, false);
      recv_forward(0);
      forward_chunk(1, true, !last_ || i < r);
      send_forward(0);
    }
    // Step 3: nB1W1F1, zero bubble: B of chunk 1, then its W, then F of chunk 1 (whose input is
    // asked for before the W).
    for (int i = 0; i < p - r - 1; ++i) {
      backward_chunk(1, true);
      recv_forward(1);
      weight_chunk();
      forward_chunk(1, false, true);
    }
    // Step 4 (main): n x (F0 with B1, F1 with B0), overlapped pairs; the last rank runs its first
    // F0 and B1 one after the other.
    for (int i = 0; i < m_ - 2 * p + r + 1; ++i) {
      if (i == 0 && last_) {
        forward_chunk(0, false, false);
        send_forward(1);
        backward_chunk(1, false, true, false);
        send_forward(0);
        send_backward(1);
      } else {
        forward_backward_chunk(0, 1, i > 0);
      }
      forward_backward_chunk(1, 0, true);
    }
    // Step 5: nB1F1B0.
    for (int i = 0; i < p - r - 1; ++i) {
      backward_chunk(1, false);
      forward_backward_chunk(1, 0, true);
    }
    // Step 6: nB1B0; the second half of these backwards switch to zero bubble.
    const int step6 = r + 1;
    bool zero_bubble = false;
    for (int i = 0; i < step6; ++i) {
      if (i == step6 / 2 && r % 2 == 1) zero_bubble = true;
      backward_chunk(1, zero_bubble);
      if (i == step6 / 2 && r % 2 == 0) zero_bubble = true;
      backward_chunk(0, zero_bubble);
    }
    // Step 7: nWB0, zero bubble.
    for (int i = 0; i < p - r - 1; ++i) {
      weight_chunk();
      backward_chunk(0, true);
    }
    // Step 8: nW, then the last sends.
    for (int i = 0; i < r + 1; ++i) weight_chunk();
    commit();
    MESHSIM_CHECK(pending_.empty(), "dualpipev order: the W queue drains");
    for (const auto& counts : {next_f_, next_b_}) {
      MESHSIM_CHECK(counts[0] == m_ && counts[1] == m_,
                    "dualpipev order: every chunk runs each microbatch once");
    }
    MESHSIM_CHECK(posted_ == 0, "dualpipev order: everything posted is committed");
    return std::move(out_);
  }

 private:
  // The reference's chunk steps: receive (maybe), commit, compute, send (maybe).
  void forward_chunk(int c, bool recv = true, bool send = true) {
    if (recv) recv_forward(c);
    commit();
    forward(c);
    if (send) send_forward(c);
  }
  void backward_chunk(int c, bool zero_bubble, bool recv = true, bool send = true) {
    if (recv) recv_backward(c);
    commit();
    backward(c, zero_bubble);
    if (send) send_backward(c);
  }
  void forward_backward_chunk(int f_chunk, int b_chunk, bool recv_f) {
    if (recv_f) recv_forward(f_chunk);
    recv_backward(b_chunk);
    commit();
    pair(f_chunk, b_chunk);
    send_forward(f_chunk);
    send_backward(b_chunk);
  }
  void weight_chunk() {
    commit();
    weight();
  }

  // Which transfers exist: chunk 0 is stage r (input from r-1, output to r+1), chunk 1 is stage
  // 2p-1-r (input from r+1, output to r-1); the first rank's chunk 0 and chunk 1 are the
  // pipeline's first and last stages, the last rank's chunk 0 feeds its own chunk 1.
  bool has_f_input(int c) const { return c == 0 ? !first_ : !last_; }
  bool has_f_output(int c) const { return c == 0 ? !last_ : !first_; }
  void post(PipeWork w, std::array<int, 2>& counter, int c) {
    out_.push_back(make(w, counter[idx(c)]++, c));
    ++posted_;
  }
  void recv_forward(int c) {
    if (has_f_input(c)) post(PipeWork::post_recv_forward, recv_f_, c);
  }
  void send_forward(int c) {
    if (has_f_output(c)) post(PipeWork::post_send_forward, send_f_, c);
  }
  void recv_backward(int c) {  // the gradient of the forward's output
    if (has_f_output(c)) post(PipeWork::post_recv_backward, recv_b_, c);
  }
  void send_backward(int c) {  // the gradient of the forward's input
    if (has_f_input(c)) post(PipeWork::post_send_backward, send_b_, c);
  }
  void commit() {
    if (posted_ == 0) return;
    out_.push_back(make(PipeWork::commit, 0, 0));
    posted_ = 0;
  }

  void forward(int c) { out_.push_back(make(PipeWork::forward, next_f_[idx(c)]++, c)); }
  void backward(int c, bool zero_bubble) {
    const int mb = next_b_[idx(c)]++;
    if (zero_bubble) {
      out_.push_back(make(PipeWork::input_grad, mb, c));
      pending_.emplace_back(mb, c);
    } else {
      out_.push_back(make(PipeWork::backward, mb, c));
    }
  }
  void weight() {
    MESHSIM_CHECK(!pending_.empty(), "dualpipev order: a W step has a queued W");
    const auto [mb, c] = pending_.front();
    pending_.pop_front();
    out_.push_back(make(PipeWork::weight_grad, mb, c));
  }
  void pair(int f_chunk, int b_chunk) {
    const int fmb = next_f_[idx(f_chunk)]++;
    const int bmb = next_b_[idx(b_chunk)]++;
    out_.push_back(make_pair(fmb, f_chunk, bmb, b_chunk));
  }
  static std::size_t idx(int c) { return static_cast<std::size_t>(c); }

  int p_, m_, r_;
  bool first_, last_;
  std::array<int, 2> next_f_{0, 0};
  std::array<int, 2> next_b_{0, 0};
  std::array<int, 2> recv_f_{0, 0}, send_f_{0, 0}, recv_b_{0, 0}, send_b_{0, 0};
  int posted_ = 0;  // transfers posted since the last commit
  std::deque<std::pair<int, int>> pending_;
  Order out_;
};

}  // namespace

std::vector<Order> zb_v_orders(int p, int m) {
  return ZbVBuilder(p, m).build();
}

Order dualpipev_order(int p, int m, int r) {
  return DualPipeVBuilder(p, m, r).build();
}

}  // namespace meshsim::pipeline_detail
