#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "validate/calibrate/calibration_samples.hpp"

using namespace meshsim;

namespace {

KernelCall gemm64() {
  return KernelCall{KernelKind::gemm,   DType::bf16, GemmShape{64, 64, 64}, {}, {},
                    ElementwiseFn::none};
}

Timeline timeline_of(const Program& p, const std::vector<std::pair<Nanos, Nanos>>& spans) {
  REQUIRE(spans.size() == p.ops.size());
  Timeline t;
  for (const auto& [a, b] : spans) t.ops.push_back(OpTiming{a, -1, b});
  return t;
}

}  // namespace

TEST_CASE("calibration samples: compute medians skip the warm-up; launch gap between ops") {
  ProgramBuilder b(Mesh({{"world", 1}}, 1), false, "t");
  const StreamId s = b.stream("compute");
  CalibrationProgram cp{BenchCategory::compute, {}, {}};
  BenchPoint point{"gemm", BenchCategory::compute, gemm64(), 1, {}};
  for (int rep = 0; rep < 4; ++rep) point.ops.push_back(b.add(0, s, "g", {}, gemm64()));
  cp.points.push_back(point);
  cp.program = std::move(b).finish();
  // warm-up 900 ns, then 100, 300, 200 ns; gaps of 10, 20, 30 ns between them.
  const Timeline t = timeline_of(cp.program, {{0, 900}, {910, 1010}, {1030, 1330}, {1360, 1560}});
  CalibrationRun run;
  add_measurements(cp, t, run);
  REQUIRE(run.points.size() == 1);
  CHECK(run.points[0].seconds.size() == 3);
  CHECK(run.points[0].median_s == doctest::Approx(200e-9));  // median of 100, 300, 200
  REQUIRE(run.samples.compute.size() == 1);
  CHECK(run.samples.launch_gap_s.value() == doctest::Approx(20e-9));  // median of 10, 20, 30
  CHECK(measurements_json(run)[0]["seconds"].size() == 3);
}

TEST_CASE("calibration samples: p2p one way = round trip / 2; collectives from the last joiner") {
  ProgramBuilder b(Mesh({{"world", 2}}, 2), false, "t");
  const StreamId s = b.stream("comm");
  const GroupId g = b.group("g2", {0, 1});
  CalibrationProgram cp{BenchCategory::p2p, {}, {}};
  BenchPoint ping{"p2p", BenchCategory::p2p, P2PCall{{Transfer{1, 64, 0, -1}}, {}}, 2, {}};
  for (int rep = 0; rep < 2; ++rep) {
    ping.ops.push_back(b.add(0, s, "ping", {}, P2PCall{{Transfer{1, 64, 2 * rep, -1}}, {}}));
    b.add(1, s, "ping", {}, P2PCall{{}, {Transfer{0, 64, 2 * rep, -1}}});
    b.add(1, s, "pong", {}, P2PCall{{Transfer{0, 64, 2 * rep + 1, -1}}, {}});
    ping.ops.push_back(b.add(0, s, "pong", {}, P2PCall{{}, {Transfer{1, 64, 2 * rep + 1, -1}}}));
  }
  const CollectiveCall ar{CollectiveKind::all_reduce, g, 64, DType::bf16, 0, -1, -1,
                          CollectiveAlgo::automatic};
  BenchPoint coll{"all_reduce", BenchCategory::collective, ar, 2, {}};
  for (int rep = 0; rep < 2; ++rep) {
    for (int r = 0; r < 2; ++r) coll.ops.push_back(b.add(r, s, "ar", {}, ar));
  }
  cp.points = {ping, coll};
  cp.program = std::move(b).finish();
  // Ops in id order: rep 0 (0 ping, 1 ping, 1 pong, 0 pong), rep 1 (ids 4..7), then the
  // all-reduces: rep 0 rank 0, rank 1 (8, 9), rep 1 rank 0, rank 1 (10, 11).
  const Timeline t = timeline_of(cp.program, {{0, 10},
                                              {0, 10},
                                              {10, 20},
                                              {10, 20},
                                              {1000, 1100},
                                              {1000, 1100},
                                              {1100, 1300},
                                              {1100, 1600},  // rank 0's pong ends at 1600
                                              {2000, 2100},
                                              {2000, 2100},
                                              {3000, 3400},  // rank 0 joins at 3000
                                              {3150, 3420}}  // rank 1 joins last, at 3150
  );
  CalibrationRun run;
  add_measurements(cp, t, run);
  REQUIRE(run.samples.comm.size() == 2);
  // Repetition 1: (1600 - 1000) / 2 = 300 ns one way.
  CHECK(run.samples.comm[0].seconds == doctest::Approx(300e-9));
  // Repetition 1: latest end 3420 - latest start 3150 = 270 ns.
  CHECK(run.samples.comm[1].seconds == doctest::Approx(270e-9));
  CHECK(run.samples.comm[1].placement.ranks == 2);
}

TEST_CASE("calibration samples: interference counts only GEMMs entirely under communication") {
  ProgramBuilder b(Mesh({{"world", 2}}, 2), false, "t");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("comm");
  CalibrationProgram cp{BenchCategory::interference, {}, {}};
  BenchPoint alone{"gemm alone", BenchCategory::interference, gemm64(), 1, {}};
  BenchPoint under{"gemm under comm", BenchCategory::interference, gemm64(), 1, {}};
  for (int rep = 0; rep < 2; ++rep) alone.ops.push_back(b.add(0, compute, "a", {}, gemm64()));
  b.add(0, comm, "x", {}, P2PCall{{Transfer{1, 64, 0, -1}}, {Transfer{1, 64, 0, -1}}});
  b.add(1, comm, "x", {}, P2PCall{{Transfer{0, 64, 0, -1}}, {Transfer{0, 64, 0, -1}}});
  for (int rep = 0; rep < 3; ++rep) under.ops.push_back(b.add(0, compute, "u", {}, gemm64()));
  cp.points = {alone, under};
  cp.program = std::move(b).finish();
  // alone: warm-up, then 100 ns. Rank 0's exchange runs 300..700. Under: warm-up 300..450 (inside),
  // 450..600 (inside, 150 ns), 600..800 (ends after the exchange: not counted).
  const Timeline t = timeline_of(
      cp.program,
      {{0, 150}, {150, 250}, {300, 700}, {300, 700}, {300, 450}, {450, 600}, {600, 800}});
  CalibrationRun run;
  add_measurements(cp, t, run);
  // The under-comm repetitions after the warm-up: 450..600 counts; 600..800 does not.
  CHECK(run.samples.interference.value() == doctest::Approx(150.0 / 100.0));
}

TEST_CASE("calibration samples: latency-bound messages keep the low quantile, others the median") {
  BenchPoint small{
      "p2p 1024 B", BenchCategory::p2p, P2PCall{{Transfer{1, 1024, 0, -1}}, {}}, 2, {}};
  BenchPoint big{
      "p2p 1048576 B", BenchCategory::p2p, P2PCall{{Transfer{1, 1 << 20, 0, -1}}, {}}, 2, {}};
  BenchPoint edge{"p2p 8192 B", BenchCategory::p2p, P2PCall{{Transfer{1, 8192, 0, -1}}, {}}, 2, {}};
  BenchPoint gemm{"gemm", BenchCategory::compute, gemm64(), 1, {}};
  CHECK(measurement_kind(small) == MeasurementKind::latency);
  CHECK(measurement_kind(edge) == MeasurementKind::latency);  // up to kLatencyBoundBytes
  CHECK(measurement_kind(big) == MeasurementKind::throughput);
  CHECK(measurement_kind(gemm) == MeasurementKind::throughput);
  const CollectiveCall tiny{CollectiveKind::all_reduce, 0, 256, DType::bf16, 0, -1, -1,
                            CollectiveAlgo::automatic};
  CHECK(measurement_kind(BenchPoint{"ar", BenchCategory::collective, tiny, 2, {}}) ==
        MeasurementKind::latency);

  // A 1 KiB ping-pong whose repetitions were slowed twice by another process: the fit sees the
  // low quantile. One rank pair, warm-up then 5 round trips of 2, 2, 9, 2.2, 7 us: one way 1, 1,
  // 4.5, 1.1, 3.5 us; p10 of 5 = the smallest (ceil(0.5) = 1st) = 1 us, the median 1.1 us.
  ProgramBuilder b(Mesh({{"world", 2}}, 2), false, "t");
  const StreamId s = b.stream("comm");
  CalibrationProgram cp{BenchCategory::p2p, {}, {}};
  std::vector<std::pair<Nanos, Nanos>> spans;
  const Nanos trips[] = {50000, 2000, 2000, 9000, 2200, 7000};
  Nanos t0 = 0;
  for (int rep = 0; rep < 6; ++rep) {
    small.ops.push_back(b.add(0, s, "ping", {}, P2PCall{{Transfer{1, 1024, 2 * rep, -1}}, {}}));
    b.add(1, s, "ping", {}, P2PCall{{}, {Transfer{0, 1024, 2 * rep, -1}}});
    b.add(1, s, "pong", {}, P2PCall{{Transfer{0, 1024, 2 * rep + 1, -1}}, {}});
    small.ops.push_back(b.add(0, s, "pong", {}, P2PCall{{}, {Transfer{1, 1024, 2 * rep + 1, -1}}}));
    const Nanos trip = trips[rep];
    spans.insert(spans.end(),
                 {{t0, t0 + 10}, {t0, t0 + 10}, {t0 + 10, t0 + trip}, {t0 + 10, t0 + trip}});
    t0 += trip + 100;
  }
  cp.points = {small};
  cp.program = std::move(b).finish();
  CalibrationRun run;
  add_measurements(cp, timeline_of(cp.program, spans), run);
  REQUIRE(run.points.size() == 1);
  CHECK(run.points[0].seconds.size() == 5);
  CHECK(run.points[0].estimate_s == doctest::Approx(1e-6));
  CHECK(run.points[0].median_s == doctest::Approx(1.1e-6));
  CHECK(run.points[0].p90_s == doctest::Approx(4.5e-6));  // ceil(4.5) = 5th of 5
  REQUIRE(run.samples.comm.size() == 1);
  CHECK(run.samples.comm[0].seconds == doctest::Approx(1e-6));
  CHECK(measurements_json(run)[0]["estimator"] == "p10 (low quantile)");
}
