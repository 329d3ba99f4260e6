// meshsim calibrate --from-trace: fit a hardware profile's efficiency tables, launch overhead and
// link figures to the GPU kernels of a profiled training step (a PyTorch profiler / Kineto Chrome
// trace), keeping the base profile's peaks (validate/calibrate/kineto_samples.hpp).
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/json_fields.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "validate/calibrate/kineto_samples.hpp"

namespace meshsim {
namespace {

std::vector<OptionSpec> trace_options() {
  return {
      {"--from-trace", "FILE", "a PyTorch profiler (Kineto) Chrome trace of a training step"},
      {"--out", "FILE", "the fitted profile (hardware JSON) (required)", OutputKind::file},
      {"--base", "NAME|FILE",
       "profile of the traced GPU: its peaks and memory bandwidth are kept, and what the trace "
       "does not show is its [h100-sxm]"},
      {"--name", "NAME", "name of the fitted profile [trace-calibrated]"},
      {"--json", "", "print the fit report as JSON instead of text"},
  };
}

std::string coverage_text(const KinetoSamples& k) {
  const double matched = k.kernel_seconds - [&] {
    double s = 0;
    for (const auto& u : k.unmatched) s += u.seconds;
    return s;
  }();
  std::string out = fmt::format(
      "trace: {} GPU kernels, {:.3f} ms; {} compute and {} communication samples ({:.1f} % of "
      "the kernel time)\n",
      k.kernels, k.kernel_seconds * 1e3, k.samples.compute.size(), k.samples.comm.size(),
      k.kernel_seconds > 0 ? 100.0 * matched / k.kernel_seconds : 0.0);
  for (const auto& u : k.unmatched) {
    out += fmt::format("  not used: {:>5} {:<13} kernels, {:8.3f} ms: {} (e.g. {})\n", u.kernels,
                       u.category, u.seconds * 1e3, u.reason, u.example.substr(0, 60));
  }
  return out;
}

nlohmann::ordered_json coverage_json(const KinetoSamples& k) {
  nlohmann::ordered_json j;
  j["kernels"] = k.kernels;
  j["kernel_s"] = k.kernel_seconds;
  j["compute_samples"] = k.samples.compute.size();
  j["comm_samples"] = k.samples.comm.size();
  j["not_used"] = nlohmann::ordered_json::array();
  for (const auto& u : k.unmatched) {
    j["not_used"].push_back({{"category", u.category},
                             {"reason", u.reason},
                             {"kernels", u.kernels},
                             {"seconds", u.seconds},
                             {"example", u.example}});
  }
  return j;
}

int fit_from_trace(const Args& args, const CommandContext& ctx) {
  const std::string path = args.get("--from-trace", "");
  const std::string out = args.get("--out", "");
  if (out.empty()) throw InputError("calibrate: --out FILE is required (the fitted profile)");
  const HardwareProfile base = load_hardware(args.get("--base", "h100-sxm"));
  const std::string name = args.get("--name", "trace-calibrated");
  if (name.empty()) throw InputError("--name: expected a non-empty profile name");
  std::istringstream text(read_text_file(path));
  const KinetoTrace trace = read_kineto_trace(text, path);
  const KinetoSamples samples = kineto_calibration_samples(trace, base.gpus_per_node);
  if (samples.samples.compute.empty() && samples.samples.comm.empty()) {
    throw InputError(
        fmt::format("{}: no GPU kernel could be matched to an operator with shapes (profile with "
                    "record_shapes=True; {} kernels seen)",
                    path, samples.kernels));
  }
  ProfileFit fit = fit_profile(base, samples.samples, FitOptions{.keep_peaks = true});
  fit.profile.name = name;
  fit.profile.sources["calibration"] =
      fmt::format("meshsim calibrate --from-trace {} (base {}: peaks and memory bandwidth kept)",
                  path, base.name);
  OutputFiles files;
  files.stage(out, to_json(fit.profile).dump(2) + "\n", "--out");
  files.commit();
  if (args.has("--json")) {
    nlohmann::ordered_json j;
    j["profile"] = out;
    j["trace"] = coverage_json(samples);
    j["fit"] = fit_report_json(fit);
    ctx.out << j.dump(2) << "\n";
    return 0;
  }
  ctx.out << coverage_text(samples) << fit_report_text(fit)
          << fmt::format("profile written to {} (use it with --hardware {})\n", out, out);
  return 0;
}

}  // namespace

int run_calibrate_from_trace(std::span<const std::string> argv, const CommandContext& ctx) {
  const Args args("calibrate", trace_options(), argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Fit a hardware profile to a profiled training step: each GPU kernel of the PyTorch "
        "profiler trace (record_shapes=True) is matched by name to a GEMM, attention, "
        "memory-bound or NCCL op of meshsim and by its launching operator to a shape; the "
        "efficiency tables, launch overhead and link figures are fitted with the base "
        "profile's peaks kept.",
        "meshsim calibrate --from-trace trace.json --base h100-sxm --out h100-fitted.json");
    return 0;
  }
  return fit_from_trace(args, ctx);
}

}  // namespace meshsim
