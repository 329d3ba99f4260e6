#pragma once
// The pieces the pipeline orders share (pipeline_orders.hpp): building one action, telling the
// communication items from the compute ones, and the per-family order builders, one file each:
// pipeline_orders_1f1b.cpp (gpipe, 1F1B, interleaved, ZB-H1, ZB-H2) and pipeline_orders_v.cpp (the
// V-shaped ZB-V and DualPipeV, which carry their own communication).
#include <vector>

#include "schedules/pipeline_orders.hpp"

namespace meshsim::pipeline_detail {

using Order = std::vector<PipeAction>;

inline PipeAction make(PipeWork work, int microbatch, int chunk) {
  PipeAction a;
  a.work = work;
  a.microbatch = microbatch;
  a.chunk = chunk;
  return a;
}

inline bool is_comm(PipeWork w) {
  switch (w) {
    case PipeWork::post_recv_forward:
    case PipeWork::post_send_forward:
    case PipeWork::post_recv_backward:
    case PipeWork::post_send_backward:
    case PipeWork::commit:
    case PipeWork::commit_async:
      return true;
    default:
      return false;
  }
}

// The 1F1B family (pipeline_orders_1f1b.cpp): one rank's order.
Order gpipe_order(int m);
// combined: Megatron's combined 1F1B (PipelineShape::combined_1f1b), one more warm-up forward
// and the steady state's (F, B) pairs as forward_backward actions.
Order one_f_one_b_order(int p, int m, int r, bool combined = false);
Order interleaved_order(int p, int m, int v, int g, int r, bool combined = false);
Order zb_h1_order(int p, int m, int r);
// ZB-H2's compute order of one rank, and every rank's order with its communication (post_* and
// commit_async items, placed across all ranks at once).
Order zb_h2_compute(int p, int m, int r);
std::vector<Order> zb_h2_orders(int p, int m);

// The V-shaped schedules (pipeline_orders_v.cpp). ZB-V places its communication across all ranks
// at once, so it builds every rank's order; DualPipeV builds one rank's.
std::vector<Order> zb_v_orders(int p, int m);
Order dualpipev_order(int p, int m, int r);

}  // namespace meshsim::pipeline_detail
