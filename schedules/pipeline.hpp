#pragma once
// Pipeline-parallel schedules as Programs (design §4.2): each rank's compute actions in the
// schedule's order, a linear layer per model chunk as the stage workload, and the activations and
// gradients exchanged through combined p2p groups at every boundary between consecutive actions
// (send what the last action produced + receive what the next one needs, as one batched group).
#include <cstdint>
#include <vector>

#include "schedules/pipeline_orders.hpp"
#include "sim/dtype.hpp"
#include "sim/program.hpp"

namespace meshsim {

struct PipelineConfig {
  PipelineShape shape;
  // Stage workload for the cost model: one linear layer (hidden x hidden) per chunk over `tokens`
  // tokens per microbatch.
  std::int64_t tokens = 4096;
  std::int64_t hidden = 4096;
  DType dtype = DType::bf16;
  // Explicit times in seconds for one microbatch through one rank's whole share (each of v chunks
  // takes 1/v of it); negative: the cost model decides. Schedules that do not split the backward
  // run B + W as one op.
  double time_f = -1, time_b = -1, time_w = -1;
  double p2p_time = -1;               // seconds per p2p transfer; negative: the network model
  std::int64_t activation_bytes = 0;  // per message; 0: tokens x hidden x dtype bytes
  int gpus_per_node = 8;
  bool single_queue = true;  // CUDA_DEVICE_MAX_CONNECTIONS=1: a send overlaps the next compute
};

// Throws InputError naming the flag for an impossible configuration.
void check_pipeline_config(const PipelineConfig& config);

std::int64_t pipeline_message_bytes(const PipelineConfig& config);

// Most forward chunk-activations a rank holds at once in the schedule's order (a forward adds one;
// its input gradient, alone or inside a full backward, releases it).
std::vector<int> peak_inflight(const PipelineShape& shape);

Program build_pipeline(const PipelineConfig& config);

}  // namespace meshsim
