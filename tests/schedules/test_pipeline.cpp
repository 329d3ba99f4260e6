#include <doctest/doctest.h>

#include <map>
#include <string>

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

double bubble(const Result& r) {
  double busy = 0;
  for (const auto& m : r.metrics.ranks) busy += static_cast<double>(m.compute);
  return 1.0 - busy / (static_cast<double>(r.metrics.ranks.size()) *
                       static_cast<double>(r.metrics.makespan));
}

}  // namespace

TEST_CASE("1F1B, p=4, m=8, F=1, B+W=2, free p2p: makespan 33, bubble 3/11 (design §6)") {
  // (m + p - 1)(F + B + W) = 11 * 3 = 33; busy 8 * 3 = 24 per rank -> bubble 1 - 24/33 = 3/11
  const Result r = run(timed(PipelineSchedule::one_f_one_b, 4, 8, 1000, 1000, 1000));
  CHECK(r.metrics.makespan == 33000);
  CHECK(bubble(r) == doctest::Approx(3.0 / 11.0));
  CHECK(peak_inflight(PipelineShape{PipelineSchedule::one_f_one_b, 4, 8, 1, 0}) ==
        std::vector<int>{4, 3, 2, 1});
}

TEST_CASE("closed forms through the whole engine, free p2p (design §4.2)") {
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

TEST_CASE("one microbatch with p2p time T: the chain through the stages") {
  const double f = 1000, b = 700, w = 300, t = 50;
  for (int p : {1, 2, 3, 5}) {
    CAPTURE(p);
    // GPipe and 1F1B: p(F + B + W) + 2(p - 1)T
    const auto chain = static_cast<Nanos>(p * (f + b + w) + 2 * (p - 1) * t);
    CHECK(run(timed(PipelineSchedule::gpipe, p, 1, f, b, w, t)).metrics.makespan == chain);
    CHECK(run(timed(PipelineSchedule::one_f_one_b, p, 1, f, b, w, t)).metrics.makespan == chain);
  }
}

TEST_CASE("every rank runs each (microbatch, chunk) forward and backward exactly once") {
  for (PipelineSchedule s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                             PipelineSchedule::interleaved, PipelineSchedule::zb_h1}) {
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

TEST_CASE("messages: activations forward, gradients backward, bytes as configured") {
  PipelineConfig c = timed(PipelineSchedule::one_f_one_b, 3, 4, 100, 100, 100, 10);
  c.activation_bytes = 12345;
  const Result r = run(c);
  // each of the p - 1 boundaries carries m activations forward and m gradients back
  CHECK(r.plan.transfers.size() == static_cast<std::size_t>(2 * (3 - 1) * 4));
  for (const auto& t : r.plan.transfers) CHECK(t.bytes == 12345);
  // default message: tokens x hidden x e (design §4.2 with S/CP/TP x b = tokens)
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

TEST_CASE("V-shaped schedules and all-warm-up interleaving are refused, not mis-simulated") {
  CHECK_THROWS_AS(build_pipeline(timed(PipelineSchedule::zb_v, 4, 8, 1, 1, 1)), InputError);
  CHECK_THROWS_AS(build_pipeline(timed(PipelineSchedule::dualpipev, 4, 8, 1, 1, 1)), InputError);
  // p = 4, m = 4, v = 2: warm-up 2(p-1) + (v-1)p = 10 >= m v = 8
  CHECK_THROWS_AS(build_pipeline(timed(PipelineSchedule::interleaved, 4, 4, 1, 1, 1, 0, 2)),
                  InputError);
}

TEST_CASE("bad stage times are rejected naming the flags") {
  PipelineConfig c = timed(PipelineSchedule::one_f_one_b, 2, 2, 1, 1, 1);
  c.time_w = -1;
  try {
    check_pipeline_config(c);
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("--time-w") != std::string::npos);
  }
}
