#include "validate/calibrate/profile_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/compute_model.hpp"
#include "sim/error.hpp"
#include "validate/run/microbench_stats.hpp"

namespace meshsim {
namespace {

constexpr double kHuge = 1e300;  // a bandwidth whose byte term vanishes

// Solves the normal equations of the columns in `use` (Gaussian elimination with pivoting);
// false when they are singular.
bool solve_subset(const std::vector<std::array<double, 3>>& rows, const std::vector<double>& t,
                  const std::array<bool, 3>& use, std::array<double, 3>& x) {
  std::vector<int> cols;
  for (int j = 0; j < 3; ++j) {
    if (use[static_cast<std::size_t>(j)]) cols.push_back(j);
  }
  const std::size_t n = cols.size();
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double w = 1.0 / (t[i] * t[i]);  // relative residuals: weight 1/t^2
    for (std::size_t p = 0; p < n; ++p) {
      const double xp = rows[i][static_cast<std::size_t>(cols[p])];
      for (std::size_t q = 0; q < n; ++q) {
        a[p][q] += w * xp * rows[i][static_cast<std::size_t>(cols[q])];
      }
      a[p][n] += w * xp * t[i];
    }
  }
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < n; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    }
    if (std::abs(a[pivot][c]) < 1e-300) return false;
    std::swap(a[c], a[pivot]);
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k <= n; ++k) a[r][k] -= f * a[c][k];
    }
  }
  x = {0, 0, 0};
  for (std::size_t c = 0; c < n; ++c) {
    x[static_cast<std::size_t>(cols[c])] = a[c][n] / a[c][c];
  }
  // Singular in effect: a relative pivot collapse shows up as non-finite values.
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

double relative_sse(const std::vector<std::array<double, 3>>& rows, const std::vector<double>& t,
                    const std::array<double, 3>& x) {
  double sse = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double pred = rows[i][0] * x[0] + rows[i][1] * x[1] + rows[i][2] * x[2];
    const double r = (pred - t[i]) / t[i];
    sse += r * r;
  }
  return sse;
}

// The roofline's compute part at efficiency 1 with memory free: FLOPs / peak of the kernel's
// math dtype (the model's own choice of dtype).
double unit_compute_seconds(const HardwareProfile& peaks, const KernelCall& call) {
  HardwareProfile p = peaks;
  p.launch_overhead = 0;
  p.compute_efficiency = {{"default", {{1.0, 1.0}}}};
  p.memory_bw = kHuge;
  p.memory_efficiency = {{1.0, 1.0}};
  return compute_seconds(p, call);
}

bool sets_peak(KernelKind k) {
  return k == KernelKind::gemm || k == KernelKind::attention_fwd ||
         k == KernelKind::attention_bwd || k == KernelKind::linear_bwd;
}

void fit_compute(const CalibrationSamples& s, const FitOptions& options, ProfileFit& fit) {
  HardwareProfile& p = fit.profile;
  std::array<double, 4> peak{};
  double copy_bw = 0;
  for (const auto& c : s.compute) {
    MESHSIM_CHECK(c.seconds > 0, fmt::format("sample '{}' has no duration", c.name));
    if (sets_peak(c.call.kind)) {
      auto& slot = peak[static_cast<std::size_t>(c.call.dtype)];
      slot = std::max(slot, kernel_flops(c.call) / c.seconds);
    }
    if (c.call.kind == KernelKind::copy)
      copy_bw = std::max(copy_bw, kernel_bytes(c.call) / c.seconds);
  }
  if (options.keep_peaks) {
    fit.notes.push_back(
        "peaks and memory bandwidth: the base profile's, efficiencies fitted relative to them");
  }
  for (std::size_t d = 0; d < peak.size() && !options.keep_peaks; ++d) {
    if (peak[d] > 0) {
      p.peak_flops[d] = peak[d];
    } else if (!s.compute.empty()) {
      fit.notes.push_back(fmt::format("peak {}: no GEMM measured, kept {:.4g} TFLOP/s",
                                      to_string(static_cast<DType>(d)), p.peak_flops[d] / 1e12));
    }
  }
  if (copy_bw > 0) {
    if (!options.keep_peaks) p.memory_bw = copy_bw;
    std::vector<EfficiencyPoint> mem;
    for (const auto& c : s.compute) {
      if (c.call.kind == KernelKind::copy) {
        mem.push_back({kernel_bytes(c.call), kernel_bytes(c.call) / (p.memory_bw * c.seconds)});
      }
    }
    p.memory_efficiency = efficiency_table(std::move(mem));
  } else if (!s.compute.empty()) {
    fit.notes.push_back("memory bandwidth: no copy measured, kept the base profile's");
  }
  std::map<std::string, std::vector<EfficiencyPoint>> per_kind;
  for (const auto& c : s.compute) {
    const double flops = kernel_flops(c.call);
    if (flops <= 0) continue;
    per_kind[efficiency_key(c.call)].push_back(
        {flops, unit_compute_seconds(p, c.call) / c.seconds});
  }
  if (!per_kind.empty()) {
    std::map<std::string, EfficiencyTable> tables;
    for (auto& [kind, points] : per_kind) tables[kind] = efficiency_table(std::move(points));
    const auto gemm = tables.find("gemm");
    tables["default"] = gemm != tables.end() ? gemm->second : tables.begin()->second;
    p.compute_efficiency = std::move(tables);
  }
  if (s.launch_gap_s) p.launch_overhead = std::max(0.0, *s.launch_gap_s);
  if (s.interference) p.comm_interference = std::max(1.0, *s.interference);
  for (const auto& c : s.compute) {
    fit.compute.push_back({c.name, c.seconds, compute_seconds(p, c.call) - p.launch_overhead});
  }
}

void fit_links(const CalibrationSamples& s, ProfileFit& fit) {
  NetworkProfile& net = fit.profile.network;
  // Measured collectives are what they are: the fitted figures cost every step as measured, not
  // through NCCL's protocol model.
  net.nccl_model = false;
  bool have_nvlink = false;
  for (LinkClass link : {LinkClass::nvlink, LinkClass::network}) {
    std::vector<std::array<double, 3>> rows;
    std::vector<double> t;
    for (const auto& c : s.comm) {
      const LinkCoefficients k = link_coefficients(c, net.nics_per_node);
      if (k.link != link) continue;
      MESHSIM_CHECK(c.seconds > 0, fmt::format("sample '{}' has no duration", c.name));
      rows.push_back({k.base, k.steps, k.bus_bytes});
      t.push_back(c.seconds);
    }
    if (rows.empty()) {
      if (!s.comm.empty()) {
        fit.notes.push_back(fmt::format(
            "{} links: no sample (every group ran {}), kept the base profile's figures",
            to_string(link), link == LinkClass::network ? "inside one node" : "across nodes"));
      }
      continue;
    }
    const auto x = fit_nonnegative_relative(rows, t);
    LinkFit lf{link, static_cast<int>(rows.size()), x[0], x[1], x[2] > 0 ? 1.0 / x[2] : kHuge};
    if (link == LinkClass::nvlink) {
      have_nvlink = true;
      net.base_latency = lf.base_latency_s;
      net.nvlink_step_latency = lf.step_latency_s;
      net.nvlink_bus_bw = lf.bus_bw;
      net.nvls_bus_bw = 0;  // measured collectives are what they are: no separate NVLS figure
    } else {
      if (!have_nvlink) net.base_latency = lf.base_latency_s;
      net.network_step_latency = lf.step_latency_s;
      net.nic_bw = lf.bus_bw;
    }
    fit.links.push_back(lf);
  }
  // Each operation on each link class also gets its own figures (MPI's or NCCL's algorithms differ
  // per collective; a reduction pays for its arithmetic): the simulator uses them for that
  // operation, the pooled fit above for operations never measured.
  std::map<std::string, std::pair<std::vector<std::array<double, 3>>, std::vector<double>>> per_op;
  for (const auto& c : s.comm) {
    const LinkCoefficients k = link_coefficients(c, net.nics_per_node);
    const std::string op = std::holds_alternative<P2PCall>(c.body)
                               ? "p2p"
                               : std::string(to_string(std::get<CollectiveCall>(c.body).kind));
    auto& [rows, t] = per_op[fmt::format("{}.{}", op, to_string(k.link))];
    rows.push_back({k.base, k.steps, k.bus_bytes});
    t.push_back(c.seconds);
  }
  net.calibrated.clear();
  for (const auto& [key, data] : per_op) {
    const auto x = fit_nonnegative_relative(data.first, data.second);
    net.calibrated[key] = LinkFigures{x[0], x[1], x[2] > 0 ? 1.0 / x[2] : kHuge};
  }
  for (const auto& c : s.comm) {
    double predicted = 0;
    if (const auto* p2p = std::get_if<P2PCall>(&c.body)) {
      predicted = p2p_cost(net, c.placement.nodes <= 1, p2p->sends.at(0).bytes).seconds;
    } else {
      const auto& call = std::get<CollectiveCall>(c.body);
      predicted = collective_cost(net, call.kind, c.placement, call.bytes, call.algo).seconds;
    }
    fit.comm.push_back({c.name, c.seconds, predicted});
  }
}

struct ResidualStats {
  double median = 0, p90 = 0;
  const SampleResidual* worst = nullptr;
};

ResidualStats stats_of(const std::vector<SampleResidual>& r) {
  ResidualStats s;
  std::vector<double> abs;
  for (const auto& x : r) {
    abs.push_back(std::abs(x.relative_error()));
    if (s.worst == nullptr || std::abs(x.relative_error()) > std::abs(s.worst->relative_error())) {
      s.worst = &x;
    }
  }
  std::sort(abs.begin(), abs.end());
  s.median = nearest_rank_percentile(abs, 0.5);
  s.p90 = nearest_rank_percentile(abs, 0.9);
  return s;
}

}  // namespace

std::array<double, 3> fit_nonnegative_relative(const std::vector<std::array<double, 3>>& rows,
                                               const std::vector<double>& seconds) {
  MESHSIM_CHECK(rows.size() == seconds.size() && !rows.empty(), "fit: one time per row");
  for (double t : seconds) MESHSIM_CHECK(t > 0, "fit: times must be positive");
  std::array<bool, 3> present{};
  for (const auto& r : rows) {
    for (std::size_t j = 0; j < 3; ++j) present[j] = present[j] || r[j] != 0;
  }
  // Every subset of the present columns (at most 8): the best non-negative solution wins. With
  // three unknowns this enumeration is the exact non-negative least-squares solution.
  std::array<double, 3> best{};
  double best_sse = std::numeric_limits<double>::infinity();
  for (unsigned mask = 1; mask < 8; ++mask) {
    std::array<bool, 3> use{};
    bool ok = true;
    for (std::size_t j = 0; j < 3; ++j) {
      use[j] = ((mask >> j) & 1U) != 0;
      if (use[j] && !present[j]) ok = false;
    }
    std::array<double, 3> x{};
    if (!ok || !solve_subset(rows, seconds, use, x)) continue;
    if (std::any_of(x.begin(), x.end(), [](double v) { return v < 0; })) continue;
    const double sse = relative_sse(rows, seconds, x);
    if (sse < best_sse) {
      best_sse = sse;
      best = x;
    }
  }
  return best;
}

EfficiencyTable efficiency_table(std::vector<EfficiencyPoint> points) {
  std::map<double, std::pair<double, int>> by_size;  // size -> (sum of log efficiency, count)
  for (const auto& p : points) {
    MESHSIM_CHECK(p.size > 0 && p.efficiency > 0, "efficiency point needs a positive size");
    auto& [sum, n] = by_size[p.size];
    sum += std::log(p.efficiency);
    ++n;
  }
  EfficiencyTable table;
  for (const auto& [size, acc] : by_size) {
    const double e = std::exp(acc.first / acc.second);
    table.push_back({size, std::clamp(e, 1e-6, 1.0)});
  }
  return table;
}

LinkCoefficients link_coefficients(const CommSample& sample, int nics_per_node) {
  auto seconds = [&](double base, double step, double bus) {
    NetworkProfile net;
    net.base_latency = base;
    net.nvlink_step_latency = step;
    net.network_step_latency = step;
    net.nvlink_bus_bw = sample.placement.nodes <= 1 ? bus : kHuge;
    net.nic_bw = sample.placement.nodes <= 1 ? kHuge : bus;
    net.nics_per_node = nics_per_node;
    net.nvls_bus_bw = 0;
    if (const auto* p2p = std::get_if<P2PCall>(&sample.body)) {
      MESHSIM_CHECK(p2p->sends.size() == 1, "p2p sample: one transfer");
      return p2p_cost(net, sample.placement.nodes <= 1, p2p->sends[0].bytes).seconds;
    }
    const auto& c = std::get<CollectiveCall>(sample.body);
    return collective_cost(net, c.kind, sample.placement, c.bytes, c.algo).seconds;
  };
  LinkCoefficients k;
  k.link = sample.placement.nodes <= 1 ? LinkClass::nvlink : LinkClass::network;
  k.base = seconds(1, 0, kHuge);
  k.steps = seconds(0, 1, kHuge);
  k.bus_bytes = seconds(0, 0, 1);
  return k;
}

ProfileFit fit_profile(const HardwareProfile& base, const CalibrationSamples& samples,
                       const FitOptions& options) {
  ProfileFit fit;
  fit.profile = base;
  // The fitted figures are this machine's measurements: the base's public sources and its
  // named attention kernel families no longer describe them.
  fit.profile.sources.clear();
  fit.profile.attention_kernels.clear();
  fit.profile.attention_kernel.clear();
  fit_compute(samples, options, fit);
  fit_links(samples, fit);
  if (!samples.interference && !samples.comm.empty()) {
    fit.notes.push_back("interference: not measured, kept the base profile's factor");
  }
  return fit;
}

std::string fit_report_text(const ProfileFit& fit) {
  const HardwareProfile& p = fit.profile;
  std::string out = "fitted profile\n";
  out += fmt::format("  peak TFLOP/s     bf16 {:.4g}  fp16 {:.4g}  fp32 {:.4g}  fp64 {:.4g}\n",
                     p.peak_flops[0] / 1e12, p.peak_flops[1] / 1e12, p.peak_flops[2] / 1e12,
                     p.peak_flops[3] / 1e12);
  out += fmt::format("  memory           {:.4g} GB/s (fastest copy)\n", p.memory_bw / 1e9);
  out += fmt::format("  launch overhead  {:.3g} us (gap between back-to-back kernels)\n",
                     p.launch_overhead * 1e6);
  out += fmt::format("  interference     x{:.3f} (compute under communication)\n",
                     p.comm_interference);
  for (const auto& [kind, table] : p.compute_efficiency) {
    out += fmt::format("  efficiency {:<17} {} points, {:.3g}..{:.3g}\n", kind, table.size(),
                       table.empty() ? 0.0 : table.front().efficiency,
                       table.empty() ? 0.0 : table.back().efficiency);
  }
  for (const auto& [key, f] : p.network.calibrated) {
    out += fmt::format("  {:<24} base {:.3g} us + {:.3g} us per step, {:.4g} GB/s\n", key,
                       f.base_latency * 1e6, f.step_latency * 1e6, f.bw / 1e9);
  }
  for (const auto& l : fit.links) {
    out += fmt::format(
        "  {:<7} links     base {:.3g} us + {:.3g} us per step, bus {:.4g} GB/s ({} samples)\n",
        to_string(l.link), l.base_latency_s * 1e6, l.step_latency_s * 1e6, l.bus_bw / 1e9,
        l.samples);
  }
  for (const auto& [label, r] :
       {std::pair<const char*, const std::vector<SampleResidual>*>{"compute", &fit.compute},
        {"comm", &fit.comm}}) {
    if (r->empty()) continue;
    const auto s = stats_of(*r);
    out += fmt::format(
        "  residuals {:<7} {} samples: |error| median {:.1f}%, p90 {:.1f}%, worst {:+.1f}% "
        "({})\n",
        label, r->size(), 100 * s.median, 100 * s.p90, 100 * s.worst->relative_error(),
        s.worst->name);
  }
  for (const auto& n : fit.notes) out += "  note: " + n + "\n";
  return out;
}

nlohmann::ordered_json fit_report_json(const ProfileFit& fit) {
  nlohmann::ordered_json j;
  j["links"] = nlohmann::ordered_json::array();
  for (const auto& l : fit.links) {
    j["links"].push_back({{"link", to_string(l.link)},
                          {"samples", l.samples},
                          {"base_latency_s", l.base_latency_s},
                          {"step_latency_s", l.step_latency_s},
                          {"bus_bw_bytes_per_s", l.bus_bw}});
  }
  for (const auto& [label, r] :
       {std::pair<const char*, const std::vector<SampleResidual>*>{"compute", &fit.compute},
        {"comm", &fit.comm}}) {
    auto& arr = j["residuals"][label] = nlohmann::ordered_json::array();
    for (const auto& x : *r) {
      arr.push_back({{"name", x.name},
                     {"measured_s", x.measured_s},
                     {"predicted_s", x.predicted_s},
                     {"relative_error", x.relative_error()}});
    }
  }
  j["notes"] = fit.notes;
  return j;
}

}  // namespace meshsim
