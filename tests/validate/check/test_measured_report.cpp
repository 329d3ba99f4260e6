#include <doctest/doctest.h>

#include "sim/program.hpp"
#include "validate/check/measured_report.hpp"

using namespace meshsim;

namespace {

KernelCall k() {
  return KernelCall{KernelKind::elementwise, DType::fp32, VectorShape{1}, {}, {}};
}

}  // namespace

TEST_CASE("per-rank busy, exposed and idle times from a measured timeline") {
  ProgramBuilder b(Mesh({{"cp", 1}}, 8), true, "report");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("comm");
  b.add(0, compute, "a", {}, k());
  b.add(0, comm, "x", {}, P2PCall{});
  b.add(0, compute, "b", {}, k());
  const Program p = std::move(b).finish();
  Timeline tl;
  // compute [0, 100] and [300, 400]; comm [50, 350]; makespan 500.
  tl.ops = {{0, -1, 100}, {50, 50, 350}, {300, -1, 400}};
  tl.makespan = 500;
  const auto stats = measured_rank_stats(p, tl);
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].ops == 3);
  CHECK(stats[0].compute == 200);
  CHECK(stats[0].comm == 300);
  CHECK(stats[0].exposed_comm == 200);  // [100, 300] is not under compute
  CHECK(stats[0].idle == 100);          // 500 - |[0, 400]|
  CHECK(stats[0].end == 400);
  ValidateRunInfo info;
  info.backend = "test";
  info.numerics_note = "not checked (--no-check)";
  info.memory_bytes = {1 << 20};
  const std::string text = measured_report_text(p, tl, info);
  CHECK(text.find("step time 0.001 ms") != std::string::npos);
  CHECK(text.find("numerics: not checked (--no-check)") != std::string::npos);
  const auto j = measured_report_json(p, tl, info);
  CHECK(j["source"] == "measured");
  CHECK(j["ranks"][0]["exposed_comm_s"].get<double>() == doctest::Approx(2e-7));
  CHECK(j["ranks"][0]["memory_bytes"] == 1 << 20);
  CHECK(j["numerics"].is_null());
  // Keyed by mesh dimension as the simulator's step breakdown is: the exchange has no peer on
  // another dimension, so its 200 ns not under compute count with the first (tp); idle is
  // 500 - 200 compute - 200 exposed.
  CHECK(j["breakdown"]["compute_s"].get<double>() == doctest::Approx(2e-7));
  CHECK(j["breakdown"]["exposed_tp_comm_s"].get<double>() == doctest::Approx(2e-7));
  CHECK(j["breakdown"]["exposed_dp_comm_s"].get<double>() == 0.0);
  CHECK(j["breakdown"]["idle_s"].get<double>() == doctest::Approx(1e-7));
  CHECK(text.find("exposed comm: tp 0.000 ms, cp 0.000 ms") != std::string::npos);

  info.numerics_note = "a reference";
  info.numerics = NumericsReport{{TensorNumerics{"out", DType::bf16, 0.5, 0.25, 2e-2, false},
                                  TensorNumerics{"lse", DType::fp32, 1e-7, 1e-8, 1e-4, true}},
                                 false};
  const std::string checked = measured_report_text(p, tl, info);
  CHECK(checked.find("numerics against a reference: FAIL") != std::string::npos);
  CHECK(checked.find("out      bf16      5.000e-01    2.500e-01    2.0e-02  FAIL") !=
        std::string::npos);
  const auto jc = measured_report_json(p, tl, info);
  CHECK(jc["numerics"]["pass"] == false);
  CHECK(jc["numerics"]["tensors"][1]["tensor"] == "lse");
  CHECK(jc["numerics"]["tensors"][1]["pass"] == true);
}
