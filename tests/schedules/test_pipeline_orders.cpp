#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "schedules/pipeline_orders.hpp"
#include "sim/error.hpp"

using namespace meshsim;

namespace {

using Orders = std::vector<std::vector<PipeAction>>;
using Time = std::int64_t;

PipelineShape shape_of(PipelineSchedule s, int p, int m, int v = 1, int g = 0) {
  PipelineShape sh;
  sh.schedule = s;
  sh.stages = p;
  sh.microbatches = m;
  sh.chunks = v;
  sh.group_size = g;
  return sh;
}

PipeAction act(PipeWork w, int mb, int chunk) {
  PipeAction a;
  a.work = w;
  a.microbatch = mb;
  a.chunk = chunk;
  return a;
}
PipeAction F(int mb, int chunk = 0) {
  return act(PipeWork::forward, mb, chunk);
}
PipeAction BW(int mb, int chunk = 0) {
  return act(PipeWork::backward, mb, chunk);
}

std::size_t at(int i) {
  return static_cast<std::size_t>(i);
}

bool is_comm(PipeWork w) {
  return w == PipeWork::post_recv_forward || w == PipeWork::post_send_forward ||
         w == PipeWork::post_recv_backward || w == PipeWork::post_send_backward ||
         w == PipeWork::commit;
}

// The compute actions of an order, without its communication items.
std::vector<PipeAction> compute_only(const std::vector<PipeAction>& order) {
  std::vector<PipeAction> out;
  for (const auto& a : order) {
    if (!is_comm(a.work)) out.push_back(a);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// A throwaway timing model for the orders (not the engine): one chunk's forward costs f, its
// input gradient b, its weight gradient w (a full backward b + w, an overlapped pair the sum of
// its parts), communication is free. An action starts when the rank's previous action has
// finished and its inputs exist: the forward of global stage s needs the forward of stage s-1 of
// the same microbatch; the (input-)backward of stage s needs that of stage s+1 (the last stage
// only its own forward); a W needs its own B. Returns the makespan, or -1 on a deadlock.
struct ChunkCosts {
  Time f = 1, b = 1, w = 1;
};

struct Timing {
  Time makespan = -1;
  std::vector<Time> busy;  // per rank
};

Timing simulate(const PipelineShape& sh, const Orders& orders, ChunkCosts c) {
  const int p = sh.stages, m = sh.microbatches;
  const int stages = p * chunks_of(sh);
  std::vector<Time> fwd_end(at(stages * m), -1), bwd_end(at(stages * m), -1);
  const auto key = [m](int s, int mb) { return at(s * m + mb); };
  std::vector<std::size_t> next(at(p), 0);
  std::vector<Time> clock(at(p), 0);
  Timing out;
  out.busy.assign(at(p), 0);
  std::size_t left = 0;
  for (const auto& o : orders) left += o.size();
  bool progress = true;
  while (left > 0 && progress) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      const auto& order = orders[at(r)];
      while (next[at(r)] < order.size()) {
        const PipeAction& a = order[next[at(r)]];
        const auto fwd_input = [&](int mb, int chunk) -> Time {
          const int s = global_stage(sh, r, chunk);
          return s == 0 ? 0 : fwd_end[key(s - 1, mb)];
        };
        const auto bwd_input = [&](int mb, int chunk) -> Time {
          const int s = global_stage(sh, r, chunk);
          return s == stages - 1 ? fwd_end[key(s, mb)] : bwd_end[key(s + 1, mb)];
        };
        Time ready = 0, cost = 0;
        switch (a.work) {
          case PipeWork::forward:
            ready = fwd_input(a.microbatch, a.chunk);
            cost = c.f;
            break;
          case PipeWork::backward:
            ready = bwd_input(a.microbatch, a.chunk);
            cost = c.b + c.w;
            break;
          case PipeWork::input_grad:
            ready = bwd_input(a.microbatch, a.chunk);
            cost = c.b;
            break;
          case PipeWork::weight_grad:
            ready = bwd_end[key(global_stage(sh, r, a.chunk), a.microbatch)];
            cost = c.w;
            break;
          case PipeWork::forward_backward: {
            const Time fin = fwd_input(a.microbatch, a.chunk);
            const Time bin = bwd_input(a.pair_microbatch, a.pair_chunk);
            ready = (fin < 0 || bin < 0) ? -1 : std::max(fin, bin);
            cost = c.f + c.b + (a.pair_split ? 0 : c.w);
            break;
          }
          default:  // communication items take no compute time
            ready = 0;
            cost = 0;
            break;
        }
        if (ready < 0) break;
        const Time end = std::max(clock[at(r)], ready) + cost;
        clock[at(r)] = end;
        out.busy[at(r)] += cost;
        switch (a.work) {
          case PipeWork::forward:
            fwd_end[key(global_stage(sh, r, a.chunk), a.microbatch)] = end;
            break;
          case PipeWork::backward:
          case PipeWork::input_grad:
            bwd_end[key(global_stage(sh, r, a.chunk), a.microbatch)] = end;
            break;
          case PipeWork::weight_grad:
            break;
          case PipeWork::forward_backward:
            fwd_end[key(global_stage(sh, r, a.chunk), a.microbatch)] = end;
            bwd_end[key(global_stage(sh, r, a.pair_chunk), a.pair_microbatch)] = end;
            break;
          default:
            break;
        }
        ++next[at(r)];
        --left;
        progress = true;
      }
    }
  }
  if (left == 0) out.makespan = *std::max_element(clock.begin(), clock.end());
  return out;
}

Time makespan(const PipelineShape& sh, ChunkCosts c) {
  return simulate(sh, pipeline_orders(sh), c).makespan;
}

// Every rank runs each (microbatch, chunk) forward once, its input gradient once and its weight
// gradient once (a full backward or a non-split pair counts as both), W after B, B after F.
bool covers_each_once(const PipelineShape& sh, const Orders& orders) {
  const int v = chunks_of(sh), m = sh.microbatches;
  for (const auto& order : orders) {
    std::vector<int> f(at(v * m), 0), b(at(v * m), 0), w(at(v * m), 0);
    const auto k = [m](int chunk, int mb) { return at(chunk * m + mb); };
    const auto do_f = [&](int mb, int chunk) { return ++f[k(chunk, mb)] == 1; };
    const auto do_b = [&](int mb, int chunk) {
      return f[k(chunk, mb)] == 1 && ++b[k(chunk, mb)] == 1;
    };
    const auto do_w = [&](int mb, int chunk) {
      return b[k(chunk, mb)] == 1 && ++w[k(chunk, mb)] == 1;
    };
    for (const auto& a : order) {
      if (a.chunk < 0 || a.chunk >= v || a.microbatch < 0 || a.microbatch >= m) return false;
      bool ok = true;
      switch (a.work) {
        case PipeWork::forward:
          ok = do_f(a.microbatch, a.chunk);
          break;
        case PipeWork::backward:
          ok = do_b(a.microbatch, a.chunk) && do_w(a.microbatch, a.chunk);
          break;
        case PipeWork::input_grad:
          ok = do_b(a.microbatch, a.chunk);
          break;
        case PipeWork::weight_grad:
          ok = do_w(a.microbatch, a.chunk);
          break;
        case PipeWork::forward_backward:
          ok = do_f(a.microbatch, a.chunk) && do_b(a.pair_microbatch, a.pair_chunk) &&
               (a.pair_split || do_w(a.pair_microbatch, a.pair_chunk));
          break;
        default:
          break;
      }
      if (!ok) return false;
    }
    for (std::size_t i = 0; i < f.size(); ++i) {
      if (f[i] != 1 || b[i] != 1 || w[i] != 1) return false;
    }
  }
  return true;
}

// Peak number of chunk activations held per rank: a forward adds one, the end of its weight
// gradient (a full backward, a W, or a pair's full backward) frees it. With `until_b`, the
// activation counts as freed at the input gradient instead.
std::vector<int> peak_in_flight(const Orders& orders, bool until_b = false) {
  std::vector<int> peaks;
  for (const auto& order : orders) {
    int held = 0, peak = 0;
    for (const auto& a : order) {
      switch (a.work) {
        case PipeWork::forward:
          ++held;
          break;
        case PipeWork::backward:
          --held;
          break;
        case PipeWork::input_grad:
          if (until_b) --held;
          break;
        case PipeWork::weight_grad:
          if (!until_b) --held;
          break;
        case PipeWork::forward_backward:
          ++held;
          peak = std::max(peak, held);
          if (until_b || !a.pair_split) --held;
          break;
        default:
          break;
      }
      peak = std::max(peak, held);
    }
    peaks.push_back(peak);
  }
  return peaks;
}

// The p2p messages between ranks, per ordered (src, dst) pair: in the sender's action order
// (what it sends after each action) and in the receiver's action order (what each action needs
// before it runs). Within one action, the forward's message comes before the backward's.
struct Message {
  bool grad = false;  // activation gradient (backward) or activation (forward)
  int microbatch = 0;
  int from_stage = 0;
  bool operator==(const Message&) const = default;
};
using Channel = std::map<std::pair<int, int>, std::vector<Message>>;

int owner_rank(const PipelineShape& sh, int stage) {
  const int p = sh.stages;
  if (sh.schedule == PipelineSchedule::interleaved) return stage % p;
  if (sh.schedule == PipelineSchedule::zb_v || sh.schedule == PipelineSchedule::dualpipev) {
    return stage < p ? stage : 2 * p - 1 - stage;
  }
  return stage;
}

// Ordered rank pairs whose send order differs from the receive order.
std::vector<std::pair<int, int>> p2p_order_mismatches(const PipelineShape& sh,
                                                      const Orders& orders) {
  const int stages = sh.stages * chunks_of(sh);
  Channel sent, received;
  for (int r = 0; r < sh.stages; ++r) {
    for (const auto& a : orders[at(r)]) {
      std::vector<std::tuple<bool, int, int>> parts;  // (is_backward, microbatch, chunk)
      switch (a.work) {
        case PipeWork::forward:
          parts.emplace_back(false, a.microbatch, a.chunk);
          break;
        case PipeWork::backward:
        case PipeWork::input_grad:
          parts.emplace_back(true, a.microbatch, a.chunk);
          break;
        case PipeWork::weight_grad:
          break;
        case PipeWork::forward_backward:
          parts.emplace_back(false, a.microbatch, a.chunk);
          parts.emplace_back(true, a.pair_microbatch, a.pair_chunk);
          break;
        default:
          break;
      }
      for (const auto& [is_bwd, mb, chunk] : parts) {
        const int s = global_stage(sh, r, chunk);
        const int to = is_bwd ? s - 1 : s + 1;    // where this action's output goes
        const int from = is_bwd ? s + 1 : s - 1;  // where its input comes from
        if (to >= 0 && to < stages && owner_rank(sh, to) != r) {
          sent[{r, owner_rank(sh, to)}].push_back(Message{is_bwd, mb, s});
        }
        if (from >= 0 && from < stages && owner_rank(sh, from) != r) {
          received[{owner_rank(sh, from), r}].push_back(Message{is_bwd, mb, from});
        }
      }
    }
  }
  std::vector<std::pair<int, int>> bad;
  for (const auto& [pair, msgs] : sent) {
    if (received[pair] != msgs) bad.push_back(pair);
  }
  return bad;
}

// For orders that place their own communication (post_* and commit items): a send is posted
// after the compute that produced it, a receive is committed before the compute that needs it,
// nothing is posted twice or left uncommitted, every input from another rank is received, and
// per ordered (src, dst) pair the receives are posted in the order the sends are (p2p matches
// by position). Returns the first problem found, or an empty string.
std::string explicit_comm_problem(const PipelineShape& sh, const Orders& orders) {
  const int stages = sh.stages * chunks_of(sh);
  Channel sent, received;
  for (int r = 0; r < sh.stages; ++r) {
    // (kind, mb, chunk) -> 1 posted, 2 committed; kind 0/1: the receive of a forward's/backward's
    // input, 2/3: the send of a forward's/backward's output.
    std::map<std::tuple<int, int, int>, int> state;
    std::vector<std::tuple<int, int, int>> pending;
    std::map<std::pair<int, int>, bool> f_done, b_done;
    const auto where = [&](const PipeAction& a) {
      return "rank " + std::to_string(r) + " mb " + std::to_string(a.microbatch) + " chunk " +
             std::to_string(a.chunk) + ": ";
    };
    // The rank a compute's input comes from, or -1 when it is on this rank (or none).
    const auto input_peer = [&](bool backward, int chunk) {
      const int s = global_stage(sh, r, chunk);
      const int from = backward ? s + 1 : s - 1;
      if (from < 0 || from >= stages || owner_rank(sh, from) == r) return -1;
      return owner_rank(sh, from);
    };
    const auto output_peer = [&](bool backward, int chunk) {
      const int s = global_stage(sh, r, chunk);
      const int to = backward ? s - 1 : s + 1;
      if (to < 0 || to >= stages || owner_rank(sh, to) == r) return -1;
      return owner_rank(sh, to);
    };
    const auto run = [&](bool backward, int mb, int chunk) -> std::string {
      if (input_peer(backward, chunk) >= 0 && state[{backward ? 1 : 0, mb, chunk}] != 2) {
        return std::string(backward ? "backward" : "forward") + " runs before its input is in";
      }
      (backward ? b_done : f_done)[{mb, chunk}] = true;
      return "";
    };
    for (const auto& a : orders[at(r)]) {
      std::string bad;
      const int s = global_stage(sh, r, a.chunk);
      switch (a.work) {
        case PipeWork::post_send_forward:
        case PipeWork::post_send_backward: {
          const bool bwd = a.work == PipeWork::post_send_backward;
          const int peer = output_peer(bwd, a.chunk);
          if (peer < 0) {
            bad = "a send with no peer";
          } else if (!(bwd ? b_done : f_done)[{a.microbatch, a.chunk}]) {
            bad = "a send posted before its compute";
          } else if (state[{bwd ? 3 : 2, a.microbatch, a.chunk}]++ != 0) {
            bad = "a send posted twice";
          } else {
            sent[{r, peer}].push_back(Message{bwd, a.microbatch, s});
          }
          break;
        }
        case PipeWork::post_recv_forward:
        case PipeWork::post_recv_backward: {
          const bool bwd = a.work == PipeWork::post_recv_backward;
          const int peer = input_peer(bwd, a.chunk);
          auto& st = state[{bwd ? 1 : 0, a.microbatch, a.chunk}];
          if (peer < 0) {
            bad = "a receive with no peer";
          } else if (st != 0) {
            bad = "a receive posted twice";
          } else {
            st = 1;
            pending.emplace_back(bwd ? 1 : 0, a.microbatch, a.chunk);
            received[{peer, r}].push_back(Message{bwd, a.microbatch, bwd ? s + 1 : s - 1});
          }
          break;
        }
        case PipeWork::commit:
        case PipeWork::commit_async:
          for (const auto& k : pending) state[k] = 2;
          pending.clear();
          break;
        case PipeWork::forward:
          bad = run(false, a.microbatch, a.chunk);
          break;
        case PipeWork::backward:
        case PipeWork::input_grad:
          bad = run(true, a.microbatch, a.chunk);
          break;
        case PipeWork::forward_backward:
          bad = run(false, a.microbatch, a.chunk);
          if (bad.empty()) bad = run(true, a.pair_microbatch, a.pair_chunk);
          break;
        case PipeWork::weight_grad:
          break;
      }
      if (!bad.empty()) return where(a) + bad;
    }
    if (!pending.empty()) return "rank " + std::to_string(r) + ": receives left uncommitted";
  }
  for (const auto& [pair, msgs] : sent) {
    if (received[pair] != msgs) {
      return "pair " + std::to_string(pair.first) + " -> " + std::to_string(pair.second) +
             ": receives posted in another order than the sends";
    }
  }
  for (const auto& [pair, msgs] : received) {
    if (sent[pair] != msgs) {
      return "pair " + std::to_string(pair.first) + " -> " + std::to_string(pair.second) +
             ": receives without sends";
    }
  }
  return "";
}

// Whether the order is F^w (F B)^(n-w) B^w with full backwards: warm-up, steady, cool-down.
bool warmup_steady_cooldown(const std::vector<PipeAction>& order, int n, int w) {
  if (order.size() != at(2 * n)) return false;
  std::size_t i = 0;
  for (int k = 0; k < w; ++k) {
    if (order[i++].work != PipeWork::forward) return false;
  }
  for (int k = 0; k < n - w; ++k) {
    if (order[i++].work != PipeWork::forward) return false;
    if (order[i++].work != PipeWork::backward) return false;
  }
  for (int k = 0; k < w; ++k) {
    if (order[i++].work != PipeWork::backward) return false;
  }
  return true;
}

bool interleaved_valid(int p, int m, int g) {
  return p <= g && g <= m && (m % g == 0 || m % g >= p);
}

}  // namespace

TEST_CASE("pipeline schedule names round-trip") {
  for (const auto s :
       {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved,
        PipelineSchedule::zb_h1, PipelineSchedule::zb_h2, PipelineSchedule::zb_v,
        PipelineSchedule::dualpipev}) {
    CHECK(parse_pipeline_schedule(to_string(s)) == s);
  }
  CHECK(to_string(PipelineSchedule::one_f_one_b) == "1f1b");
  CHECK(to_string(PipelineSchedule::zb_h1) == "zb-h1");
  CHECK_FALSE(parse_pipeline_schedule("1F1B").has_value());
}

TEST_CASE("chunks and global stages") {
  const auto inter = shape_of(PipelineSchedule::interleaved, 4, 8, 3);
  CHECK(chunks_of(inter) == 3);
  CHECK(global_stage(inter, 1, 2) == 9);  // c*p + r
  const auto v = shape_of(PipelineSchedule::zb_v, 4, 8);
  CHECK(chunks_of(v) == 2);
  CHECK(global_stage(v, 1, 0) == 1);  // r
  CHECK(global_stage(v, 1, 1) == 6);  // 2p-1-r
  CHECK(chunks_of(shape_of(PipelineSchedule::dualpipev, 4, 8)) == 2);
  CHECK(chunks_of(shape_of(PipelineSchedule::zb_h1, 4, 8)) == 1);
}

TEST_CASE("every schedule runs each (microbatch, chunk) forward and backward exactly once") {
  std::vector<PipelineShape> shapes;
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 3 * p + 2; ++m) {
      shapes.push_back(shape_of(PipelineSchedule::gpipe, p, m));
      shapes.push_back(shape_of(PipelineSchedule::one_f_one_b, p, m));
      shapes.push_back(shape_of(PipelineSchedule::zb_h1, p, m));
      shapes.push_back(shape_of(PipelineSchedule::zb_h2, p, m));
      shapes.push_back(shape_of(PipelineSchedule::zb_v, p, m));
      if (m >= 2 * p) shapes.push_back(shape_of(PipelineSchedule::dualpipev, p, m));
      for (int v = 2; v <= 3 && p >= 2; ++v) {
        for (int g = p; g <= m; ++g) {
          if (interleaved_valid(p, m, g)) {
            shapes.push_back(shape_of(PipelineSchedule::interleaved, p, m, v, g));
          }
        }
      }
    }
  }
  for (const auto& sh : shapes) {
    CAPTURE(to_string(sh.schedule));
    CAPTURE(sh.stages);
    CAPTURE(sh.microbatches);
    CAPTURE(sh.chunks);
    CAPTURE(sh.group_size);
    const auto orders = pipeline_orders(sh);
    REQUIRE(orders.size() == at(sh.stages));
    CHECK(covers_each_once(sh, orders));
    // No order deadlocks: every action eventually runs (with blocking dependencies).
    CHECK(simulate(sh, orders, {2, 3, 1}).makespan > 0);
  }
}

TEST_CASE("1F1B, p=4, m=8, F=1, B+W=2 (design section 6)") {
  const auto sh = shape_of(PipelineSchedule::one_f_one_b, 4, 8);
  const auto orders = pipeline_orders(sh);
  const auto t = simulate(sh, orders, {1, 1, 1});
  // (m+p-1)(F+B+W) = 11 * 3 = 33.
  CHECK(t.makespan == 33);
  // Bubble fraction: idle / (p * makespan) = (4*33 - 4*24) / (4*33) = 3/11.
  Time busy = 0;
  for (const Time b : t.busy) busy += b;
  const Time idle = 4 * t.makespan - busy;
  CHECK(idle * 11 == 4 * t.makespan * 3);
  // Peak in-flight microbatches min(p-r, m): 4, 3, 2, 1.
  CHECK(peak_in_flight(orders) == std::vector<int>{4, 3, 2, 1});
  // Forwards before the first backward: the warm-up min(p-r-1, m) plus the steady state's first
  // forward.
  for (int r = 0; r < 4; ++r) CHECK(warmup_forwards(sh, r) == 4 - r);
}

TEST_CASE("1F1B and interleaved: warm-up + steady + cool-down = m (or m*v)") {
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 3 * p; ++m) {
      const auto sh = shape_of(PipelineSchedule::one_f_one_b, p, m);
      const auto orders = pipeline_orders(sh);
      for (int r = 0; r < p; ++r) {
        const int w = std::min(p - r - 1, m);  // warm-up min(p-r-1, m)
        CHECK(warmup_steady_cooldown(orders[at(r)], m, w));
        CHECK(warmup_forwards(sh, r) == (m > w ? w + 1 : w));
      }
      CHECK(peak_in_flight(orders).front() == std::min(p, m));
    }
  }
  for (int p = 2; p <= 5; ++p) {
    for (int v = 2; v <= 4; ++v) {
      for (int m = p; m <= 3 * p + 1; ++m) {
        for (int g = p; g <= m; ++g) {
          if (!interleaved_valid(p, m, g)) continue;
          const auto sh = shape_of(PipelineSchedule::interleaved, p, m, v, g);
          const auto orders = pipeline_orders(sh);
          for (int r = 0; r < p; ++r) {
            // warm-up min(2(p-r-1) + (v-1)g, m*v)
            const int w = std::min(2 * (p - r - 1) + (v - 1) * g, m * v);
            CHECK(warmup_steady_cooldown(orders[at(r)], m * v, w));
          }
        }
      }
    }
  }
}

TEST_CASE("interleaved follows Megatron's schedule table") {
  // p=2, m=4, v=2, g=2. Megatron's table lists, group by group (microbatches 0-1, then 2-3),
  // chunk 0 over the group's microbatches and then chunk 1:
  //   step k:      0      1      2      3      4      5      6      7
  //   (mb, chunk): (0,0)  (1,0)  (0,1)  (1,1)  (2,0)  (3,0)  (2,1)  (3,1)
  // The backward of step k is (table[k].mb, v-1-table[k].chunk):
  //                (0,1)  (1,1)  (0,0)  (1,0)  (2,1)  (3,1)  (2,0)  (3,0)
  // Rank 0 warm-up min(2(p-r-1) + (v-1)g, mv) = 4 forwards, rank 1 warm-up 2; then steady
  // (F of step k+warmup, B of step k), then the remaining backwards.
  const auto sh = shape_of(PipelineSchedule::interleaved, 2, 4, 2, 2);
  const auto orders = pipeline_orders(sh);
  const std::vector<PipeAction> rank0 = {F(0, 0),  F(1, 0),  F(0, 1),  F(1, 1),  F(2, 0), BW(0, 1),
                                         F(3, 0),  BW(1, 1), F(2, 1),  BW(0, 0), F(3, 1), BW(1, 0),
                                         BW(2, 1), BW(3, 1), BW(2, 0), BW(3, 0)};
  const std::vector<PipeAction> rank1 = {F(0, 0), F(1, 0),  F(0, 1),  BW(0, 1), F(1, 1), BW(1, 1),
                                         F(2, 0), BW(0, 0), F(3, 0),  BW(1, 0), F(2, 1), BW(2, 1),
                                         F(3, 1), BW(3, 1), BW(2, 0), BW(3, 0)};
  CHECK(orders[0] == rank0);
  CHECK(orders[1] == rank1);

  // A last group that takes the remaining microbatches: p=2, m=5, v=2, g=3 -> groups {0,1,2},
  // {3,4}; forward table (0,0) (1,0) (2,0) (0,1) (1,1) (2,1) (3,0) (4,0) (3,1) (4,1).
  const auto orders5 = pipeline_orders(shape_of(PipelineSchedule::interleaved, 2, 5, 2, 3));
  std::vector<PipeAction> forwards;
  for (const auto& a : orders5[1]) {
    if (a.work == PipeWork::forward) forwards.push_back(a);
  }
  CHECK(forwards == std::vector<PipeAction>{F(0, 0), F(1, 0), F(2, 0), F(0, 1), F(1, 1), F(2, 1),
                                            F(3, 0), F(4, 0), F(3, 1), F(4, 1)});
}

TEST_CASE("makespans with free communication: GPipe and 1F1B") {
  // F, B, W as one microbatch's forward, input gradient and weight gradient on a rank.
  const ChunkCosts c{3, 5, 2};
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 3 * p + 1; ++m) {
      CAPTURE(p);
      CAPTURE(m);
      // (m+p-1)(F+B+W)
      const Time want = (m + p - 1) * (c.f + c.b + c.w);
      CHECK(makespan(shape_of(PipelineSchedule::gpipe, p, m), c) == want);
      CHECK(makespan(shape_of(PipelineSchedule::one_f_one_b, p, m), c) == want);
    }
  }
  // GPipe holds every microbatch: peak in-flight m on every rank.
  CHECK(peak_in_flight(pipeline_orders(shape_of(PipelineSchedule::gpipe, 3, 7))) ==
        std::vector<int>{7, 7, 7});
}

TEST_CASE("makespans with free communication: interleaved") {
  // Each of the v chunks costs F/v, B/v, W/v (c.f = F/v, ...). The makespan is
  // m(F+B+W) + (p-1)(F+B+W)/v = m*v*(f+b+w) + (p-1)(f+b+w), for every valid group size.
  const ChunkCosts c{2, 3, 1};
  for (int p = 2; p <= 5; ++p) {
    for (int v = 2; v <= 4; ++v) {
      for (int m = p; m <= 3 * p + 1; ++m) {
        for (int g = p; g <= m; ++g) {
          if (!interleaved_valid(p, m, g)) continue;
          CAPTURE(p);
          CAPTURE(v);
          CAPTURE(m);
          CAPTURE(g);
          const Time want = m * v * (c.f + c.b + c.w) + (p - 1) * (c.f + c.b + c.w);
          CHECK(makespan(shape_of(PipelineSchedule::interleaved, p, m, v, g), c) == want);
        }
      }
    }
  }
  // p=4, m=8, v=2: F=2, B=4, W=2 per microbatch (f=1, b=2, w=1 per chunk):
  // 8*8 + 3*8/2 = 76.
  CHECK(makespan(shape_of(PipelineSchedule::interleaved, 4, 8, 2), {1, 2, 1}) == 76);
}

TEST_CASE("makespans with free communication: ZB-H1") {
  // Design: m(F+B+W) + (p-1)(F+B-W) when W <= F and m >= p (here also W <= B).
  for (const ChunkCosts c : {ChunkCosts{1, 1, 1}, ChunkCosts{2, 2, 1}, ChunkCosts{3, 4, 2},
                             ChunkCosts{5, 3, 3}, ChunkCosts{4, 2, 1}}) {
    for (int p = 1; p <= 6; ++p) {
      for (int m = p; m <= 3 * p + 2; ++m) {
        CAPTURE(p);
        CAPTURE(m);
        CAPTURE(c.f);
        CAPTURE(c.b);
        CAPTURE(c.w);
        const Time want = m * (c.f + c.b + c.w) + (p - 1) * (c.f + c.b - c.w);
        CHECK(makespan(shape_of(PipelineSchedule::zb_h1, p, m), c) == want);
      }
    }
  }
  // In general (m >= p) the order gives m(F+B+W) + (p-1)(F+B-min(F,B,W)): with B < W <= F the
  // design's (p-1)(F+B-W) is too optimistic. p=4, m=8, F=4, B=1, W=2:
  // 8*7 + 3*(4+1-1) = 68, not 8*7 + 3*(4+1-2) = 65.
  CHECK(makespan(shape_of(PipelineSchedule::zb_h1, 4, 8), {4, 1, 2}) == 68);
  for (int p = 1; p <= 5; ++p) {
    for (int m = p; m <= 2 * p + 2; ++m) {
      for (Time f = 1; f <= 4; ++f) {
        for (Time b = 1; b <= 4; ++b) {
          for (Time w = 1; w <= 4; ++w) {
            const Time want = m * (f + b + w) + (p - 1) * (f + b - std::min({f, b, w}));
            CHECK(makespan(shape_of(PipelineSchedule::zb_h1, p, m), {f, b, w}) == want);
          }
        }
      }
    }
  }
}

TEST_CASE("ZB-H1 keeps 1F1B's memory") {
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 3 * p; ++m) {
      const auto sh = shape_of(PipelineSchedule::zb_h1, p, m);
      const auto orders = pipeline_orders(sh);
      // Warm-up p-r-1 forwards, as 1F1B.
      for (int r = 0; r < p; ++r) {
        const int w = std::min(p - r - 1, m);
        CHECK(warmup_forwards(sh, r) == (m > w ? w + 1 : w));
      }
      // Until the input gradient, rank r holds min(p-r, m) microbatches as 1F1B does; counting
      // the inputs kept for the deferred W's, no rank holds more than 1F1B's first stage.
      const auto until_b = peak_in_flight(orders, true);
      const auto until_w = peak_in_flight(orders);
      for (int r = 0; r < p; ++r) {
        CHECK(until_b[at(r)] == std::min(p - r, m));
        CHECK(until_w[at(r)] <= std::min(p, m));
      }
    }
  }
  // The last rank of p=4 defers 3 W's: F B F B F B F B W ... then the deferred W's at the end.
  const auto last = pipeline_orders(shape_of(PipelineSchedule::zb_h1, 4, 5))[3];
  std::string shape;
  for (const auto& a : last) {
    shape += a.work == PipeWork::forward ? 'F' : a.work == PipeWork::input_grad ? 'B' : 'W';
  }
  CHECK(shape == "FBFBFBFBWFBWWWW");
}

namespace {

// ZB-V bubble beyond m(F+B+W), per-chunk costs f = F/2, b = B/2, w = W/2, p >= 2, m >= 2p-1,
// derived for PyTorch's ZB-V order (checked exhaustively below):
//   max( (p-1)(2max(f,b) - 2w) - min(w, max(0, f-b)),
//        (p-1)(2f - b) - min(w, f-b)           [only when f > b],
//        (p-1) b,
//        (p-2) w + max(f,b) ).
// With f = b = w it is (p-1)f = (p-1)F/2: the makespan m(F+B+W) + (p-1)F/2 meets the V's lower
// bound (the last rank cannot start before (p-1) forward chunks and then has m(F+B+W) to do).
Time zb_v_bubble(Time p, Time f, Time b, Time w) {
  const Time hi = std::max(f, b);
  Time e = std::max({(p - 1) * (2 * hi - 2 * w) - std::min(w, std::max<Time>(0, f - b)),
                     (p - 1) * b, (p - 2) * w + hi});
  if (f > b) e = std::max(e, (p - 1) * (2 * f - b) - std::min(w, f - b));
  return e;
}

// DualPipeV bubble beyond m(F+B+W) of DeepSeek's order, per-chunk costs (checked below):
//   (p-1)(f + b + max(f,b) - min(b,w)) - min(f, (p-1) max(0, b-f)).
// The design's (p-1)(F+2B-W)/2 = (p-1)(f+2b-w) is the case f = b, w <= b.
Time dualpipev_bubble(Time p, Time f, Time b, Time w) {
  return (p - 1) * (f + b + std::max(f, b) - std::min(b, w)) -
         std::min(f, (p - 1) * std::max<Time>(0, b - f));
}

}  // namespace

TEST_CASE("makespans with free communication: ZB-V") {
  // F = B = W: m(F+B+W) + (p-1)F/2. p=4, m=8, f=b=w=1 (F=B=W=2): 8*6 + 3 = 51.
  CHECK(makespan(shape_of(PipelineSchedule::zb_v, 4, 8), {1, 1, 1}) == 51);
  for (int p = 2; p <= 6; ++p) {
    for (const int m : {2 * p - 1, 2 * p, 3 * p + 1}) {
      for (Time f = 1; f <= 4; ++f) {
        for (Time b = 1; b <= 4; ++b) {
          for (Time w = 1; w <= 4; ++w) {
            CAPTURE(p);
            CAPTURE(m);
            CAPTURE(f);
            CAPTURE(b);
            CAPTURE(w);
            const Time want = 2 * m * (f + b + w) + zb_v_bubble(p, f, b, w);
            CHECK(makespan(shape_of(PipelineSchedule::zb_v, p, m), {f, b, w}) == want);
          }
        }
      }
    }
  }
  // One rank: no bubble.
  CHECK(makespan(shape_of(PipelineSchedule::zb_v, 1, 3), {2, 1, 1}) == 3 * 2 * 4);
}

TEST_CASE("ZB-V stays within 1F1B's memory") {
  // Counting a chunk's activation as half a microbatch, held until its W: no rank holds more
  // than 1F1B's first stage, min(p, m) microbatches = 2 min(p, m) chunk activations.
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 3 * p + 1; ++m) {
      const auto peaks = peak_in_flight(pipeline_orders(shape_of(PipelineSchedule::zb_v, p, m)));
      for (const int pk : peaks) CHECK(pk <= 2 * std::min(p, m));
    }
  }
  CHECK(peak_in_flight(pipeline_orders(shape_of(PipelineSchedule::zb_v, 4, 8))) ==
        std::vector<int>{8, 8, 8, 8});
  // 2p forwards before the first input gradient (2(p-r)-1 chunk-0, r chunk-1/chunk-0 pairs,
  // then the chunk-1 forward whose B follows).
  for (int r = 0; r < 4; ++r) {
    CHECK(warmup_forwards(shape_of(PipelineSchedule::zb_v, 4, 8), r) == 8);
  }
}

TEST_CASE("DualPipeV follows DeepSeek's eight steps") {
  // p=2, m=4. Rank 0 (stages 0 and 3): step 1 2F0; step 2 F0 F1; step 3 B1 W1 F1 (zero
  // bubble); step 4 (m-2p+r+1 = 1) F0+B1, F1+B0 pairs; step 5 B1, F1+B0; step 6 (r even: the
  // chunk-0 backward of i = 0 is already zero bubble) full B1, split B0; step 7 W, split B0;
  // step 8 W. Pairs carry full backwards (pair_split = false).
  const auto orders = pipeline_orders(shape_of(PipelineSchedule::dualpipev, 2, 4));
  const auto pair = [](int fmb, int fc, int bmb, int bc) {
    PipeAction a = act(PipeWork::forward_backward, fmb, fc);
    a.pair_microbatch = bmb;
    a.pair_chunk = bc;
    return a;
  };
  const auto IG = [](int mb, int c) { return act(PipeWork::input_grad, mb, c); };
  const auto W = [](int mb, int c) { return act(PipeWork::weight_grad, mb, c); };
  const std::vector<PipeAction> rank0 = {
      F(0, 0),  F(1, 0),          F(2, 0),          F(0, 1),  IG(0, 1),         W(0, 1),
      F(1, 1),  pair(3, 0, 1, 1), pair(2, 1, 0, 0), BW(2, 1), pair(3, 1, 1, 0), BW(3, 1),
      IG(2, 0), W(2, 0),          IG(3, 0),         W(3, 0)};
  // Rank 1 (stages 1 and 2, the last rank): step 2 F0 F1 F0 F1; step 4 (2 rounds) first F0 and
  // B1 unpaired, then F1+B0, F0+B1, F1+B0; step 6 (r odd: zero bubble from i = 1) B1 B0 B1' B0';
  // step 8 2W.
  const std::vector<PipeAction> rank1 = {
      F(0, 0),  F(0, 1),          F(1, 0),          F(1, 1),          F(2, 0),
      BW(0, 1), pair(2, 1, 0, 0), pair(3, 0, 1, 1), pair(3, 1, 1, 0), BW(2, 1),
      BW(2, 0), IG(3, 1),         IG(3, 0),         W(3, 1),          W(3, 0)};
  CHECK(compute_only(orders[0]) == rank0);
  CHECK(compute_only(orders[1]) == rank1);
  // Forwards before the first backward: 2p, and one more on the last rank (its first step-4
  // forward runs unpaired ahead of its first backward).
  CHECK(warmup_forwards(shape_of(PipelineSchedule::dualpipev, 4, 8), 0) == 8);
  CHECK(warmup_forwards(shape_of(PipelineSchedule::dualpipev, 4, 8), 2) == 8);
  CHECK(warmup_forwards(shape_of(PipelineSchedule::dualpipev, 4, 8), 3) == 9);
  // Peak chunk activations held (until W): 2p+1 on every rank, i.e. p + 1/2 microbatches.
  CHECK(peak_in_flight(pipeline_orders(shape_of(PipelineSchedule::dualpipev, 4, 8))) ==
        std::vector<int>{9, 9, 9, 9});
}

TEST_CASE("DualPipeV posts its communication where dualpipev.py does") {
  // p=2, m=4, as above, with the transfers. dualpipev.py queues a receive before the chunk step
  // that needs it and a send after the step that produced it, and _commit_and_wait_comm issues
  // the queue (if not empty) before every compute. Rank 0 holds the first stage (no activation
  // in, no gradient out for chunk 0) and the last (no activation out, no gradient in for chunk
  // 1). RF/SF/RB/SB: post_recv_forward, post_send_forward, post_recv_backward,
  // post_send_backward of (microbatch, chunk); C: commit; P: a pair (F of the first, backward of
  // the second).
  const auto orders = pipeline_orders(shape_of(PipelineSchedule::dualpipev, 2, 4));
  const auto RF = [](int mb, int c) { return act(PipeWork::post_recv_forward, mb, c); };
  const auto SF = [](int mb, int c) { return act(PipeWork::post_send_forward, mb, c); };
  const auto RB = [](int mb, int c) { return act(PipeWork::post_recv_backward, mb, c); };
  const auto SB = [](int mb, int c) { return act(PipeWork::post_send_backward, mb, c); };
  const PipeAction C = act(PipeWork::commit, 0, 0);
  const auto P = [](int fmb, int fc, int bmb, int bc) {
    PipeAction a = act(PipeWork::forward_backward, fmb, fc);
    a.pair_microbatch = bmb;
    a.pair_chunk = bc;
    return a;
  };
  const auto IG = [](int mb, int c) { return act(PipeWork::input_grad, mb, c); };
  const auto W = [](int mb, int c) { return act(PipeWork::weight_grad, mb, c); };
  // Rank 0. Step 1: F0 (nothing queued yet, so no commit), its send; C, F0, send. Step 2: C (the
  // send), F0 without a receive; the chunk-1 forward receives, commits; the chunk-0 send goes
  // after it. Step 3: C, B1 (zero bubble), its send, the next chunk-1 receive queued ahead of the
  // W's commit. Step 4: the pair F0+B1 needs no transfer on rank 0 (first stage, loss stage),
  // so no commit before it; then receive F1's input and B0's gradient. Step 5: B1 (nothing
  // queued: no commit), F1+B0. Step 6: B1, then B0 switches to zero bubble. Steps 7 and 8: W B0,
  // W; nothing left to commit at the end.
  const std::vector<PipeAction> rank0 = {
      F(0, 0),       SF(0, 0), C,        F(1, 0),  SF(1, 0), C,
      F(2, 0),       RF(0, 1), C,        F(0, 1),  SF(2, 0), C,
      IG(0, 1),      SB(0, 1), RF(1, 1), C,        W(0, 1),  F(1, 1),
      P(3, 0, 1, 1), SF(3, 0), SB(1, 1), RF(2, 1), RB(0, 0), C,
      P(2, 1, 0, 0), BW(2, 1), SB(2, 1), RF(3, 1), RB(1, 0), C,
      P(3, 1, 1, 0), BW(3, 1), SB(3, 1), RB(2, 0), C,        IG(2, 0),
      W(2, 0),       RB(3, 0), C,        IG(3, 0), W(3, 0)};
  // Rank 1, the last rank: chunk 0 feeds its own chunk 1, so no chunk-0 activation out, no
  // chunk-1 activation in, no chunk-0 gradient in, no chunk-1 gradient out. Step 2 receives
  // every chunk-0 input one forward ahead and keeps its last chunk-1 output for step 4, which
  // sends it after its unpaired F0.
  const std::vector<PipeAction> rank1 = {
      RF(0, 0),      C,        F(0, 0),  RF(1, 0), C,        F(0, 1),
      SF(0, 1),      C,        F(1, 0),  RF(2, 0), C,        F(1, 1),
      F(2, 0),       SF(1, 1), RB(0, 1), C,        BW(0, 1), P(2, 1, 0, 0),
      SF(2, 1),      SB(0, 0), RF(3, 0), RB(1, 1), C,        P(3, 0, 1, 1),
      P(3, 1, 1, 0), SF(3, 1), SB(1, 0), RB(2, 1), C,        BW(2, 1),
      BW(2, 0),      SB(2, 0), RB(3, 1), C,        IG(3, 1), IG(3, 0),
      SB(3, 0),      C,        W(3, 1),  W(3, 0)};
  CHECK(orders[0] == rank0);
  CHECK(orders[1] == rank1);
}

TEST_CASE("makespans with free communication: DualPipeV") {
  // Design: m(F+B+W) + (p-1)(F+2B-W)/2, an overlapped pair costing the sum of its parts. The
  // reference order meets it when F = B and W <= B (per chunk: f = b, w <= b).
  for (int p = 1; p <= 6; ++p) {
    for (const int m : {2 * p, 2 * p + 1, 3 * p + 2}) {
      for (const ChunkCosts c :
           {ChunkCosts{1, 1, 1}, ChunkCosts{2, 2, 1}, ChunkCosts{3, 3, 2}, ChunkCosts{4, 4, 1}}) {
        CAPTURE(p);
        CAPTURE(m);
        CAPTURE(c.f);
        CAPTURE(c.w);
        // m(F+B+W) + (p-1)(F+2B-W)/2 with F = 2f, B = 2b, W = 2w.
        const Time want = 2 * m * (c.f + c.b + c.w) + (p - 1) * (c.f + 2 * c.b - c.w);
        CHECK(makespan(shape_of(PipelineSchedule::dualpipev, p, m), c) == want);
      }
    }
  }
  // Otherwise the reference order gives dualpipev_bubble(), p=4, m=8:
  //   f=3, b=2, w=1 (F=6, B=4, W=2): 96 + 3*(3+2+3-1) = 117; the closed form's 96 + 3*(6+8-2)/2 =
  //   114. f=1, b=2, w=1 (F=2, B=4, W=2): 64 + 3*(1+2+2-1) - 1 = 75; the closed form's 64 + 12
  //   = 76. f=b=1, w=2 (W > B): 64 + 3*(1+1+1-1) = 70; the closed form's 64 + 3*(2+4-4)/2 = 67.
  CHECK(makespan(shape_of(PipelineSchedule::dualpipev, 4, 8), {3, 2, 1}) == 117);
  CHECK(makespan(shape_of(PipelineSchedule::dualpipev, 4, 8), {1, 2, 1}) == 75);
  CHECK(makespan(shape_of(PipelineSchedule::dualpipev, 4, 8), {1, 1, 2}) == 70);
  for (int p = 1; p <= 6; ++p) {
    for (const int m : {2 * p, 3 * p + 1}) {
      for (Time f = 1; f <= 4; ++f) {
        for (Time b = 1; b <= 4; ++b) {
          for (Time w = 1; w <= 4; ++w) {
            CAPTURE(p);
            CAPTURE(m);
            CAPTURE(f);
            CAPTURE(b);
            CAPTURE(w);
            const Time want = 2 * m * (f + b + w) + dualpipev_bubble(p, f, b, w);
            CHECK(makespan(shape_of(PipelineSchedule::dualpipev, p, m), {f, b, w}) == want);
          }
        }
      }
    }
  }
}

TEST_CASE("p2p order: sends and receives agree per rank pair") {
  // Per ordered (src, dst) pair, the messages a rank sends (in its action order) must be the
  // messages the peer receives (in its action order) for positional matching to pair them.
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 3 * p + 1; ++m) {
      for (const auto s :
           {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::zb_h1}) {
        const auto sh = shape_of(s, p, m);
        CHECK(p2p_order_mismatches(sh, pipeline_orders(sh)).empty());
      }
      for (int v = 2; v <= 3 && p >= 2; ++v) {
        for (int g = p; g <= m; ++g) {
          if (!interleaved_valid(p, m, g) || (p == 2 && g > p)) continue;
          const auto sh = shape_of(PipelineSchedule::interleaved, p, m, v, g);
          CHECK(p2p_order_mismatches(sh, pipeline_orders(sh)).empty());
        }
      }
    }
  }
}

TEST_CASE("p2p order: where the receive order differs from the send order") {
  // The V schedules carry two streams on each downward pair (r -> r+1): chunk-0 activations and
  // chunk-1 gradients. The sender interleaves them in its action order, the receiver needs them
  // in its own, and the two differ: a builder that posts each receive just before the action
  // that consumes it cannot match these by position (the references post their receives ahead,
  // in the sender's order, and so do these orders' own communication items: next test). Pairs
  // r -> r+1 for r < p-1 (ZB-V) and r < p-2 (DualPipeV).
  {
    const auto sh = shape_of(PipelineSchedule::zb_v, 4, 8);
    CHECK(p2p_order_mismatches(sh, pipeline_orders(sh)) ==
          std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 3}});
  }
  {
    const auto sh = shape_of(PipelineSchedule::dualpipev, 4, 8);
    CHECK(p2p_order_mismatches(sh, pipeline_orders(sh)) ==
          std::vector<std::pair<int, int>>{{0, 1}, {1, 2}});
  }
  // Interleaved with p = 2 and g > p: rank 0 runs chunk 1 of a microbatch while more chunk-0
  // outputs are still due from it (Megatron buffers g-p+1 receives on the first rank for this).
  {
    const auto sh = shape_of(PipelineSchedule::interleaved, 2, 4, 2, 4);
    CHECK(p2p_order_mismatches(sh, pipeline_orders(sh)) ==
          std::vector<std::pair<int, int>>{{0, 1}, {1, 0}});
  }
}

TEST_CASE("V schedules: their own communication is complete, in time, in the sender's order") {
  // DualPipeV and ZB-V post every transfer themselves (the others leave it to the builder).
  // Each cross-rank activation and gradient is sent once after it is produced and received once
  // before it is used, and each rank pair receives in the order the sender sends, although the
  // compute orders consume in another order (previous test).
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 3 * p + 2; ++m) {
      for (const auto s : {PipelineSchedule::zb_v, PipelineSchedule::dualpipev}) {
        if (s == PipelineSchedule::dualpipev && m < 2 * p) continue;
        CAPTURE(to_string(s));
        CAPTURE(p);
        CAPTURE(m);
        const auto sh = shape_of(s, p, m);
        const auto orders = pipeline_orders(sh);
        CHECK(explicit_comm_problem(sh, orders) == "");
        // 2(p-1) activations and 2(p-1) gradients cross ranks per microbatch.
        std::size_t posts = 0, commits = 0;
        for (const auto& order : orders) {
          for (const auto& a : order) {
            const bool commit = a.work == PipeWork::commit || a.work == PipeWork::commit_async;
            if (is_comm(a.work) && !commit) ++posts;
            if (commit) ++commits;
          }
        }
        CHECK(posts == at(2 * 4 * (p - 1) * m));  // each transfer posted by both sides
        CHECK((commits > 0) == (p > 1));
      }
    }
  }
  // The other schedules carry no communication items.
  for (const auto s :
       {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::zb_h1}) {
    for (const auto& order : pipeline_orders(shape_of(s, 4, 8))) {
      CHECK(compute_only(order) == order);
    }
  }
}

TEST_CASE("pipeline shape checks name the flag and the rule") {
  const auto rejects = [](const PipelineShape& sh, const char* needle) {
    CAPTURE(needle);
    CHECK_THROWS_WITH_AS(check_pipeline_shape(sh), doctest::Contains(needle), InputError);
    CHECK_THROWS_AS(pipeline_orders(sh), InputError);
  };
  rejects(shape_of(PipelineSchedule::one_f_one_b, 0, 4), "`stages` must be at least 1");
  rejects(shape_of(PipelineSchedule::gpipe, 2, 0), "`microbatches` must be at least 1");
  rejects(shape_of(PipelineSchedule::one_f_one_b, 2, 4, 2), "`chunks` 2 does not fit");
  rejects(shape_of(PipelineSchedule::zb_v, 2, 4, 3), "exactly 2 chunks");
  rejects(shape_of(PipelineSchedule::one_f_one_b, 2, 4, 1, 2), "`group_size` 2 does not apply");
  // Interleaved: Megatron's rules.
  rejects(shape_of(PipelineSchedule::interleaved, 4, 8, 1), "`chunks` must be at least 2");
  rejects(shape_of(PipelineSchedule::interleaved, 1, 8, 2), "`stages` must be at least 2");
  rejects(shape_of(PipelineSchedule::interleaved, 4, 8, 2, 3), "p <= g <= m");
  rejects(shape_of(PipelineSchedule::interleaved, 4, 8, 2, 9), "p <= g <= m");
  // Fewer microbatches than stages: the count is named when the group size is the default (p),
  // the group when it was given.
  rejects(shape_of(PipelineSchedule::interleaved, 4, 3, 2), "`microbatches` 3 must be at least");
  rejects(shape_of(PipelineSchedule::interleaved, 4, 3, 2, 4), "`group_size` 4 must lie in");
  rejects(shape_of(PipelineSchedule::interleaved, 4, 10, 2), "m mod g = 0 or m mod g >= p");
  rejects(shape_of(PipelineSchedule::interleaved, 4, 10, 2),
          "with the default group of `stages` 4");
  rejects(shape_of(PipelineSchedule::interleaved, 4, 10, 2, 4),
          "with `group_size` 4 and `stages` 4");
  rejects(shape_of(PipelineSchedule::interleaved, 4, 10, 2, -1), "`group_size` must be at least");
  // DualPipeV: m >= 2p.
  rejects(shape_of(PipelineSchedule::dualpipev, 4, 7), "m >= 2p = 8");
  rejects(shape_of(PipelineSchedule::one_f_one_b, 4096, 4096), "too large");

  // Accepted: the V schedules with chunks 1 (unset) or 2; interleaved m mod g >= p;
  // zb-h1 and zb-v with few microbatches.
  CHECK_NOTHROW(check_pipeline_shape(shape_of(PipelineSchedule::zb_v, 4, 8, 2)));
  CHECK_NOTHROW(check_pipeline_shape(shape_of(PipelineSchedule::dualpipev, 4, 8, 1)));
  CHECK_NOTHROW(check_pipeline_shape(shape_of(PipelineSchedule::interleaved, 4, 14, 2, 5)));
  CHECK_NOTHROW(check_pipeline_shape(shape_of(PipelineSchedule::zb_h1, 4, 2)));
  CHECK_NOTHROW(check_pipeline_shape(shape_of(PipelineSchedule::zb_v, 4, 2)));
  CHECK_THROWS_AS(warmup_forwards(shape_of(PipelineSchedule::gpipe, 2, 2), 2), InputError);
}
