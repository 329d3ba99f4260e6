#include "tools/memory_report.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace meshsim {
namespace {

// What the totals include beyond the columns, on the peak rank: ZeRO-3 / FSDP's unsharded unit
// buffers, the loss backward's transient, MoE dispatch buffers, the workspace allowance and a
// low precision's quantized weight copies.
std::string memory_notes(const MemoryEstimate& mem) {
  std::string s;
  const StageMemory& peak = mem.stages[static_cast<std::size_t>(mem.peak_rank)];
  if (mem.stages.front().unsharded > 0) {
    s += fmt::format(
        "  (total includes ZeRO-3 / FSDP unsharded unit buffers: {:.2f} GB on pipeline rank {})\n",
        peak.unsharded / 1e9, mem.peak_rank);
  }
  if (peak.loss_working > peak.recompute_working) {
    s += fmt::format(
        "  (total includes the loss backward's fp32 gradients, in place of the recompute column: "
        "{:.2f} GB on pipeline rank {})\n",
        peak.loss_working / 1e9, mem.peak_rank);
  }
  if (peak.moe_buffers > 0) {
    s += fmt::format("  (total includes the MoE dispatch buffers: {:.2f} GB on pipeline rank {})\n",
                     peak.moe_buffers / 1e9, mem.peak_rank);
  }
  if (peak.workspace > 0) {
    s += fmt::format(
        "  (total includes a workspace allowance of {:.2f} GB per rank: CUDA context, cuBLAS and "
        "NCCL workspaces, allocator fragmentation)\n",
        peak.workspace / 1e9);
  }
  if (peak.quantized_weights > 0) {
    s += fmt::format(
        "  (total includes the quantized weight copies: {:.2f} GB on pipeline rank {})\n",
        peak.quantized_weights / 1e9, mem.peak_rank);
  }
  return s;
}

// A pipeline rank's layers per model chunk: "8", "4+4"; more than 4 chunks of one size as
// chunks x layers ("24x1", vp 24 with one layer each).
std::string chunk_layers_text(const std::vector<int>& chunks) {
  const bool uniform =
      std::adjacent_find(chunks.begin(), chunks.end(), std::not_equal_to<>()) == chunks.end();
  if (chunks.size() > 4 && uniform) return fmt::format("{}x{}", chunks.size(), chunks.front());
  return fmt::format("{}", fmt::join(chunks, "+"));
}

}  // namespace

std::string memory_text(const MemoryEstimate& mem) {
  std::string s =
      fmt::format("memory         peak {:.2f} GB on pipeline rank {} of {:.2f} GB: {}\n",
                  mem.peak_bytes / 1e9, mem.peak_rank, mem.capacity_bytes / 1e9,
                  mem.oom ? "OOM (does not fit; timed anyway)" : "fits");
  s += "  pp rank  layers     weights  gradients  optimizer  activations  recompute  cp bufs  "
       "total GB\n";
  for (const auto& st : mem.stages) {
    s += fmt::format(
        "  {:>7}  {:>6}  {:>10.2f}  {:>9.2f}  {:>9.2f}  {:>11.2f}  {:>9.2f}  {:>7.2f}  "
        "{:>8.2f}\n",
        st.rank, chunk_layers_text(st.chunk_layers), st.weights / 1e9, st.gradients / 1e9,
        st.optimizer / 1e9, st.activations / 1e9, st.recompute_working / 1e9, st.cp_buffers / 1e9,
        st.total() / 1e9);
  }
  s += memory_notes(mem);
  if (mem.split.uneven) s += fmt::format("layer split    {}\n", mem.split.rule);
  return s;
}

}  // namespace meshsim
