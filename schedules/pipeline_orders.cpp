#include "schedules/pipeline_orders.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

#include <fmt/format.h>

#include "schedules/pipeline_orders_steps.hpp"
#include "sim/error.hpp"
#include "sim/size_math.hpp"

// Where each order comes from (read for semantics; the code is ours: the 1F1B family in
// pipeline_orders_1f1b.cpp, the V schedules in pipeline_orders_v.cpp):
// - gpipe, 1f1b: the textbook schedules (ARCHITECTURE.md §4.2); 1F1B as in Megatron-LM's
//   forward_backward_pipelining_without_interleaving: warm-up min(p-r-1, m) forwards, then
//   one-forward-one-backward, then the cool-down backwards.
// - interleaved: Megatron-LM's forward_backward_pipelining_with_interleaving
//   (megatron/core/pipeline_parallel/schedules.py: get_schedule_table, get_model_chunk_id,
//   get_pp_rank_microbatches and the group-size checks).
// - zb-h1: the handcrafted ZB-H1 of Qi et al., "Zero Bubble Pipeline Parallelism" (2023): 1F1B
//   with the backward split into B and W, rank r letting r W's wait (PaddlePaddle's ZBH1 job
//   list has the same shape), the waiting W's taken first-in first-out as the zero-bubble code's
//   WeightGradStore queue does, the rest drained at the end.
// - zb-h2: the handcrafted ZB-H2 of the same paper (Sec. 3, Fig. 3 bottom; ICLR 2024): up to
//   2p-1 forwards in flight on rank 0 (peak memory (2p-1) M_B, about twice 1F1B's), the extra
//   warm-up forwards filling the bubble before the first B and the W's reordered into the tail,
//   a parallelogram with per-rank bubble (p-1)(T_F+T_B-2T_W), zero at T_F = T_B = T_W (the
//   zero-bubble repository's README: "ZB2P" bubble rate 0, activation memory 2x 1F1B's). The
//   order is derived from those facts (pipeline_orders_1f1b.cpp); W's again first-in first-out;
//   its communication placed round by round as for ZB-V (RoundComm there).
// - zb-v: the handcrafted ZB-V order of PyTorch's torch.distributed.pipelining
//   ScheduleZBVZeroBubble (same paper, section 6); its communication after the same package's
//   runtime (_PipelineScheduleRuntime, _add_send_recv), see ZbVBuilder
//   (pipeline_orders_v.cpp).
// - dualpipev: the eight steps of DeepSeek's DualPipeV (dualpipe/dualpipev.py, DualPipeV.step),
//   with its communication where that code queues and commits it (_recv_forward, _send_forward,
//   _recv_backward, _send_backward, _commit_and_wait_comm).
// The two V schedules and ZB-H2 carry their communication as post_* and commit items
// (pipeline_orders.hpp); the others leave it to the builder's exchange at every step boundary.

namespace meshsim {
namespace {

using pipeline_detail::Order;

constexpr std::array<std::string_view, 7> kScheduleNames = {"gpipe", "1f1b", "interleaved", "zb-h1",
                                                            "zb-h2", "zb-v", "dualpipev"};

// Upper bound on stages x microbatches x chunks: the orders hold a few entries per action.
constexpr long long kMaxWork = 1LL << 24;

int group_size_of(const PipelineShape& shape) {
  return shape.group_size == 0 ? shape.stages : shape.group_size;
}

Order rank_order(const PipelineShape& shape, int r) {
  const int p = shape.stages, m = shape.microbatches;
  switch (shape.schedule) {
    case PipelineSchedule::gpipe:
      return pipeline_detail::gpipe_order(m);
    case PipelineSchedule::one_f_one_b:
      return pipeline_detail::one_f_one_b_order(p, m, r, shape.combined_1f1b);
    case PipelineSchedule::interleaved:
      return pipeline_detail::interleaved_order(p, m, shape.chunks, group_size_of(shape), r,
                                                shape.combined_1f1b);
    case PipelineSchedule::zb_h1:
      return pipeline_detail::zb_h1_order(p, m, r);
    case PipelineSchedule::zb_h2:
      return pipeline_detail::zb_h2_orders(p, m)[static_cast<std::size_t>(r)];
    case PipelineSchedule::zb_v:
      return pipeline_detail::zb_v_orders(p, m)[static_cast<std::size_t>(r)];
    case PipelineSchedule::dualpipev:
      return pipeline_detail::dualpipev_order(p, m, r);
  }
  MESHSIM_CHECK(false, "unknown pipeline schedule");
  return {};
}

bool is_v_shaped(PipelineSchedule s) {
  return s == PipelineSchedule::zb_v || s == PipelineSchedule::dualpipev;
}

void check_interleaved(const PipelineShape& shape) {
  const int p = shape.stages, m = shape.microbatches, v = shape.chunks;
  if (v < 2) {
    throw InputError(fmt::format(
        "`chunks` must be at least 2 for `schedule` interleaved (got {}): with one chunk per rank "
        "there is nothing to interleave (that is `schedule` 1f1b)",
        v));
  }
  if (p < 2) {
    throw InputError(fmt::format(
        "`stages` must be at least 2 for `schedule` interleaved (got {}): virtual chunks are "
        "interleaved across pipeline ranks, so there must be a pipeline (Megatron rejects a "
        "virtual pipeline without pipeline parallelism)",
        p));
  }
  if (shape.group_size < 0) {
    throw InputError(
        fmt::format("`group_size` must be at least 1, or 0 for the default (`stages`) (got {})",
                    shape.group_size));
  }
  if (shape.group_size == 0 && m < p) {
    throw InputError(fmt::format(
        "`microbatches` {} must be at least `stages` {} for `schedule` interleaved: Megatron's "
        "rule "
        "p <= g <= m with the default `group_size` g = p (a group cannot hold more microbatches "
        "than there are)",
        m, p));
  }
  const int g = group_size_of(shape);
  if (g < p || g > m) {
    throw InputError(fmt::format(
        "`group_size` {} must lie in [`stages` {}, `microbatches` {}] for `schedule` interleaved: "
        "Megatron's rule p <= g <= m (a group smaller than the pipeline reaches its next chunk "
        "before that chunk's inputs have come back around the ranks; a group cannot hold more "
        "microbatches than there are)",
        g, p, m));
  }
  const int last = m % g;
  if (last != 0 && last < p) {
    // Name the group size only when it was given; by default it is the stage count.
    const std::string group = shape.group_size == 0
                                  ? fmt::format("the default group of `stages` {}", p)
                                  : fmt::format("`group_size` {} and `stages` {}", g, p);
    throw InputError(fmt::format(
        "`microbatches` {} leaves a last group of {} with {} for `schedule` interleaved: "
        "Megatron's rule m mod g = 0 or m mod g >= p (a last group smaller than the pipeline "
        "stalls on inputs still travelling through the ranks, a dependency bubble)",
        m, last, group));
  }
}

}  // namespace

std::string_view to_string(PipelineSchedule s) {
  return kScheduleNames[static_cast<std::size_t>(s)];
}

std::optional<PipelineSchedule> parse_pipeline_schedule(std::string_view s) {
  for (std::size_t i = 0; i < kScheduleNames.size(); ++i) {
    if (kScheduleNames[i] == s) return static_cast<PipelineSchedule>(i);
  }
  return std::nullopt;
}

int chunks_of(const PipelineShape& shape) {
  if (shape.schedule == PipelineSchedule::interleaved) return shape.chunks;
  if (is_v_shaped(shape.schedule)) return 2;
  return 1;
}

int global_stage(const PipelineShape& shape, int rank, int chunk) {
  MESHSIM_CHECK(rank >= 0 && rank < shape.stages, "global_stage: rank out of range");
  MESHSIM_CHECK(chunk >= 0 && chunk < chunks_of(shape), "global_stage: chunk out of range");
  if (shape.schedule == PipelineSchedule::interleaved) return chunk * shape.stages + rank;
  if (is_v_shaped(shape.schedule)) return chunk == 0 ? rank : 2 * shape.stages - 1 - rank;
  return rank;
}

void check_pipeline_shape(const PipelineShape& shape) {
  const std::string_view name = to_string(shape.schedule);
  if (shape.stages < 1) {
    throw InputError(fmt::format("`stages` must be at least 1 (got {})", shape.stages));
  }
  if (shape.microbatches < 1) {
    throw InputError(fmt::format("`microbatches` must be at least 1 (got {})", shape.microbatches));
  }
  if (shape.chunks < 1) {
    throw InputError(fmt::format("`chunks` must be at least 1 (got {})", shape.chunks));
  }
  if (shape.schedule != PipelineSchedule::interleaved && shape.group_size != 0) {
    throw InputError(fmt::format(
        "`group_size` {} does not apply to `schedule` {}: microbatch groups belong to the "
        "interleaved schedule",
        shape.group_size, name));
  }
  if (is_v_shaped(shape.schedule)) {
    // chunks == 1 is the unset default; the V schedules always place two chunks per rank.
    if (shape.chunks > 2) {
      throw InputError(fmt::format(
          "`chunks` {} does not fit `schedule` {}: a V schedule places exactly 2 chunks on each "
          "rank (stages r and 2p-1-r)",
          shape.chunks, name));
    }
  } else if (shape.schedule != PipelineSchedule::interleaved && shape.chunks != 1) {
    throw InputError(fmt::format(
        "`chunks` {} does not fit `schedule` {}: it places one chunk per rank (use `schedule` "
        "interleaved for virtual chunks)",
        shape.chunks, name));
  }
  if (product_exceeds({shape.stages, shape.microbatches, std::max(shape.chunks, 2)}, kMaxWork)) {
    throw InputError(fmt::format(
        "`stages` {} x `microbatches` {} x chunks is too large: at most {} (stage, microbatch, "
        "chunk) actions are supported",
        shape.stages, shape.microbatches, kMaxWork));
  }
  if (shape.combined_1f1b && shape.schedule != PipelineSchedule::interleaved &&
      !(shape.schedule == PipelineSchedule::one_f_one_b && shape.stages == 1)) {
    throw InputError(fmt::format(
        "`combined_1f1b` needs `schedule` interleaved, or 1f1b with `stages` 1 (got {} with {} "
        "stages): Megatron-Core pairs forwards and backwards only in those schedules and asks "
        "for a virtual pipeline when there is a pipeline",
        name, shape.stages));
  }
  switch (shape.schedule) {
    case PipelineSchedule::interleaved:
      check_interleaved(shape);
      break;
    case PipelineSchedule::dualpipev:
      if (shape.microbatches < 2 * shape.stages) {
        throw InputError(fmt::format(
            "`microbatches` {} is too few for `schedule` dualpipev with `stages` {}: DualPipeV "
            "needs m >= 2p = {} (its eight steps fill both arms of the V before the overlapped "
            "steady state)",
            shape.microbatches, shape.stages, 2 * shape.stages));
      }
      break;
    case PipelineSchedule::gpipe:
    case PipelineSchedule::one_f_one_b:
    case PipelineSchedule::zb_h1:  // valid for any m; its closed-form makespan assumes m >= p
    case PipelineSchedule::zb_h2:  // valid for any m; its closed forms assume m >= 2p-1
    case PipelineSchedule::zb_v:   // valid for any m; its closed-form makespan assumes m >= 2p-1
      break;
  }
}

std::vector<std::vector<PipeAction>> pipeline_orders(const PipelineShape& shape) {
  check_pipeline_shape(shape);
  std::vector<std::vector<PipeAction>> orders;
  orders.reserve(static_cast<std::size_t>(shape.stages));
  if (shape.schedule == PipelineSchedule::zb_v) {
    return pipeline_detail::zb_v_orders(shape.stages, shape.microbatches);
  }
  if (shape.schedule == PipelineSchedule::zb_h2) {
    return pipeline_detail::zb_h2_orders(shape.stages, shape.microbatches);
  }
  for (int r = 0; r < shape.stages; ++r) orders.push_back(rank_order(shape, r));
  return orders;
}

int warmup_forwards(const PipelineShape& shape, int rank) {
  check_pipeline_shape(shape);
  if (rank < 0 || rank >= shape.stages) {
    throw InputError(
        fmt::format("pipeline rank {} is outside [0, `stages` {})", rank, shape.stages));
  }
  // The forwards issued before the rank's first backward, input_grad or forward_backward. For
  // the 1F1B family this is the warm-up phase plus the forward that opens the steady state, e.g.
  // min(p-r, m) for 1F1B (Megatron's num_warmup_microbatches is one less when m > p-r-1).
  int count = 0;
  for (const auto& a : rank_order(shape, rank)) {
    if (pipeline_detail::is_comm(a.work)) continue;
    if (a.work != PipeWork::forward) break;
    ++count;
  }
  return count;
}

}  // namespace meshsim
