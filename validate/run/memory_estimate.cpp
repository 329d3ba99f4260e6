#include "validate/run/memory_estimate.hpp"

#include <algorithm>
#include <iterator>
#include <vector>

#include <fmt/format.h>

#include "sim/kernel_call.hpp"
#include "validate/run/comm_args.hpp"
#include "validate/tensors/tensor_store.hpp"

namespace meshsim {
namespace {

constexpr std::int64_t kAlignment = 64;  // TensorStore's buffer alignment

std::int64_t aligned(std::int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

std::int64_t slot_total(const Program& program, int rank) {
  std::int64_t n = 0;
  for (const TensorSlot& s : program.slots) {
    if (s.rank == rank) n += aligned(TensorStore::slot_bytes(s));
  }
  return n;
}

// Per stream the largest slot-less kernel call (its operands are scratch, reused per thread).
std::int64_t kernel_scratch(const Program& program, int rank) {
  std::vector<double> per_stream(program.streams.size(), 0.0);
  for (const Op& op : program.ops) {
    const auto* call = std::get_if<KernelCall>(&op.body);
    if (op.rank != rank || call == nullptr) continue;
    if (!call->inputs.empty() || !call->outputs.empty()) continue;
    double& s = per_stream[static_cast<std::size_t>(op.stream)];
    s = std::max(s, kernel_bytes(*call));
  }
  double n = 0;
  for (double s : per_stream) n += s;
  return static_cast<std::int64_t>(n);
}

// Rank 0's share of gathering: every mapped slot as received, the global tensors as double and
// the float64 reference (counted as large as the global tensors).
std::int64_t gather_total(const Program& program, const TensorLayout& layout) {
  std::int64_t received = 0;
  for (const TensorSlot& s : program.slots) {
    if (layout.shard(s.rank, s.name) != nullptr) received += TensorStore::slot_bytes(s);
  }
  std::int64_t global = 0;
  for (const GlobalTensor& t : layout.tensors()) {
    std::int64_t n = static_cast<std::int64_t>(sizeof(double));
    for (std::int64_t d : t.shape) n *= d;
    global += n;
  }
  return received + 2 * global;
}

}  // namespace

RankMemoryEstimate estimate_rank_memory(const Program& program, const CommPlan& plan,
                                        const TensorLayout& layout, bool gather_tensors, int rank) {
  RankMemoryEstimate e;
  e.rank = rank;
  e.slots = slot_total(program, rank);
  for (std::int64_t b : comm_scratch_bytes(program, plan, rank)) e.comm += b;
  e.kernels = kernel_scratch(program, rank);
  if (gather_tensors && rank == 0) e.gather = gather_total(program, layout);
  return e;
}

RankMemoryEstimate estimate_peak_memory(const Program& program, const CommPlan& plan,
                                        const TensorLayout& layout, bool gather_tensors) {
  RankMemoryEstimate peak;
  for (int r = 0; r < program.world_size(); ++r) {
    const RankMemoryEstimate e = estimate_rank_memory(program, plan, layout, gather_tensors, r);
    if (r == 0 || e.total() > peak.total()) peak = e;
  }
  return peak;
}

std::string format_bytes(std::int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1000.0 && u + 1 < std::size(kUnits)) {
    v /= 1000.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  const int decimals = v < 10 ? 2 : v < 100 ? 1 : 0;
  return fmt::format("{:.{}f} {}", v, decimals, kUnits[u]);
}

}  // namespace meshsim
