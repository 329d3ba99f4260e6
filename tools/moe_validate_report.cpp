#include "tools/moe_validate_report.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "validate/check/measured_report.hpp"

namespace meshsim {

namespace {

double seconds(std::int64_t ns) {
  return static_cast<double>(ns) * 1e-9;
}

// The layer time on each rank: its first phase's start to its last phase's end.
double layer_time(const MoeRankResult& r) {
  return r.phases.empty() ? 0.0 : seconds(r.phases.back().end_ns - r.phases.front().start_ns);
}

double max_phase(const std::vector<MoeRankResult>& per_rank, std::size_t p) {
  double out = 0;
  for (const auto& r : per_rank) {
    out = std::max(out, seconds(r.phases[p].end_ns - r.phases[p].start_ns));
  }
  return out;
}

double imbalance(const std::vector<double>& per_expert, int ep) {
  const double total = std::accumulate(per_expert.begin(), per_expert.end(), 0.0);
  if (total <= 0) return 1.0;
  const std::size_t local = per_expert.size() / static_cast<std::size_t>(ep);
  double busiest = 0;
  for (std::size_t q = 0; q < static_cast<std::size_t>(ep); ++q) {
    busiest = std::max(
        busiest,
        std::accumulate(per_expert.begin() + static_cast<std::ptrdiff_t>(q * local),
                        per_expert.begin() + static_cast<std::ptrdiff_t>((q + 1) * local), 0.0));
  }
  return busiest / (total / ep);
}

std::string describe_layer(const MoeLayerConfig& c) {
  return fmt::format(
      "MoE layer: ep {} x etp {} = {} rank{}, {} experts top-{}, {} tokens, hidden {}, expert "
      "ffn {} (SwiGLU), routing {}{}, {}, {}",
      c.ep, c.etp, c.ranks(), c.ranks() == 1 ? "" : "s", c.experts, c.top_k, c.tokens, c.hidden,
      c.ffn, c.routing.origin,
      c.capacity_factor > 0 ? fmt::format(", capacity factor {}", c.capacity_factor) : "",
      to_string(c.dtype), c.backward ? "fwd+bwd" : "fwd");
}

constexpr const char* kReference = "the float64 MoE layer on one rank";

}  // namespace

RankMemoryEstimate estimate_moe_memory(const MoeLayerConfig& c, bool gather) {
  const ExpertLoad load = expected_expert_load(c);
  const double received = *std::max_element(load.per_rank.begin(), load.per_rank.end());
  const auto gathered = static_cast<std::int64_t>(std::ceil(received)) * c.etp;
  const std::int64_t e = dtype_bytes(c.dtype), h = c.hidden, fl = c.local_ffn();
  const std::int64_t copies = c.local_tokens() * c.top_k;
  const std::int64_t weights = c.experts * h + c.local_experts() * 3 * fl * h;
  RankMemoryEstimate m;
  // Inputs, outputs, weights and their gradients.
  m.slots = e * (4 * c.local_tokens() * h + 2 * weights);
  // Permuted, combined and their gradients; received; gathered, expert-major and their gradients,
  // up-projections (2f/etp) and SwiGLU outputs (f/etp) with their gradients.
  m.comm = e * (4 * copies * h + 2 * gathered * h + 6 * gathered * h + gathered * 6 * fl);
  if (gather) {
    const std::int64_t full = 4 * c.tokens * h + 2 * (c.experts * h + c.experts * 3 * c.ffn * h);
    m.gather = 8 * (c.ranks() * (2 * c.local_tokens() * h + c.experts * h + weights) + 2 * full);
  }
  return m;
}

std::string moe_report_text(const MoeRequest& req, const std::vector<MoeRankResult>& per_rank,
                            const MoeReport& report) {
  const MoeLayerConfig& c = req.layer;
  std::string out = describe_layer(c) + "\n";
  out += fmt::format("backend: {}; kernels/cpu (OpenBLAS); seed {}\n", report.backend, req.seed);
  if (req.fault != MoeFault::none) out += "injected fault: combine-weights\n";
  std::string counts;
  for (const double n : report.tokens_per_expert) counts += fmt::format(" {:.0f}", n);
  out += fmt::format("token copies per expert:{} (busiest EP rank / mean {:.3f})", counts,
                     imbalance(report.tokens_per_expert, c.ep));
  out += c.capacity_factor > 0 ? fmt::format("; capacity {} per expert and rank, {:.0f} dropped\n",
                                             expert_capacity(c), report.dropped)
                               : "\n";
  out += fmt::format("  {:<32} {:>12}\n", "phase", "max_rank_ms");
  for (std::size_t p = 0; p < per_rank.front().phases.size(); ++p) {
    out += fmt::format("  {:<32} {:>12.4f}\n", per_rank.front().phases[p].name,
                       max_phase(per_rank, p) * 1e3);
  }
  double layer = 0;
  for (const auto& r : per_rank) layer = std::max(layer, layer_time(r));
  out += fmt::format("layer time {:.3f} ms (the slowest rank, first phase to last)\n", layer * 1e3);
  if (report.comparison) out += moe_comparison_text(*report.comparison);
  if (report.numerics) {
    out += numerics_text(*report.numerics, kReference);
  } else {
    out += "numerics: not checked (--no-check)\n";
  }
  if (!req.dump_dir.empty()) out += fmt::format("tensors written to {}/\n", req.dump_dir);
  return out;
}

nlohmann::ordered_json moe_report_json(const MoeRequest& req,
                                       const std::vector<MoeRankResult>& per_rank,
                                       const MoeReport& report) {
  const MoeLayerConfig& c = req.layer;
  nlohmann::ordered_json j;
  j["schema_version"] = kValidateReportSchemaVersion;
  j["meshsim_version"] = MESHSIM_VERSION;
  j["source"] = "measured";
  j["command"] = report.command_line;
  j["layer"] = {{"ep", c.ep},
                {"etp", c.etp},
                {"experts", c.experts},
                {"top_k", c.top_k},
                {"tokens", c.tokens},
                {"hidden", c.hidden},
                {"ffn_hidden", c.ffn},
                {"routing", c.routing.origin},
                {"moe_capacity_factor", c.capacity_factor},
                {"dtype", to_string(c.dtype)},
                {"pass", c.backward ? "fwd+bwd" : "fwd"}};
  j["backend"] = report.backend;
  j["seed"] = req.seed;
  j["tokens_per_expert"] = report.tokens_per_expert;
  j["imbalance"] = imbalance(report.tokens_per_expert, c.ep);
  j["dropped"] = report.dropped;
  double layer = 0;
  for (const auto& r : per_rank) layer = std::max(layer, layer_time(r));
  j["makespan_s"] = layer;
  auto phases = nlohmann::ordered_json::array();
  for (std::size_t p = 0; p < per_rank.front().phases.size(); ++p) {
    phases.push_back(
        {{"phase", per_rank.front().phases[p].name}, {"max_rank_s", max_phase(per_rank, p)}});
  }
  j["phases"] = phases;
  if (report.comparison) {
    const nlohmann::ordered_json cmp = moe_comparison_json(*report.comparison);
    j["predicted_makespan_s"] = cmp["predicted_makespan_s"];
    j["comparison"] = cmp;
  }
  j["numerics"] = report.numerics ? numerics_json(*report.numerics, kReference)
                                  : nlohmann::ordered_json(nullptr);
  j["memory_estimate_bytes"] = req.memory.total();
  j["memory_limit_bytes"] = req.limit.bytes;
  return j;
}

}  // namespace meshsim
