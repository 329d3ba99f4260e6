#include <doctest/doctest.h>

#include <string>

#include "tools/memory_report.hpp"

using namespace meshsim;

namespace {

// One pipeline rank of 2 layers: 1 GB weights, 2 GB gradients, 3 GB optimizer, 4 GB activations,
// on an 80 GB GPU.
MemoryEstimate one_rank() {
  MemoryEstimate est;
  StageMemory st;
  st.chunk_layers = {2};
  st.weights = 1e9;
  st.gradients = 2e9;
  st.optimizer = 3e9;
  st.activations = 4e9;
  est.stages.push_back(st);
  est.peak_bytes = st.total();
  est.capacity_bytes = 80e9;
  return est;
}

}  // namespace

TEST_CASE("memory report: the peak, one row per pipeline rank, totals 1 + 2 + 3 + 4 = 10 GB") {
  CHECK(memory_text(one_rank()) ==
        "memory         peak 10.00 GB on pipeline rank 0 of 80.00 GB: fits\n"
        "  pp rank  layers     weights  gradients  optimizer  activations  recompute  cp bufs  "
        "total GB\n"
        "        0       2        1.00       2.00       3.00         4.00       0.00     0.00     "
        "10.00\n");
}

TEST_CASE("memory report: layers per model chunk, right-aligned as one column") {
  MemoryEstimate est = one_rank();
  est.stages[0].chunk_layers = {4, 4};  // vp 2
  CHECK(memory_text(est).find("\n        0     4+4        1.00") != std::string::npos);
  est.stages[0].chunk_layers = std::vector<int>(24, 1);  // vp 24, one layer per chunk
  CHECK(memory_text(est).find("\n        0    24x1        1.00") != std::string::npos);
  est.stages[0].chunk_layers = {3, 4, 4, 4, 4, 2};  // uneven: every chunk named
  CHECK(memory_text(est).find("\n        0  3+4+4+4+4+2        1.00") != std::string::npos);
}

TEST_CASE("memory report: the quantized weight copies are named under the table") {
  MemoryEstimate est = one_rank();
  est.stages[0].quantized_weights = 0.5e9;
  est.peak_bytes = est.stages[0].total();  // 10.5 GB
  const std::string text = memory_text(est);
  CHECK(text.find("peak 10.50 GB") != std::string::npos);
  CHECK(text.find("  (total includes the quantized weight copies: 0.50 GB on pipeline rank 0)\n") !=
        std::string::npos);
  CHECK(text.find("unsharded") == std::string::npos);
}
