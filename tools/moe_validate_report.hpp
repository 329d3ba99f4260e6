#pragma once
// What `meshsim validate moe` prints (a table or one JSON object) and the memory it estimates
// per rank before anything is allocated (--max-memory, tools/memory_limit).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/hardware_profile.hpp"
#include "tools/memory_limit.hpp"
#include "tools/moe_validate_compare.hpp"
#include "validate/check/numerics.hpp"
#include "validate/cpu/moe_runner.hpp"

namespace meshsim {

struct MoeRequest {
  MoeLayerConfig layer;
  std::uint64_t seed = 1;
  HardwareProfile hardware;
  std::string dump_dir;
  bool json = false;
  bool compare = false;
  bool check = true;
  MoeFault fault = MoeFault::none;
  MemoryLimit limit;
  RankMemoryEstimate memory;
};

struct MoeReport {
  std::string backend;
  std::string command_line;
  std::optional<NumericsReport> numerics;
  std::optional<MoeLayerComparison> comparison;
  std::vector<double> tokens_per_expert;  // token copies each expert received
  double dropped = 0;                     // copies dropped over the capacity
};

// The busiest rank's bytes (it receives the most token copies under the routing's expected
// shares): its inputs and weight shards, the routed token buffers (permuted, received, gathered
// over ETP, expert-major, up-projections, SwiGLU outputs, combined) and the gradients; on rank 0
// with `gather`, every rank's packed results, the unsharded tensors and the float64 reference.
RankMemoryEstimate estimate_moe_memory(const MoeLayerConfig& c, bool gather);

std::string moe_report_text(const MoeRequest& req, const std::vector<MoeRankResult>& per_rank,
                            const MoeReport& report);
nlohmann::ordered_json moe_report_json(const MoeRequest& req,
                                       const std::vector<MoeRankResult>& per_rank,
                                       const MoeReport& report);

}  // namespace meshsim
