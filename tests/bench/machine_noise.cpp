// How steady is this machine? The stability probe's reference kernel (a 512^3 fp32 GEMM on one
// BLAS thread, validate/calibrate/stability_probe) timed back to back on one thread while a
// second thread times a pure arithmetic loop (no memory traffic), for SECONDS seconds; per
// second, each one's median repeat, then the range of those per-second medians. A machine whose
// arithmetic holds while the GEMM moves is slowed through its shared caches and memory, not its
// cores (validate/calibrate/steady_windows.hpp).
//
//   meshsim_machine_noise [SECONDS]   (default 30; prints one line per second, then the ranges)
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/gemm.hpp"
#include "validate/calibrate/stability_probe.hpp"
#include "validate/cpu/shape_kernels.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Sample {
  double at_s, seconds;
};

template <typename Work>
std::vector<Sample> time_for(double seconds, Clock::time_point t0, Work work) {
  std::vector<Sample> out;
  for (;;) {
    const auto a = Clock::now();
    work();
    const auto b = Clock::now();
    const double at = std::chrono::duration<double>(b - t0).count();
    if (at > seconds) return out;
    out.push_back({at, std::chrono::duration<double>(b - a).count()});
  }
}

// The median of each whole second's samples (s), one entry per second.
std::vector<double> per_second_medians(const std::vector<Sample>& samples, int seconds) {
  std::vector<double> out;
  for (int s = 0; s < seconds; ++s) {
    std::vector<double> v;
    for (const auto& x : samples) {
      if (x.at_s >= s && x.at_s < s + 1) v.push_back(x.seconds);
    }
    if (v.empty()) continue;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    out.push_back(v[v.size() / 2]);
  }
  return out;
}

volatile double g_sink = 0;

void arithmetic() {
  double y = g_sink;
  for (int i = 0; i < 2000000; ++i) y = y * 1.0000001 + 1e-9;
  g_sink = y;
}

void range_line(const char* what, const std::vector<double>& medians) {
  if (medians.empty()) return;
  const auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
  std::printf("%-10s per-second medians %.3f-%.3f ms over %zu s: range %.1f %%\n", what, *lo * 1e3,
              *hi * 1e3, medians.size(), 100 * (*hi / *lo - 1));
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 30;
  if (seconds < 2 || seconds > 3600) {
    std::fprintf(stderr, "meshsim_machine_noise: error: SECONDS must be 2..3600, got '%s'\n",
                 argc > 1 ? argv[1] : "");
    return 2;
  }
  meshsim::kernels::cpu::set_blas_threads(1);  // the reference's one BLAS thread
  const meshsim::KernelCall gemm = meshsim::reference_kernel();
  meshsim::run_kernel_on_scratch(gemm);  // scratch allocated and touched
  const auto t0 = Clock::now();
  std::vector<Sample> alu;
  std::thread other([&] { alu = time_for(seconds, t0, arithmetic); });
  const std::vector<Sample> ref =
      time_for(seconds, t0, [&] { meshsim::run_kernel_on_scratch(gemm); });
  other.join();
  const auto g = per_second_medians(ref, seconds);
  const auto a = per_second_medians(alu, seconds);
  std::printf("second  gemm_ms  arithmetic_ms\n");
  for (std::size_t s = 0; s < std::min(g.size(), a.size()); ++s) {
    std::printf("%6zu  %7.3f  %13.3f\n", s, g[s] * 1e3, a[s] * 1e3);
  }
  range_line("gemm", g);
  range_line("arithmetic", a);
  return 0;
}
