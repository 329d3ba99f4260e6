#include "sim/step_metrics.hpp"

#include <algorithm>
#include <array>

#include "sim/intervals.hpp"
#include "sim/time.hpp"

namespace meshsim {
namespace {

constexpr std::size_t kDims = std::size(kCommDims);

// Position in kCommDims (+ 1: 0 is compute); other dimensions count with the first.
std::size_t family_of(std::string_view dim) {
  if (dim == "dp-cp" || dim == "edp") dim = "dp";
  if (dim == "etp") dim = "tp";
  for (std::size_t i = 0; i < kDims; ++i) {
    if (kCommDims[i] == dim) return i + 1;
  }
  return 1;
}

std::string crossed_dim(const Mesh& mesh, int a, int b) {
  if (a == b) return "";
  const std::vector<int> ca = mesh.coords(a), cb = mesh.coords(b);
  for (std::size_t d = 0; d < ca.size(); ++d) {
    if (ca[d] != cb[d]) return mesh.dims()[d].name;
  }
  return "";
}

}  // namespace

std::string comm_dim(const Program& program, const Op& op) {
  if (const auto* c = std::get_if<CollectiveCall>(&op.body)) {
    const std::string& dim = program.groups[static_cast<std::size_t>(c->group)].dim;
    if (dim == "dp-cp" || dim == "edp") return "dp";  // expert data parallel reduces over dp
    return dim == "etp" ? "tp" : dim;
  }
  if (const auto* p = std::get_if<P2PCall>(&op.body)) {
    const Transfer* t = !p->sends.empty()   ? &p->sends.front()
                        : !p->recvs.empty() ? &p->recvs.front()
                                            : nullptr;
    if (t != nullptr) return crossed_dim(program.mesh, op.rank, t->peer);
  }
  return "";
}

double TimeBreakdown::exposed_of(std::string_view dim) const {
  const std::size_t f = family_of(dim);
  return f - 1 < exposed.size() ? exposed[f - 1] : 0.0;
}

TimeBreakdown time_breakdown(const Program& p, const Timeline& timeline, Nanos makespan) {
  const auto world = static_cast<std::size_t>(p.world_size());
  // Groups and (for p2p) rank pairs keep their dimension: look each group up once.
  std::vector<std::size_t> group_family(p.groups.size(), 1);
  for (std::size_t g = 0; g < p.groups.size(); ++g) group_family[g] = family_of(p.groups[g].dim);
  std::vector<std::array<std::vector<Interval>, kDims + 1>> iv(world);
  std::vector<bool> active(world, false);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    const OpTiming& t = timeline.ops[i];
    std::size_t f = 0;
    if (const auto* c = std::get_if<CollectiveCall>(&op.body)) {
      f = group_family[static_cast<std::size_t>(c->group)];
    } else if (!op.is_compute()) {
      f = family_of(comm_dim(p, op));
    }
    const Nanos begin = f == 0 || t.comm_start < 0 ? t.start : t.comm_start;
    iv[static_cast<std::size_t>(op.rank)][f].emplace_back(begin, t.end);
    active[static_cast<std::size_t>(op.rank)] = true;
  }
  TimeBreakdown b;
  b.exposed.assign(kDims, 0.0);
  int ranks = 0;
  for (std::size_t r = 0; r < world; ++r) {
    if (!active[r]) continue;
    ++ranks;
    std::vector<Interval> covered = merge_intervals(iv[r][0]);
    b.compute += ns_to_seconds(total_length(covered));
    for (std::size_t f = 1; f <= kDims; ++f) {
      const auto exposed = subtract_intervals(merge_intervals(iv[r][f]), covered);
      b.exposed[f - 1] += ns_to_seconds(total_length(exposed));
      covered.insert(covered.end(), exposed.begin(), exposed.end());
      covered = merge_intervals(std::move(covered));
    }
    b.bubble += ns_to_seconds(makespan - total_length(covered));
  }
  if (ranks > 0) {
    const double n = ranks;
    b.compute /= n;
    b.bubble /= n;
    for (double& x : b.exposed) x /= n;
  }
  return b;
}

StepEvaluation evaluate_step(const SimulationResult& result, const StepWork& work,
                             const HardwareProfile& hardware) {
  StepEvaluation e;
  e.step_time_s = ns_to_seconds(result.metrics.makespan);
  e.tokens_per_s = e.step_time_s > 0 ? work.tokens / e.step_time_s : 0.0;
  const double peak = hardware.peak_flops[static_cast<std::size_t>(DType::bf16)];
  const double per_flop =
      peak > 0 && work.gpus > 0 ? e.tokens_per_s / (static_cast<double>(work.gpus) * peak) : 0.0;
  e.mfu = work.flops_per_token * per_flop;
  e.mfu_full_attention = work.flops_per_token_full_attention * per_flop;
  return e;
}

}  // namespace meshsim
