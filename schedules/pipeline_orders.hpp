#pragma once
// The per-rank order of compute actions of each pipeline schedule (ARCHITECTURE.md §4.2): which
// forward, input-gradient (B), weight-gradient (W) or combined backward each rank runs, microbatch
// by microbatch and chunk by chunk, in the order the training frameworks issue them. The Program
// builder (pipeline.hpp) turns these orders into ops and the p2p exchanges between them.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace meshsim {

enum class PipelineSchedule : std::uint8_t {
  gpipe,
  one_f_one_b,
  interleaved,
  zb_h1,
  zb_h2,
  zb_v,
  dualpipev
};
// "gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v", "dualpipev"
std::string_view to_string(PipelineSchedule s);
std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view s);

enum class PipeWork : std::uint8_t {
  forward,           // F of one (microbatch, chunk)
  backward,          // B + W together (schedules that do not split the backward)
  input_grad,        // B: the input gradient only; sends the gradient on
  weight_grad,       // W: the weight gradient, deferred
  forward_backward,  // an overlapped pair: F of (microbatch, chunk) with the backward of
                     // (pair_microbatch, pair_chunk); pair_split says whether that backward is B
                     // only (its W comes later) or B + W
  // Explicit communication, for schedules whose reference posts its own p2p (DualPipeV, ZB-V).
  // A rank's order either has none of these (the builder then exchanges at every step boundary,
  // Megatron-style) or places all of them itself: post_* queue one transfer for the (microbatch,
  // chunk) named — the input activation of its forward, the output activation of its forward,
  // the gradient its backward needs, the gradient its backward produces — and commit issues
  // everything queued since the last commit as one batched exchange per peer and waits for it
  // (dualpipev.py's _commit_and_wait_comm). Transfers to the same rank (the V's turn) are skipped.
  post_recv_forward,
  post_send_forward,
  post_recv_backward,
  post_send_backward,
  commit,
  // Like commit, but the host does not wait: each later compute waits only for the exchange that
  // delivered its own input, and sends are never waited for (PyTorch's pipelining runtime, ZB-V).
  commit_async,
};

struct PipeAction {
  PipeWork work = PipeWork::forward;
  int microbatch = 0;
  int chunk = 0;  // local chunk index on the rank (0 .. chunks-1)
  int pair_microbatch = -1;
  int pair_chunk = -1;
  bool pair_split = false;
  bool operator==(const PipeAction&) const = default;
};

struct PipelineShape {
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int stages = 4;        // p: pipeline ranks
  int microbatches = 8;  // m
  int chunks = 1;        // v: model chunks per rank (interleaved: any >= 1; V schedules: 2)
  int group_size = 0;    // g: interleaved microbatch group size; 0 = p
  // Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm; pipeline_parallel/
  // combined_1f1b.py): one more warm-up forward (schedules.py get_pp_rank_microbatches: "one
  // extra micro-batch forward step before the 1f1b stages ... to ensure the forward and backward
  // computations are independent"), then every steady-state forward and the backward of the same
  // step as one forward_backward action. 1f1b without a pipeline (stages 1: F0, then (F i+1,
  // B i) pairs, then the last B) or interleaved; Megatron asks for a virtual pipeline when pp > 1.
  bool combined_1f1b = false;
};

// Chunks per rank the schedule uses: shape.chunks for interleaved, 2 for zb-v and dualpipev, 1
// otherwise.
int chunks_of(const PipelineShape& shape);

// Global pipeline stage of `chunk` on `rank`: interleaved c*p + r; V-shaped (zb-v, dualpipev)
// r for chunk 0 and 2p-1-r for chunk 1; otherwise r.
int global_stage(const PipelineShape& shape, int rank, int chunk);

// Throws InputError with the rule and its reason (e.g. Megatron's interleaving rules) when the
// shape is invalid for its schedule: m < p where needed, v < 2 for interleaved, g outside [p, m],
// m mod g neither 0 nor >= p, dualpipev with m < 2p, ...
void check_pipeline_shape(const PipelineShape& shape);

// One action list per rank, in issue order. Every rank runs each (microbatch, chunk) forward once
// and its backward once (as backward, or as input_grad + weight_grad), possibly inside
// forward_backward pairs.
std::vector<std::vector<PipeAction>> pipeline_orders(const PipelineShape& shape);

// Warm-up forwards before the first backward on each rank (for the tests and the report).
int warmup_forwards(const PipelineShape& shape, int rank);

}  // namespace meshsim
