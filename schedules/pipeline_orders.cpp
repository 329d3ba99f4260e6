#include "schedules/pipeline_orders.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

#include <fmt/format.h>

#include "sim/error.hpp"

// Where each order comes from (read for semantics; the code below is ours):
// - gpipe, 1f1b: the textbook schedules (ARCHITECTURE.md §4.2); 1F1B as in Megatron-LM's
//   forward_backward_pipelining_without_interleaving: warm-up min(p-r-1, m) forwards, then
//   one-forward-one-backward, then the cool-down backwards.
// - interleaved: Megatron-LM's forward_backward_pipelining_with_interleaving
//   (megatron/core/pipeline_parallel/schedules.py: get_schedule_table, get_model_chunk_id,
//   get_pp_rank_microbatches and the group-size checks).
// - zb-h1: the handcrafted ZB-H1 of Qi et al., "Zero Bubble Pipeline Parallelism" (2023): 1F1B
//   with the backward split into B and W, rank r letting r W's wait (PaddlePaddle's ZBH1 job
//   list has the same shape), the waiting W's taken first-in first-out as the zero-bubble code's
//   WeightGradStore queue does, the rest drained at the end.
// - zb-v: the handcrafted ZB-V order of PyTorch's torch.distributed.pipelining
//   ScheduleZBVZeroBubble (same paper, section 6); its communication after the same package's
//   runtime (_PipelineScheduleRuntime, _add_send_recv), see ZbVBuilder.
// - dualpipev: the eight steps of DeepSeek's DualPipeV (dualpipe/dualpipev.py, DualPipeV.step),
//   with its communication where that code queues and commits it (_recv_forward, _send_forward,
//   _recv_backward, _send_backward, _commit_and_wait_comm).
// The two V schedules carry their communication as post_* and commit items (pipeline_orders.hpp);
// the others leave it to the builder's exchange at every step boundary.

namespace meshsim {
namespace {

constexpr std::array<std::string_view, 6> kScheduleNames = {"gpipe", "1f1b", "interleaved",
                                                            "zb-h1", "zb-v", "dualpipev"};

// Upper bound on stages x microbatches x chunks: the orders hold a few entries per action.
constexpr long long kMaxWork = 1LL << 24;

PipeAction make(PipeWork work, int microbatch, int chunk) {
  PipeAction a;
  a.work = work;
  a.microbatch = microbatch;
  a.chunk = chunk;
  return a;
}

PipeAction make_pair(int f_microbatch, int f_chunk, int b_microbatch, int b_chunk) {
  PipeAction a = make(PipeWork::forward_backward, f_microbatch, f_chunk);
  a.pair_microbatch = b_microbatch;
  a.pair_chunk = b_chunk;
  a.pair_split = false;  // DualPipeV overlaps a forward with a full (B + W) backward
  return a;
}

bool is_comm(PipeWork w) {
  switch (w) {
    case PipeWork::post_recv_forward:
    case PipeWork::post_send_forward:
    case PipeWork::post_recv_backward:
    case PipeWork::post_send_backward:
    case PipeWork::commit:
    case PipeWork::commit_async:
      return true;
    default:
      return false;
  }
}

int group_size_of(const PipelineShape& shape) {
  return shape.group_size == 0 ? shape.stages : shape.group_size;
}

using Order = std::vector<PipeAction>;

// GPipe: every forward, then every backward, both in microbatch order.
Order gpipe_order(int m) {
  Order out;
  out.reserve(static_cast<std::size_t>(2 * m));
  for (int i = 0; i < m; ++i) out.push_back(make(PipeWork::forward, i, 0));
  for (int i = 0; i < m; ++i) out.push_back(make(PipeWork::backward, i, 0));
  return out;
}

// 1F1B: warm-up forwards, steady (F, B) pairs, cool-down backwards.
Order one_f_one_b_order(int p, int m, int r) {
  const int warmup = std::min(p - r - 1, m);
  Order out;
  out.reserve(static_cast<std::size_t>(2 * m));
  for (int i = 0; i < warmup; ++i) out.push_back(make(PipeWork::forward, i, 0));
  for (int k = 0; k < m - warmup; ++k) {
    out.push_back(make(PipeWork::forward, warmup + k, 0));
    out.push_back(make(PipeWork::backward, k, 0));
  }
  for (int k = m - warmup; k < m; ++k) out.push_back(make(PipeWork::backward, k, 0));
  return out;
}

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

int interleaved_warmup(int p, int m, int v, int g, int r) {
  return std::min(2 * (p - r - 1) + (v - 1) * g, m * v);
}

// Megatron's interleaved 1F1B: forward of step k is table[k]; backward of step k is
// (table[k].microbatch, v-1-table[k].chunk).
Order interleaved_order(int p, int m, int v, int g, int r) {
  const auto table = interleaved_table(m, v, g);
  const int total = m * v;
  const int warmup = interleaved_warmup(p, m, v, g, r);
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
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back(fwd(k + warmup));
    out.push_back(bwd(k));
  }
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

Order rank_order(const PipelineShape& shape, int r) {
  const int p = shape.stages, m = shape.microbatches;
  switch (shape.schedule) {
    case PipelineSchedule::gpipe:
      return gpipe_order(m);
    case PipelineSchedule::one_f_one_b:
      return one_f_one_b_order(p, m, r);
    case PipelineSchedule::interleaved:
      return interleaved_order(p, m, shape.chunks, group_size_of(shape), r);
    case PipelineSchedule::zb_h1:
      return zb_h1_order(p, m, r);
    case PipelineSchedule::zb_v:
      return ZbVBuilder(p, m).build()[static_cast<std::size_t>(r)];
    case PipelineSchedule::dualpipev:
      return DualPipeVBuilder(p, m, r).build();
  }
  MESHSIM_CHECK(false, "unknown pipeline schedule");
  return {};
}

bool is_v_shaped(PipelineSchedule s) {
  return s == PipelineSchedule::zb_v || s == PipelineSchedule::dualpipev;
}

void check_interleaved(const PipelineShape& shape) {
  const int p = shape.stages, m = shape.microbatches, v = shape.chunks;
  if (v < 2) {
    throw InputError(fmt::format(
        "`chunks` must be at least 2 for `schedule` interleaved (got {}): with one chunk per rank "
        "there is nothing to interleave (that is `schedule` 1f1b)",
        v));
  }
  if (p < 2) {
    throw InputError(fmt::format(
        "`stages` must be at least 2 for `schedule` interleaved (got {}): virtual chunks are "
        "interleaved across pipeline ranks, so there must be a pipeline (Megatron rejects a "
        "virtual pipeline without pipeline parallelism)",
        p));
  }
  if (shape.group_size < 0) {
    throw InputError(
        fmt::format("`group_size` must be at least 1, or 0 for the default (`stages`) (got {})",
                    shape.group_size));
  }
  const int g = group_size_of(shape);
  if (g < p || g > m) {
    throw InputError(fmt::format(
        "`group_size` {} must lie in [`stages` {}, `microbatches` {}] for `schedule` interleaved: "
        "Megatron's rule p <= g <= m (a group smaller than the pipeline reaches its next chunk "
        "before that chunk's inputs have come back around the ranks; a group cannot hold more "
        "microbatches than there are)",
        g, p, m));
  }
  const int last = m % g;
  if (last != 0 && last < p) {
    throw InputError(fmt::format(
        "`microbatches` {} leaves a last group of {} with `group_size` {} and `stages` {} for "
        "`schedule` interleaved: Megatron's rule m mod g = 0 or m mod g >= p (a last group "
        "smaller than the pipeline stalls on inputs still travelling through the ranks, a "
        "dependency bubble)",
        m, last, g, p));
  }
}

}  // namespace

std::string_view to_string(PipelineSchedule s) {
  return kScheduleNames[static_cast<std::size_t>(s)];
}

std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view s) {
  for (std::size_t i = 0; i < kScheduleNames.size(); ++i) {
    if (kScheduleNames[i] == s) return static_cast<PipelineSchedule>(i);
  }
  return std::nullopt;
}

int chunks_of(const PipelineShape& shape) {
  if (shape.schedule == PipelineSchedule::interleaved) return shape.chunks;
  if (is_v_shaped(shape.schedule)) return 2;
  return 1;
}

int global_stage(const PipelineShape& shape, int rank, int chunk) {
  MESHSIM_CHECK(rank >= 0 && rank < shape.stages, "global_stage: rank out of range");
  MESHSIM_CHECK(chunk >= 0 && chunk < chunks_of(shape), "global_stage: chunk out of range");
  if (shape.schedule == PipelineSchedule::interleaved) return chunk * shape.stages + rank;
  if (is_v_shaped(shape.schedule)) return chunk == 0 ? rank : 2 * shape.stages - 1 - rank;
  return rank;
}

void check_pipeline_shape(const PipelineShape& shape) {
  const std::string_view name = to_string(shape.schedule);
  if (shape.stages < 1) {
    throw InputError(fmt::format("`stages` must be at least 1 (got {})", shape.stages));
  }
  if (shape.microbatches < 1) {
    throw InputError(fmt::format("`microbatches` must be at least 1 (got {})", shape.microbatches));
  }
  if (shape.chunks < 1) {
    throw InputError(fmt::format("`chunks` must be at least 1 (got {})", shape.chunks));
  }
  if (shape.schedule != PipelineSchedule::interleaved && shape.group_size != 0) {
    throw InputError(fmt::format(
        "`group_size` {} does not apply to `schedule` {}: microbatch groups belong to the "
        "interleaved schedule",
        shape.group_size, name));
  }
  if (is_v_shaped(shape.schedule)) {
    // chunks == 1 is the unset default; the V schedules always place two chunks per rank.
    if (shape.chunks > 2) {
      throw InputError(fmt::format(
          "`chunks` {} does not fit `schedule` {}: a V schedule places exactly 2 chunks on each "
          "rank (stages r and 2p-1-r)",
          shape.chunks, name));
    }
  } else if (shape.schedule != PipelineSchedule::interleaved && shape.chunks != 1) {
    throw InputError(fmt::format(
        "`chunks` {} does not fit `schedule` {}: it places one chunk per rank (use `schedule` "
        "interleaved for virtual chunks)",
        shape.chunks, name));
  }
  const long long work = static_cast<long long>(shape.stages) * shape.microbatches *
                         static_cast<long long>(std::max(shape.chunks, 2));
  if (work > kMaxWork) {
    throw InputError(fmt::format(
        "`stages` {} x `microbatches` {} x chunks is too large: at most {} (stage, microbatch, "
        "chunk) actions are supported",
        shape.stages, shape.microbatches, kMaxWork));
  }
  switch (shape.schedule) {
    case PipelineSchedule::interleaved:
      check_interleaved(shape);
      break;
    case PipelineSchedule::dualpipev:
      if (shape.microbatches < 2 * shape.stages) {
        throw InputError(fmt::format(
            "`microbatches` {} is too few for `schedule` dualpipev with `stages` {}: DualPipeV "
            "needs m >= 2p = {} (its eight steps fill both arms of the V before the overlapped "
            "steady state)",
            shape.microbatches, shape.stages, 2 * shape.stages));
      }
      break;
    case PipelineSchedule::gpipe:
    case PipelineSchedule::one_f_one_b:
    case PipelineSchedule::zb_h1:  // valid for any m; its closed-form makespan assumes m >= p
    case PipelineSchedule::zb_v:   // valid for any m; its closed-form makespan assumes m >= 2p-1
      break;
  }
}

std::vector<std::vector<PipeAction>> pipeline_orders(const PipelineShape& shape) {
  check_pipeline_shape(shape);
  std::vector<std::vector<PipeAction>> orders;
  orders.reserve(static_cast<std::size_t>(shape.stages));
  if (shape.schedule == PipelineSchedule::zb_v) {
    return ZbVBuilder(shape.stages, shape.microbatches).build();
  }
  for (int r = 0; r < shape.stages; ++r) orders.push_back(rank_order(shape, r));
  return orders;
}

int warmup_forwards(const PipelineShape& shape, int rank) {
  check_pipeline_shape(shape);
  if (rank < 0 || rank >= shape.stages) {
    throw InputError(
        fmt::format("pipeline rank {} is outside [0, `stages` {})", rank, shape.stages));
  }
  // The forwards issued before the rank's first backward, input_grad or forward_backward. For
  // the 1F1B family this is the warm-up phase plus the forward that opens the steady state, e.g.
  // min(p-r, m) for 1F1B (Megatron's num_warmup_microbatches is one less when m > p-r-1).
  int count = 0;
  for (const auto& a : rank_order(shape, rank)) {
    if (is_comm(a.work)) continue;
    if (a.work != PipeWork::forward) break;
    ++count;
  }
  return count;
}

}  // namespace meshsim
