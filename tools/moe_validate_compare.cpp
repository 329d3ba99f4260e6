#include "tools/moe_validate_compare.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "schedules/training_step.hpp"
#include "sim/run.hpp"

namespace meshsim {

namespace {

// The one-layer MoE model and plan whose MoE layer is `c`.
Program moe_layer_step(const MoeLayerConfig& c, int gpus_per_node) {
  TransformerModel m;
  m.name = "validate-moe";
  m.layers = 1;
  m.hidden = c.hidden;
  m.heads = 1;
  m.kv_heads = 1;
  m.ffn_hidden = c.ffn;
  m.vocab = 128;
  m.seq_len = c.local_tokens();
  m.gated_mlp = true;
  MoeBlock moe;
  moe.experts = c.experts;
  moe.top_k = c.top_k;
  moe.expert_ffn = c.ffn;
  m.moe = moe;
  StepPlan p;
  p.dp = c.ranks();
  p.global_batch = c.ranks();
  p.seq = c.local_tokens();
  p.dtype = c.dtype;
  p.precision = Precision::bf16;
  p.moe.ep = c.ep;
  p.moe.etp = c.etp;
  p.moe.routing = c.routing;
  p.moe.capacity_factor = c.capacity_factor;
  return build_training_step(m, p, gpus_per_node);
}

constexpr Nanos kNone = std::numeric_limits<Nanos>::max();

// The layer as the run routed it: the router's choices summed over the ranks, before capacity
// drops, as a table of tokens per expert (the capacity then drops copies in the simulation as the
// run did). The configured routing is only what the run's router bias was drawn from.
MoeLayerConfig as_routed(MoeLayerConfig c, const std::vector<MoeRankResult>& measured) {
  std::vector<double> routed(static_cast<std::size_t>(c.experts), 0.0);
  double total = 0;
  for (const MoeRankResult& r : measured) {
    if (r.routed_per_expert.size() != routed.size()) return c;
    for (std::size_t e = 0; e < routed.size(); ++e) {
      routed[e] += static_cast<double>(r.routed_per_expert[e]);
      total += static_cast<double>(r.routed_per_expert[e]);
    }
  }
  if (total <= 0) return c;
  c.routing = Routing{Routing::Kind::table, 0, std::move(routed), "the run's routing"};
  return c;
}

double seconds(std::int64_t ns) {
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace

std::string moe_phase_of_op(const std::string& op_name, bool backward) {
  static const char* const kSame[] = {"router",
                                      "permute",
                                      "dispatch all-to-all",
                                      "dispatch etp all-gather",
                                      "combine etp reduce-scatter",
                                      "combine all-to-all",
                                      "unpermute",
                                      "unpermute bwd",
                                      "combine bwd all-to-all",
                                      "combine bwd etp all-gather",
                                      "dispatch bwd etp reduce-scatter",
                                      "dispatch bwd all-to-all",
                                      "permute bwd",
                                      "router topk bwd",
                                      "router dgrad",
                                      "router wgrad"};
  for (const char* name : kSame) {
    if (op_name == name) return op_name;
  }
  if (op_name == "router topk" || op_name == "aux loss") return "router";
  if (op_name.starts_with("expert ")) return backward ? "experts bwd" : "experts";
  return "";
}

std::vector<std::string> simulated_moe_phases(const MoeLayerConfig& config, int gpus_per_node) {
  const Program program = moe_layer_step(config, gpus_per_node);
  std::vector<std::string> out;
  for (const Op& op : program.ops) {
    if (op.rank != 0) continue;
    const bool bwd = op.labels.phase == Phase::bwd || op.labels.phase == Phase::wgrad;
    const std::string phase = moe_phase_of_op(op.name.str(), bwd);
    if (!phase.empty() && (out.empty() || out.back() != phase)) out.push_back(phase);
  }
  return out;
}

MoeLayerComparison compare_moe_layer(const MoeLayerConfig& config, const HardwareProfile& hw,
                                     const std::vector<MoeRankResult>& measured) {
  const SimulationResult sim =
      run_simulation(moe_layer_step(as_routed(config, measured), hw.gpus_per_node), hw);
  const Program& program = sim.program;
  const int ranks = config.ranks();
  // Per rank: busy time per phase, and the forward / backward windows of the MoE ops.
  std::vector<std::map<std::string, Nanos>> busy(static_cast<std::size_t>(ranks));
  std::vector<std::array<Nanos, 4>> window(static_cast<std::size_t>(ranks), {kNone, 0, kNone, 0});
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const bool bwd = op.labels.phase == Phase::bwd || op.labels.phase == Phase::wgrad;
    const std::string phase = moe_phase_of_op(op.name.str(), bwd);
    if (phase.empty()) continue;
    const OpTiming& t = sim.timeline.ops[i];
    const auto r = static_cast<std::size_t>(op.rank);
    busy[r][phase] += t.end - t.start;
    auto& w = window[r];
    const std::size_t k = bwd ? 2 : 0;
    w[k] = std::min(w[k], t.start);
    w[k + 1] = std::max(w[k + 1], t.end);
  }
  MoeLayerComparison out;
  out.hardware = hw.name;
  for (const auto& w : window) {
    Nanos total = 0;
    for (std::size_t k = 0; k < 4; k += 2) total += w[k + 1] > w[k] ? w[k + 1] - w[k] : 0;
    out.predicted_s = std::max(out.predicted_s, seconds(total));
  }
  for (const MoeRankResult& r : measured) {
    if (r.phases.empty()) continue;
    out.measured_s =
        std::max(out.measured_s, seconds(r.phases.back().end_ns - r.phases.front().start_ns));
  }
  for (std::size_t p = 0; p < measured.front().phases.size(); ++p) {
    MoePhaseComparison c;
    c.phase = measured.front().phases[p].name;
    for (const MoeRankResult& r : measured) {
      c.measured_s = std::max(c.measured_s, seconds(r.phases[p].end_ns - r.phases[p].start_ns));
    }
    for (const auto& b : busy) {
      const auto it = b.find(c.phase);
      if (it != b.end()) c.predicted_s = std::max(c.predicted_s, seconds(it->second));
    }
    out.phases.push_back(c);
  }
  return out;
}

std::string moe_comparison_text(const MoeLayerComparison& c) {
  std::string out = fmt::format(
      "predicted vs measured (hardware profile {}): MoE layer predicted {:.3f} ms, measured "
      "{:.3f} ms\n",
      c.hardware, c.predicted_s * 1e3, c.measured_s * 1e3);
  out += fmt::format("  {:<32} {:>14} {:>13}\n", "phase", "predicted_ms", "measured_ms");
  for (const auto& p : c.phases) {
    out += fmt::format("  {:<32} {:>14.4f} {:>13.4f}\n", p.phase, p.predicted_s * 1e3,
                       p.measured_s * 1e3);
  }
  return out;
}

nlohmann::ordered_json moe_comparison_json(const MoeLayerComparison& c) {
  nlohmann::ordered_json j;
  j["hardware"] = c.hardware;
  j["predicted_makespan_s"] = c.predicted_s;
  j["measured_makespan_s"] = c.measured_s;
  auto phases = nlohmann::ordered_json::array();
  for (const auto& p : c.phases) {
    phases.push_back(
        {{"phase", p.phase}, {"predicted_s", p.predicted_s}, {"measured_s", p.measured_s}});
  }
  j["phases"] = phases;
  return j;
}

}  // namespace meshsim
