#pragma once
// Pipeline-parallel schedules as Programs (ARCHITECTURE.md §4.2): each rank's compute actions in
// the schedule's order, a linear layer per model chunk as the stage workload, and the activations
// and gradients exchanged through combined p2p groups at every boundary between consecutive actions
// (send what the last action produced + receive what the next one needs, as one batched group).
//
// The stage workload is a small MLP the validate mode can run for real: global stage s (chunk c
// of rank r, s = global_stage(shape, r, c)) is one layer y = gelu(x W_s), W_s [hidden, hidden]
// stored [in, out], over a microbatch's [tokens, hidden] activations. Tensor slots, per rank:
//   "w c<c>"  W of the chunk (dtype), "dw c<c>" its gradient (fp32 main-grad, accumulated over
//             the microbatches);
//   per (microbatch i, chunk c), all [tokens, hidden] in dtype:
//   "x mb<i> c<c>"   the stage input: the model input at global stage 0, else received from the
//                    previous stage (when the previous stage is on the same rank — the V's turn —
//                    the forward reads that stage's y slot instead and no x slot exists);
//   "pre mb<i> c<c>" x W (kept for the backward), "y mb<i> c<c>" gelu(pre), sent to the next stage;
//   "dy mb<i> c<c>"  dL/dy: received from the next stage (or that stage's dx slot on the same
//                    rank); at the last global stage an input filled by the executor: the loss is
//                    L = sum(dout * y) over every microbatch, so dL/dy = dout is given (no loss
//                    op, the simulated schedule is unchanged);
//   "dx mb<i> c<c>"  dL/dx, sent to the previous stage (at stage 0: the model input's gradient);
//   "dh mb<i> c<c>"  gelu'(pre) * dy, only on ranks whose order splits the backward (B writes it,
//                    the deferred W reads it).
// Ops (operand lists as sim/kernel_call.hpp documents them):
//   F:  gemm fn=gelu {x, w} -> {y, pre};
//   BW: linear_bwd fn=gelu {x, w, dy, pre} -> {dx, dw} (dx overwritten, dw accumulated);
//   B:  gemm fn=gelu trans_b {dy, w, pre} -> {dx, dh}: dh = gelu'(pre) * dy, dx = dh W^T;
//   W:  gemm accumulate trans_a {x, dh, dw} -> {dw}: dw += x^T dh.
// Every p2p transfer names the slot it sends from or receives into; its bytes are
// pipeline_message_bytes(), which equals the slot's bytes unless activation_bytes overrides it
// (a simulation-only setting: the executor rejects a transfer larger than its slot).
#include <cstdint>
#include <string>
#include <string_view>
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

// The activation of every stage layer.
inline constexpr ElementwiseFn kPipelineActivation = ElementwiseFn::gelu;

// Slot names (see above): pipeline_slot_name("w", c) is "w c<c>", pipeline_slot_name("x", c, i)
// is "x mb<i> c<c>".
std::string pipeline_slot_name(std::string_view tensor, int chunk, int microbatch = -1);

// Most forward chunk-activations a rank holds at once in the schedule's order (a forward adds one;
// its input gradient, alone or inside a full backward, releases it).
std::vector<int> peak_inflight(const PipelineShape& shape);
// The same over each rank's order (pipeline_orders).
std::vector<int> peak_inflight(const std::vector<std::vector<PipeAction>>& orders);

Program build_pipeline(const PipelineConfig& config);

}  // namespace meshsim
