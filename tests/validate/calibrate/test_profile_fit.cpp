#include <cmath>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "sim/compute_model.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/network_analytical.hpp"
#include "validate/calibrate/profile_fit.hpp"

using namespace meshsim;

namespace {

KernelCall gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  return KernelCall{KernelKind::gemm, DType::bf16, GemmShape{m, n, k}, {}, {}, ElementwiseFn::none};
}
KernelCall vector(KernelKind kind, std::int64_t n) {
  return KernelCall{kind, DType::bf16, VectorShape{n}, {}, {}, ElementwiseFn::none};
}

CommSample collective(CollectiveKind kind, int ranks, std::int64_t bytes, double seconds) {
  return CommSample{
      "c", CollectiveCall{kind, 0, bytes, DType::bf16, 0, -1, -1, CollectiveAlgo::automatic},
      GroupPlacement{ranks, 1, ranks}, seconds};
}
CommSample p2p(std::int64_t bytes, double seconds) {
  return CommSample{"p", P2PCall{{Transfer{1, bytes, 0, -1}}, {}}, GroupPlacement{2, 1, 2},
                    seconds};
}

}  // namespace

TEST_CASE("fit_nonnegative_relative recovers exact coefficients and clamps negative ones") {
  // t = 2 + 3 x steps + 0.5 x bytes, sampled on 5 rows: recovered exactly.
  std::vector<std::array<double, 3>> rows = {
      {1, 1, 10}, {1, 2, 100}, {1, 4, 1000}, {1, 1, 5000}, {1, 6, 20}};
  std::vector<double> t;
  for (const auto& r : rows) t.push_back(2 * r[0] + 3 * r[1] + 0.5 * r[2]);
  const auto x = fit_nonnegative_relative(rows, t);
  CHECK(x[0] == doctest::Approx(2));
  CHECK(x[1] == doctest::Approx(3));
  CHECK(x[2] == doctest::Approx(0.5));
  // Data that a negative intercept would fit best (t = -1 + bytes): the intercept is held at 0.
  rows = {{1, 0, 2}, {1, 0, 3}, {1, 0, 5}};
  t = {1, 2, 4};
  const auto y = fit_nonnegative_relative(rows, t);
  CHECK(y[0] == 0.0);
  CHECK(y[1] == 0.0);
  CHECK(y[2] > 0.0);
}

TEST_CASE("efficiency_table sorts, merges equal sizes by geometric mean and clamps") {
  const auto t = efficiency_table({{100, 0.5}, {10, 0.2}, {100, 0.125}, {1000, 3.0}});
  REQUIRE(t.size() == 3);
  CHECK(t[0].size == 10);
  CHECK(t[1].efficiency == doctest::Approx(0.25));  // sqrt(0.5 x 0.125)
  CHECK(t[2].efficiency == 1.0);                    // clamped
}

TEST_CASE("fit_profile recovers alpha/beta per link class from samples the model generated") {
  // The truth: base 5 us, 2 us per NVLink step, 40 GB/s bus. Samples of p2p and three
  // collectives over 2 and 4 ranks, sizes 1 KiB..16 MiB, timed by the model itself.
  HardwareProfile truth = load_hardware("h100-sxm");
  truth.network.nvls_bus_bw = 0;
  truth.network.nccl_model = false;  // a fitted profile is alpha-beta: base + steps x step + bytes
  truth.network.base_latency = 5e-6;
  truth.network.nvlink_step_latency = 2e-6;
  truth.network.nvlink_bus_bw = 40e9;
  CalibrationSamples s;
  for (std::int64_t bytes = 1024; bytes <= (16 << 20); bytes *= 16) {
    s.comm.push_back(p2p(bytes, p2p_cost(truth.network, true, bytes).seconds));
    for (int n : {2, 4}) {
      for (auto kind :
           {CollectiveKind::all_reduce, CollectiveKind::all_gather, CollectiveKind::all_to_all}) {
        s.comm.push_back(collective(
            kind, n, bytes,
            collective_cost(truth.network, kind, GroupPlacement{n, 1, n}, bytes).seconds));
      }
    }
  }
  const ProfileFit fit = fit_profile(load_hardware("a100-sxm"), s);
  REQUIRE(fit.links.size() == 1);
  CHECK(fit.links[0].link == LinkClass::nvlink);
  CHECK(fit.links[0].base_latency_s == doctest::Approx(5e-6));
  CHECK(fit.links[0].step_latency_s == doctest::Approx(2e-6));
  CHECK(fit.links[0].bus_bw == doctest::Approx(40e9));
  CHECK(fit.profile.network.nvlink_bus_bw == doctest::Approx(40e9));
  // Per-operation figures exist for each measured operation, and every residual is ~0.
  CHECK(fit.profile.network.calibrated.count("p2p.nvlink") == 1);
  CHECK(fit.profile.network.calibrated.count("all_reduce.nvlink") == 1);
  for (const auto& r : fit.comm) CHECK(std::abs(r.relative_error()) < 1e-9);
  // The network class was never sampled: its figures stay the base profile's, and it says so.
  CHECK(fit.profile.network.nic_bw == load_hardware("a100-sxm").network.nic_bw);
  REQUIRE_FALSE(fit.notes.empty());
  CHECK(fit.notes[0].find("network links: no sample") != std::string::npos);
}

TEST_CASE("fit_profile recovers efficiency curves, peaks and launch overhead") {
  // The truth: 100 TFLOP/s bf16 (fp32 likewise), GEMM efficiency 0.2 at 1e7 FLOPs rising to 0.8
  // at 1e9, memory 1 TB/s at efficiency 0.5..0.9, launch 3 us. Samples = model time - launch (the
  // kernel's measured duration).
  HardwareProfile truth = load_hardware("h100-sxm");
  truth.peak_flops = {100e12, 100e12, 100e12, 50e12};
  truth.launch_overhead = 3e-6;
  truth.memory_bw = 1e12;
  truth.memory_efficiency = {{1e4, 0.5}, {1e8, 0.9}};
  truth.compute_efficiency = {{"default", {{1e7, 0.2}, {1e9, 0.8}}},
                              {"gemm", {{1e7, 0.2}, {1e9, 0.8}}},
                              {"accumulate", {{1e3, 0.01}, {1e7, 0.02}}}};
  CalibrationSamples s;
  auto add = [&](const KernelCall& c) {
    s.compute.push_back({"k", c, compute_seconds(truth, c) - truth.launch_overhead});
  };
  add(gemm(500, 1000, 1000));  // 2 x 500 x 1000 x 1000 = 1e9 FLOPs: efficiency 0.8, the peak
  // 2 x 100 x 250 x 200 = 1e7 FLOPs at 0.2: 0.5 us, above its memory time (190 kB at >= 0.5 TB/s).
  add(gemm(100, 250, 200));
  add(vector(KernelKind::copy, 2500));      // read + write 2 x 2500 x 2 B = 1e4 bytes
  add(vector(KernelKind::copy, 25000000));  // 1e8 bytes: efficiency 0.9, the fastest copy
  s.launch_gap_s = 3e-6;
  const ProfileFit fit = fit_profile(load_hardware("a100-sxm"), s);
  const HardwareProfile& p = fit.profile;
  // Peak = fastest GEMM rate = 0.8 x 100 TFLOP/s; its table point is then 1.0, the other 0.25.
  CHECK(p.peak_flops[0] == doctest::Approx(80e12));
  const auto& g = p.compute_efficiency.at("gemm");
  REQUIRE(g.size() == 2);
  CHECK(g[0].efficiency == doctest::Approx(0.25));
  CHECK(g[1].efficiency == doctest::Approx(1.0));
  CHECK(p.compute_efficiency.at("default") == g);
  // Memory = fastest copy = 0.9 TB/s; the small copy's efficiency 0.5 / 0.9 of it.
  CHECK(p.memory_bw == doctest::Approx(0.9e12));
  CHECK(p.memory_efficiency[0].efficiency == doctest::Approx(0.5 / 0.9));
  CHECK(p.launch_overhead == doctest::Approx(3e-6));
  // The fitted profile reproduces every sample.
  for (const auto& r : fit.compute) CHECK(std::abs(r.relative_error()) < 1e-9);
  CHECK(fit_report_text(fit).find("launch overhead  3 us") != std::string::npos);
  CHECK(fit_report_json(fit)["residuals"]["compute"].size() == 4);
}

TEST_CASE("fit_profile: interference is at least 1") {
  CalibrationSamples s;
  s.interference = 0.97;  // noise: compute under comm measured faster than alone
  CHECK(fit_profile(load_hardware("h100-sxm"), s).profile.comm_interference == 1.0);
  s.interference = 1.6;
  CHECK(fit_profile(load_hardware("h100-sxm"), s).profile.comm_interference == 1.6);
}
