#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "schedules/pipeline.hpp"
#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/metrics.hpp"

using namespace meshsim;

namespace {

// Explicit times in nanoseconds-as-seconds: F, B, W are per microbatch through a rank's share.
PipelineConfig timed(PipelineSchedule s, int p, int m, double f, double b, double w, double t = 0,
                     int v = 1) {
  PipelineConfig c;
  c.shape = PipelineShape{s, p, m, v, 0};
  c.time_f = f * 1e-9;
  c.time_b = b * 1e-9;
  c.time_w = w * 1e-9;
  c.p2p_time = t * 1e-9;
  return c;
}

struct Result {
  Program program;
  CommPlan plan;
  Timeline timeline;
  RunMetrics metrics;
};

Result run(const PipelineConfig& c) {
  Result r{build_pipeline(c), {}, {}, {}};
  r.plan = validate_program(r.program);  // matching + deadlock check under blocking p2p
  const Durations d = estimate_durations(r.program, r.plan, load_hardware("h100-sxm"));
  r.timeline = simulate(r.program, r.plan, d);
  r.metrics = compute_metrics(r.program, r.plan, r.timeline);
  return r;
}

Nanos makespan(PipelineSchedule s, int p, int m, double f, double b, double w, double t = 0) {
  return run(timed(s, p, m, f, b, w, t)).metrics.makespan;
}

// The free-communication makespans of the V orders beyond m(F+B+W), in per-chunk costs f = F/2,
// b = B/2, w = W/2 (derived and checked against the orders in test_pipeline_orders.cpp).
// DualPipeV: (p-1)(f + b + max(f,b) - min(b,w)) - min(f, (p-1) max(0, b-f)).
Nanos dualpipev_bubble(Nanos p, Nanos f, Nanos b, Nanos w) {
  return (p - 1) * (f + b + std::max(f, b) - std::min(b, w)) -
         std::min(f, (p - 1) * std::max<Nanos>(0, b - f));
}
// ZB-V (p >= 2, m >= 2p-1): max((p-1)(2max(f,b) - 2w) - min(w, max(0, f-b)), (p-1)b,
// (p-2)w + max(f,b), and when f > b also (p-1)(2f-b) - min(w, f-b)).
Nanos zb_v_bubble(Nanos p, Nanos f, Nanos b, Nanos w) {
  const Nanos hi = std::max(f, b);
  Nanos e = std::max({(p - 1) * (2 * hi - 2 * w) - std::min(w, std::max<Nanos>(0, f - b)),
                      (p - 1) * b, (p - 2) * w + hi});
  if (f > b) e = std::max(e, (p - 1) * (2 * f - b) - std::min(w, f - b));
  return e;
}

double bubble(const Result& r) {
  double busy = 0;
  for (const auto& m : r.metrics.ranks) busy += static_cast<double>(m.compute);
  return 1.0 - busy / (static_cast<double>(r.metrics.ranks.size()) *
                       static_cast<double>(r.metrics.makespan));
}

}  // namespace

TEST_CASE("1F1B, p=4, m=8, F=1, B+W=2, free p2p: makespan 33, bubble 3/11 (ARCHITECTURE.md §6)") {
  // (m + p - 1)(F + B + W) = 11 * 3 = 33; busy 8 * 3 = 24 per rank -> bubble 1 - 24/33 = 3/11
  const Result r = run(timed(PipelineSchedule::one_f_one_b, 4, 8, 1000, 1000, 1000));
  CHECK(r.metrics.makespan == 33000);
  CHECK(bubble(r) == doctest::Approx(3.0 / 11.0));
  CHECK(peak_inflight(PipelineShape{PipelineSchedule::one_f_one_b, 4, 8, 1, 0}) ==
        std::vector<int>{4, 3, 2, 1});
}

TEST_CASE("closed forms through the whole engine, free p2p (ARCHITECTURE.md §4.2)") {
  const double f = 1200, b = 1200, w = 600;  // W <= F for ZB-H1
  for (int p : {2, 4}) {
    for (int m : {4, 8, 12}) {
      CAPTURE(p);
      CAPTURE(m);
      // GPipe and 1F1B: (m + p - 1)(F + B + W)
      const auto full = static_cast<Nanos>((m + p - 1) * (f + b + w));
      CHECK(run(timed(PipelineSchedule::gpipe, p, m, f, b, w)).metrics.makespan == full);
      CHECK(run(timed(PipelineSchedule::one_f_one_b, p, m, f, b, w)).metrics.makespan == full);
      // ZB-H1: m(F + B + W) + (p - 1)(F + B - W), W <= F, m >= p
      if (m >= p) {
        CHECK(run(timed(PipelineSchedule::zb_h1, p, m, f, b, w)).metrics.makespan ==
              static_cast<Nanos>(m * (f + b + w) + (p - 1) * (f + b - w)));
      }
      // interleaved, v = 2, g = p: m(F + B + W) + (p - 1)(F + B + W)/v
      if (m % p == 0 && m > p) {
        CHECK(run(timed(PipelineSchedule::interleaved, p, m, f, b, w, 0, 2)).metrics.makespan ==
              static_cast<Nanos>(m * (f + b + w) + (p - 1) * (f + b + w) / 2));
      }
    }
  }
}

TEST_CASE("DualPipeV through the whole engine, free p2p: its closed forms") {
  // The order carries dualpipev.py's own communication: receives queued before each chunk step,
  // sends after it, everything committed and waited for before the next compute.
  for (int p : {1, 2, 3, 4, 6}) {
    for (int m : {2 * p, 2 * p + 1, 3 * p + 2}) {
      CAPTURE(p);
      CAPTURE(m);
      // Design §4.2, F = B and W <= B: m(F+B+W) + (p-1)(F+2B-W)/2.
      for (const auto& [f, b, w] :
           {std::array<double, 3>{1200, 1200, 600}, std::array<double, 3>{1200, 1200, 1200},
            std::array<double, 3>{1000, 1000, 200}}) {
        CHECK(makespan(PipelineSchedule::dualpipev, p, m, f, b, w) ==
              static_cast<Nanos>(m * (f + b + w) + (p - 1) * (f + 2 * b - w) / 2));
      }
      // In general with F <= B and W <= B, the order's free-communication makespan
      // 2m(f+b+w) + dualpipev_bubble(p, f, b, w), per chunk f = F/2, b = B/2, w = W/2.
      for (const auto& [f, b, w] :
           {std::array<Nanos, 3>{400, 600, 200}, std::array<Nanos, 3>{200, 800, 800},
            std::array<Nanos, 3>{500, 700, 300}, std::array<Nanos, 3>{100, 400, 50}}) {
        CHECK(makespan(PipelineSchedule::dualpipev, p, m, static_cast<double>(2 * f),
                       static_cast<double>(2 * b), static_cast<double>(2 * w)) ==
              2 * m * (f + b + w) + dualpipev_bubble(p, f, b, w));
      }
    }
  }
  // With F > B or W > B the reference's own waits cost time the free-communication order does
  // not have: each chunk step (a W step too) first waits for everything queued, including the
  // sends of the step before, and a send completes only once its peer has posted the receive.
  // p=2, m=4, F=B=200, W=400 (f=b=100, w=200): free 2*4*400 + (100+100+100-100) = 3400; the
  // last rank's final W waits 100 for the send of its last chunk-0 gradient, which the first
  // rank receives only after its own W (step 7): 3500.
  CHECK(makespan(PipelineSchedule::dualpipev, 2, 4, 200, 200, 400) == 3500);
  for (const auto& [f, b, w] :
       {std::array<Nanos, 3>{600, 600, 900}, std::array<Nanos, 3>{800, 600, 300}}) {
    for (int p : {2, 4}) {
      const Nanos got = makespan(PipelineSchedule::dualpipev, p, 2 * p, static_cast<double>(2 * f),
                                 static_cast<double>(2 * b), static_cast<double>(2 * w));
      CHECK(got > 2 * (2 * p) * (f + b + w) + dualpipev_bubble(p, f, b, w));
    }
  }
}

TEST_CASE("ZB-V through the whole engine, free p2p: its closed form at F = B = W") {
  // PyTorch's ZB-V order with its runtime's sends and receives, each transfer committed at the
  // round boundary after the compute that produced it (see ZbVBuilder). With F = B = W the
  // order's free-communication makespan is m(F+B+W) + (p-1)F/2 (zb_v_bubble with f = b = w is
  // (p-1)f), and the commits cost nothing.
  for (int p : {1, 2, 3, 4, 6}) {
    for (int m : {2 * p - 1, 2 * p, 3 * p + 1}) {
      for (double f : {600.0, 1200.0}) {
        CAPTURE(p);
        CAPTURE(m);
        CAPTURE(f);
        CHECK(makespan(PipelineSchedule::zb_v, p, m, f, f, f) ==
              static_cast<Nanos>(m * 3 * f + (p - 1) * f / 2));
      }
    }
  }
  // p=4, m=8, F=B=W=1200: 8*3600 + 3*600 = 30600.
  CHECK(makespan(PipelineSchedule::zb_v, 4, 8, 1200, 1200, 1200) == 30600);
  // ZB-V's exchanges do not hold the host (PyTorch's runtime waits for a receive only before its
  // use): the free-communication makespan 2m(f+b+w) + zb_v_bubble(p, f, b, w) holds for other
  // ratios too. p=4, m=8, F=B=1200, W=600: 8*3000 + 1800 = 25800.
  CHECK(makespan(PipelineSchedule::zb_v, 4, 8, 1200, 1200, 600) == 25800);
  for (int p : {2, 3, 4}) {
    for (const auto& [f, b, w] :
         {std::array<Nanos, 3>{600, 600, 300}, std::array<Nanos, 3>{600, 300, 300},
          std::array<Nanos, 3>{300, 600, 300}, std::array<Nanos, 3>{300, 300, 600}}) {
      const int m = 2 * p;
      const Nanos fwd = f, bwd = b, wgrad = w;
      CAPTURE(p);
      CAPTURE(fwd);
      CAPTURE(bwd);
      CAPTURE(wgrad);
      CHECK(makespan(PipelineSchedule::zb_v, p, m, static_cast<double>(2 * f),
                     static_cast<double>(2 * b),
                     static_cast<double>(2 * w)) == 2 * m * (f + b + w) + zb_v_bubble(p, f, b, w));
    }
  }
}

TEST_CASE("one microbatch with p2p time T: the chain through the stages") {
  const double f = 1000, b = 700, w = 300, t = 50;
  for (int p : {1, 2, 3, 5}) {
    CAPTURE(p);
    // GPipe and 1F1B: p(F + B + W) + 2(p - 1)T
    const auto chain = static_cast<Nanos>(p * (f + b + w) + 2 * (p - 1) * t);
    CHECK(run(timed(PipelineSchedule::gpipe, p, 1, f, b, w, t)).metrics.makespan == chain);
    CHECK(run(timed(PipelineSchedule::one_f_one_b, p, 1, f, b, w, t)).metrics.makespan == chain);
    // ZB-H1: the forward chain pF + (p-1)T, the input-gradient chain back pB + (p-1)T, then the
    // first rank's W (every other rank's W runs while the gradient travels on):
    // p(F + B) + W + 2(p - 1)T. Interleaved needs m >= g >= p and DualPipeV m >= 2p, so m = 1
    // exists for neither when p > 1.
    CHECK(run(timed(PipelineSchedule::zb_h1, p, 1, f, b, w, t)).metrics.makespan ==
          static_cast<Nanos>(p * (f + b) + w + 2 * (p - 1) * t));
    // ZB-V (valid for m = 1): the forward goes down the V's first arm and up its second (2p
    // chunk forwards, 2p-2 transfers), the input gradients retrace it (2p chunk B's, 2p-2
    // transfers). A rank's W of its second-arm stage runs right after that stage's B, while the
    // gradient travels to the V's turn and back, except on the turn rank p-1, whose order runs
    // the W of stage p between the B's of stages p and p-1; the first rank's W of stage 0 comes
    // last: 2p(F/2 + B/2) + 2(W/2) + 4(p-1)T = p(F+B) + W + 4(p-1)T.
    CHECK(run(timed(PipelineSchedule::zb_v, p, 1, f, b, w, t)).metrics.makespan ==
          static_cast<Nanos>(p * (f + b) + w + 4 * (p - 1) * t));
  }
}

TEST_CASE("every rank runs each (microbatch, chunk) forward and backward exactly once") {
  for (PipelineSchedule s :
       {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved,
        PipelineSchedule::zb_h1, PipelineSchedule::zb_h2, PipelineSchedule::zb_v,
        PipelineSchedule::dualpipev}) {
    const int p = 4, m = 8;
    const int v = s == PipelineSchedule::interleaved ? 2 : 1;
    const Result r = run(timed(s, p, m, 100, 100, 100, 10, v));
    std::map<std::tuple<int, int, int, std::string>, int> seen;  // rank, mb, chunk, part
    for (const auto& op : r.program.ops) {
      const auto* k = std::get_if<KernelCall>(&op.body);
      if (k == nullptr) continue;
      std::string part = op.labels.phase == Phase::fwd       ? "F"
                         : k->kind == KernelKind::linear_bwd ? "BW"
                         : op.labels.phase == Phase::wgrad   ? "W"
                                                             : "B";
      ++seen[{op.rank, op.labels.microbatch, op.labels.chunk, part}];
    }
    const int chunks = chunks_of(PipelineShape{s, p, m, v, 0});
    for (int rank = 0; rank < p; ++rank) {
      for (int mb = 0; mb < m; ++mb) {
        for (int c = 0; c < chunks; ++c) {
          CAPTURE(to_string(s));
          CHECK(seen[{rank, mb, c, "F"}] == 1);
          // the backward once: as one op (B+W) or as B then W
          const int whole = seen[{rank, mb, c, "BW"}];
          const int split = seen[{rank, mb, c, "B"}];
          const int wgrad = seen[{rank, mb, c, "W"}];
          CHECK(whole + split == 1);
          CHECK(split == wgrad);
        }
      }
    }
  }
}

TEST_CASE("V schedules: matched and deadlock-free under blocking p2p, with p2p time") {
  // run() checks the matching (per rank pair, in posting order, tags agreeing) and the graph for
  // cycles before simulating.
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 3 * p + 1; ++m) {
      for (const auto s : {PipelineSchedule::zb_v, PipelineSchedule::dualpipev}) {
        if (s == PipelineSchedule::dualpipev && m < 2 * p) continue;
        CAPTURE(to_string(s));
        CAPTURE(p);
        CAPTURE(m);
        const Result r = run(timed(s, p, m, 300, 200, 100, 40));
        // 4(p-1) transfers per microbatch: activations and gradients on both arms of the V.
        CHECK(r.plan.transfers.size() == static_cast<std::size_t>(4 * (p - 1) * m));
        CHECK(r.metrics.makespan > 0);
      }
    }
  }
}

TEST_CASE("messages: activations forward, gradients backward, bytes as configured") {
  PipelineConfig c = timed(PipelineSchedule::one_f_one_b, 3, 4, 100, 100, 100, 10);
  c.activation_bytes = 12345;
  const Result r = run(c);
  // each of the p - 1 boundaries carries m activations forward and m gradients back
  CHECK(r.plan.transfers.size() == static_cast<std::size_t>(2 * (3 - 1) * 4));
  for (const auto& t : r.plan.transfers) CHECK(t.bytes == 12345);
  // default message: tokens x hidden x e (ARCHITECTURE.md §4.2 with S/CP/TP x b = tokens)
  PipelineConfig d;
  d.tokens = 2048;
  d.hidden = 1024;
  CHECK(pipeline_message_bytes(d) == 2048 * 1024 * 2);
}

TEST_CASE("cost-model stage times: a linear layer per chunk") {
  PipelineConfig c;
  c.shape = PipelineShape{PipelineSchedule::one_f_one_b, 2, 2, 1, 0};
  c.tokens = 8192;
  c.hidden = 8192;
  const Result r = run(c);
  CHECK(r.metrics.makespan > 0);
  // forward GEMM 2 * 8192^3 FLOPs at <= 989 TFLOP/s takes at least 1.11 ms
  const auto& t = r.timeline.ops[0];
  CHECK(t.end - t.start >= static_cast<Nanos>(2.0 * 8192.0 * 8192.0 * 8192.0 / 989e12 * 1e9));
}

TEST_CASE("all-warm-up interleaving (every forward in the warm-up) is deadlock-free") {
  // Megatron's all-warm-up case: m v <= 2(p-1) + (v-1)g on rank 0, here m = g = p, v = 2. The
  // ranks that run every forward first exchange one message at a time (no forward-backward
  // pairs). With F = B = W = 1000 and free p2p the step still takes the interleaved form
  // m(F+B+W) + (p-1)(F+B+W)/v for p = 2, 3, 4, 8 (p = 3 took one F+B+W/v more before messages
  // were received in the exchange matching their send).
  for (int p : {2, 3, 4, 8}) {
    CAPTURE(p);
    const Result r = run(timed(PipelineSchedule::interleaved, p, p, 1000, 1000, 1000, 0, 2));
    CHECK(r.metrics.makespan == static_cast<Nanos>(p * 3000 + (p - 1) * 3000 / 2));
  }
}

TEST_CASE(
    "interleaved with microbatch groups larger than the pipeline: deadlock-free, same bubble") {
  // Megatron's --microbatch-group-size-per-virtual-pipeline-stage g > p: the last rank's chunk-c
  // output of microbatch j reaches rank 0 g - p steps before rank 0's chunk c+1 runs it, and is
  // received in the exchange that matches the send (as Megatron queues it per chunk). With free
  // p2p the makespan keeps the interleaved form m(F+B+W) + (p-1)(F+B+W)/v for every g (here F = 1,
  // B = 2, W = 0 per microbatch through a rank's share), and rank r holds Megatron's warm-up plus
  // one: 2(p-r-1) + (v-1)g + 1 chunk-activations, at most m v.
  for (const auto& [p_, v_, m] :
       {std::tuple{2, 2, 8}, std::tuple{3, 2, 12}, std::tuple{4, 3, 16}}) {
    const int p = p_, v = v_;
    for (int g = p; g <= m; ++g) {
      const int last = m % g;
      if (last != 0 && last < p) continue;  // Megatron's rule: m mod g = 0 or >= p
      CAPTURE(p);
      CAPTURE(v);
      CAPTURE(g);
      PipelineConfig c = timed(PipelineSchedule::interleaved, p, m, 1000, 2000, 0, 0, v);
      c.shape.group_size = g;
      const Result r = run(c);
      CHECK(r.metrics.makespan == static_cast<Nanos>(m * 3000 + (p - 1) * 3000 / v));
      const std::vector<int> peaks = peak_inflight(c.shape);
      for (int rank = 0; rank < p; ++rank) {
        CHECK(peaks[static_cast<std::size_t>(rank)] ==
              std::min(2 * (p - rank - 1) + (v - 1) * g + 1, m * v));
      }
    }
  }
}

TEST_CASE("bad stage times are rejected naming the flags") {
  PipelineConfig c = timed(PipelineSchedule::one_f_one_b, 2, 2, 1, 1, 1);
  c.time_w = -1;
  try {
    check_pipeline_config(c);
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("`time_w`") != std::string::npos);
  }
}

namespace {

// A small validation-sized configuration of each schedule.
PipelineConfig small(PipelineSchedule s, int p, int m) {
  PipelineConfig c;
  c.shape = PipelineShape{s, p, m, s == PipelineSchedule::interleaved ? 2 : 1, 0};
  c.tokens = 3;
  c.hidden = 5;
  c.dtype = DType::fp32;
  return c;
}

std::int64_t bytes_of(const TensorSlot& s) {
  std::int64_t n = dtype_bytes(s.dtype);
  for (std::int64_t d : s.shape) n *= d;
  return n;
}

constexpr std::array<PipelineSchedule, 7> kSchedules = {
    PipelineSchedule::gpipe,    PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved,
    PipelineSchedule::zb_h1,    PipelineSchedule::zb_h2,       PipelineSchedule::zb_v,
    PipelineSchedule::dualpipev};

}  // namespace

TEST_CASE("tensor slots: every compute op's operands on its own rank, as documented") {
  for (PipelineSchedule s : kSchedules) {
    for (const auto& [p_, m] : {std::pair{2, 4}, std::pair{4, 8}, std::pair{3, 6}}) {
      const int p = p_;
      CAPTURE(to_string(s));
      CAPTURE(p);
      const PipelineConfig c = small(s, p, m);
      const Program prog = build_pipeline(c);
      validate_program(prog);  // slots exist and belong to the op's rank (structure check)
      std::set<std::pair<int, std::string>> names;
      for (const auto& slot : prog.slots) {
        CHECK(names.insert({slot.rank, slot.name}).second);  // unique per rank
      }
      const auto& slots = prog.slots;
      auto shape_of = [&](SlotId id) { return slots.at(static_cast<std::size_t>(id)).shape; };
      const std::vector<std::int64_t> act{3, 5}, weight{5, 5};
      for (const auto& op : prog.ops) {
        const auto* k = std::get_if<KernelCall>(&op.body);
        if (k == nullptr) continue;
        for (const auto* list : {&k->inputs, &k->outputs}) {
          for (SlotId id : *list) {
            REQUIRE(id >= 0);
            CHECK(slots.at(static_cast<std::size_t>(id)).rank == op.rank);
          }
        }
        const auto& g = std::get<GemmShape>(k->shape);
        if (k->kind == KernelKind::linear_bwd) {  // {x, w, dy, pre} -> {dx, dw}
          REQUIRE(k->inputs.size() == 4);
          REQUIRE(k->outputs.size() == 2);
          CHECK(k->fn == kPipelineActivation);
          CHECK(shape_of(k->inputs[1]) == weight);
          CHECK(slots.at(static_cast<std::size_t>(k->outputs[1])).dtype == DType::fp32);
        } else if (op.labels.phase == Phase::fwd) {  // {x, w} -> {y, pre}
          REQUIRE(k->inputs.size() == 2);
          REQUIRE(k->outputs.size() == 2);
          CHECK(k->fn == kPipelineActivation);
          CHECK(shape_of(k->outputs[0]) == act);
        } else if (op.labels.phase == Phase::wgrad) {  // {x, dh, dw} -> {dw}
          REQUIRE(k->inputs.size() == 3);
          REQUIRE(k->outputs.size() == 1);
          CHECK(k->fn == ElementwiseFn::none);
          CHECK(g.accumulate);
          CHECK(k->inputs[2] == k->outputs[0]);
        } else {  // B: {dy, w, pre} -> {dx, dh}
          REQUIRE(k->inputs.size() == 3);
          REQUIRE(k->outputs.size() == 2);
          CHECK(g.trans_b);
          CHECK(k->fn == kPipelineActivation);
        }
      }
    }
  }
}

TEST_CASE("tensor slots: every transfer sends from / receives into a slot of its bytes") {
  for (PipelineSchedule s : kSchedules) {
    for (const auto& [p_, m] : {std::pair{2, 4}, std::pair{4, 8}}) {
      const int p = p_;
      CAPTURE(to_string(s));
      CAPTURE(p);
      const Program prog = build_pipeline(small(s, p, m));
      const auto& slots = prog.slots;
      // (src, dst, tag) -> the sender's and the receiver's slot
      std::map<std::tuple<int, int, int>, SlotId> sent, received;
      std::size_t transfers = 0;
      for (const auto& op : prog.ops) {
        const auto* call = std::get_if<P2PCall>(&op.body);
        if (call == nullptr) continue;
        for (const auto* list : {&call->sends, &call->recvs}) {
          for (const auto& t : *list) {
            REQUIRE(t.slot >= 0);
            const TensorSlot& slot = slots.at(static_cast<std::size_t>(t.slot));
            CHECK(slot.rank == op.rank);
            CHECK(bytes_of(slot) == t.bytes);
            ++transfers;
          }
        }
        for (const auto& t : call->sends) sent[{op.rank, t.peer, t.tag}] = t.slot;
        for (const auto& t : call->recvs) received[{t.peer, op.rank, t.tag}] = t.slot;
      }
      CHECK(transfers > 0);
      REQUIRE(sent.size() == received.size());
      for (const auto& [key, from] : sent) {
        REQUIRE(received.count(key) == 1);
        const TensorSlot& a = slots.at(static_cast<std::size_t>(from));
        const TensorSlot& b = slots.at(static_cast<std::size_t>(received.at(key)));
        CHECK(a.shape == b.shape);
        CHECK(a.dtype == b.dtype);
        // an activation y feeds the next stage's x; a gradient dx the previous stage's dy
        const bool gradient = std::get<2>(key) % 2 == 1;
        CHECK(a.name.substr(0, 2) == (gradient ? "dx" : "y "));
        CHECK(b.name.substr(0, 2) == (gradient ? "dy" : "x "));
        // the same microbatch: "<t> mb<i> c<c>"
        auto mb = [](const std::string& n) {
          return n.substr(n.find("mb"), n.find(" c") - n.find("mb"));
        };
        CHECK(mb(a.name) == mb(b.name));
      }
    }
  }
}

TEST_CASE("tensor slots: the V's turn hands y and dx over on the same rank") {
  // zb-v, p = 2: rank 1 holds stages 1 (chunk 0) and 2 (chunk 1); stage 2's forward reads stage
  // 1's y, and stage 1's backward reads stage 2's dx, with no x / dy slots of their own.
  const Program prog = build_pipeline(small(PipelineSchedule::zb_v, 2, 4));
  std::map<SlotId, std::string> name;
  for (const auto& s : prog.slots) name[s.id] = s.name;
  int checked = 0;
  for (const auto& op : prog.ops) {
    const auto* k = std::get_if<KernelCall>(&op.body);
    if (k == nullptr || op.rank != 1 || op.labels.microbatch != 0) continue;
    if (op.labels.phase == Phase::fwd && op.labels.chunk == 1) {
      CHECK(name[k->inputs[0]] == "y mb0 c0");
      ++checked;
    }
    if (op.labels.phase == Phase::bwd && op.labels.chunk == 0) {
      const SlotId dy = k->kind == KernelKind::linear_bwd ? k->inputs[2] : k->inputs[0];
      CHECK(name[dy] == "dx mb0 c1");
      ++checked;
    }
  }
  CHECK(checked == 2);
}
