#pragma once
// Fitting a hardware profile to measured microbenchmarks (ARCHITECTURE.md §5), independent of how
// they were measured (the CPU and CUDA backends feed the same samples):
//  - compute: each dtype's peak is the fastest rate any GEMM or attention block reached; the
//    memory bandwidth the fastest copy; each kernel kind's efficiency table holds, per size, the
//    efficiency that makes the roofline model reproduce the measured duration (equal sizes: the
//    geometric mean); "default" is the GEMM table; the launch overhead is the measured gap
//    between back-to-back kernels of a stream;
//  - communication, per link class: latency = base + steps x step latency and the bus bandwidth,
//    fitted by non-negative least squares on relative errors over every p2p and collective
//    sample of that class (the model's own formulas give each sample's coefficients, so the fit
//    and the simulator cannot disagree on what a step or a bus byte is);
//  - interference: compute under communication over compute alone (>= 1).
// What the samples cannot determine (a link class never measured, a kind never run) keeps the
// base profile's value, and the report says so.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/hardware_profile.hpp"
#include "sim/network_analytical.hpp"
#include "sim/program.hpp"

namespace meshsim {

struct ComputeSample {
  std::string name;
  KernelCall call;
  double seconds = 0;  // the kernel's measured duration (median)
};

struct CommSample {
  std::string name;
  OpBody body;  // a P2PCall (one transfer's bytes count) or a CollectiveCall
  GroupPlacement placement;
  double seconds = 0;  // one transfer one way (p2p) or one collective (the point estimate)
};

struct CalibrationSamples {
  std::vector<ComputeSample> compute;
  std::vector<CommSample> comm;
  std::optional<double> launch_gap_s;
  std::optional<double> interference;  // compute under comm / alone
};

// A linear model t = sum_j coef_j x_j with x >= 0, fitted to minimize sum ((t_pred - t) / t)^2.
// Columns that are zero in every row stay 0. Returns x.
std::array<double, 3> fit_nonnegative_relative(const std::vector<std::array<double, 3>>& rows,
                                               const std::vector<double>& seconds);

// (size, efficiency) points -> a table: sorted, equal sizes merged (geometric mean), efficiencies
// clamped to [1e-6, 1].
EfficiencyTable efficiency_table(std::vector<EfficiencyPoint> points);

// A sample's latency/bandwidth coefficients under the model: seconds = base_coef x base +
// step_coef x step latency + bus_bytes / bus bandwidth, for the link class it runs on.
struct LinkCoefficients {
  LinkClass link = LinkClass::nvlink;
  double base = 0, steps = 0, bus_bytes = 0;
};
LinkCoefficients link_coefficients(const CommSample& sample, int nics_per_node);

struct SampleResidual {
  std::string name;
  double measured_s = 0;
  double predicted_s = 0;
  double relative_error() const { return (predicted_s - measured_s) / measured_s; }
};

struct LinkFit {
  LinkClass link = LinkClass::nvlink;
  int samples = 0;
  double base_latency_s = 0, step_latency_s = 0, bus_bw = 0;
};

struct ProfileFit {
  HardwareProfile profile;
  std::vector<LinkFit> links;           // the classes that had samples
  std::vector<SampleResidual> compute;  // kernel time predicted by the fitted profile
  std::vector<SampleResidual> comm;     // p2p and collective times predicted
  std::vector<std::string> notes;       // what was kept from the base profile, and why
};

struct FitOptions {
  // Keep the base profile's peaks and memory bandwidth (a datasheet's) and fit the efficiency
  // tables relative to them: for samples from a real run's trace, where the fastest kernel seen
  // is not the hardware's peak.
  bool keep_peaks = false;
};

// `base` supplies everything the samples do not determine; name and gpus_per_node are the
// caller's to set on the result.
ProfileFit fit_profile(const HardwareProfile& base, const CalibrationSamples& samples,
                       const FitOptions& options = {});

// The fit report: fitted figures and residuals (median, p90, worst with its sample named).
std::string fit_report_text(const ProfileFit& fit);
nlohmann::ordered_json fit_report_json(const ProfileFit& fit);

}  // namespace meshsim
