#include "schedules/training_step.hpp"

#include "schedules/step_builder.hpp"
#include "sim/error.hpp"

// What build_training_step emits (ARCHITECTURE.md §4.4), per mesh rank (Megatron order: tp fastest,
// then cp, then dp, pp outermost), on the streams compute, tp_comm, cp_comm, dp_comm and one
// "pp_comm a-b" stream per pair of pipeline ranks (a < b, pipeline indices):
//
// Notation: t = tp, T = mbs x seq / cp tokens per rank and microbatch, T_s = T / t under sequence
// parallelism (SP) else T, h hidden, h_kv = kv_heads x head_dim, f ffn_hidden, V vocab, e bytes of
// the plan's dtype. GEMMs are GemmShape{m, n, k}: C[m, n] = A[m, k] B[k, n].
//
// Layer forward:  norm (elementwise, T_s h) | SP: all-gather x (T h e) | QKV gemm {T, (h +
//   2 h_kv)/t, h} | attention: cp = 1 one causal attention_fwd block over the local sequence with
//   heads/t and kv_heads/t; cp > 1 the CP ring of ring_attention.cpp (same blocks, K/V rotation by
//   p2p exchange / one all-gather / permutes on cp_comm overlapping the blocks, lse merges) |
//   projection gemm {T, h, h/t} | SP: reduce-scatter, else all-reduce of y (T h e) | norm |
//   SP: all-gather | MLP up gemm {T, (2f gated | f)/t, h} | activation (elementwise, T f/t x (2
//   gated | 1)) | MLP down gemm {T, h, f/t} | SP: reduce-scatter, else all-reduce.
//   Every TP collective waits (as a comm stream does) for the last compute kernel; the kernel that
//   needs its result waits for it. Residual adds and biases are taken as fused into the
//   neighbouring kernels.
// Layer backward (reverse order, seed 002's overlap): MLP down (row): SP all-gather dy, dgrad
//   gemm {T, f/t, h}, wgrad gemm {h, f/t, T}; activation backward; MLP up (column): SP async
//   all-gather of x, dgrad {T, h, n_up}, async reduce-scatter (SP) / all-reduce of dx, wgrad
//   {n_up, h, T}, wait; norm backward; projection (row) as MLP down; attention backward: cp = 1 one
//   attention_bwd block, cp > 1 the ring backward (K/V ring + fp32 dK/dV ring, accumulates); QKV
//   (column) as MLP up; norm backward. Schedules that split the backward (zb-h1, zb-v, dualpipev
//   pairs) run everything but the wgrad gemms in B and the wgrad gemms (after SP's all-gather of
//   the column layers' inputs) in W.
// MoE layers (is_moe_layer; schedules/step_moe.cpp states the ops): the MLP part is the router,
//   top-k, aux loss, permute, the dispatcher's collectives on the "ep_comm" stream (EP all-to-all
//   / ETP all-gather, or an all-gather over EP x ETP), one up and one down gemm per local expert
//   holding tokens, the combine, unpermute and the shared experts (a TP MLP); the expert
//   gradients reduce over the expert-data-parallel group on dp_comm after the chunk's last wgrad.
//   MLA (model.mla): the QKV column layer is the q and kv down-projections (whole on each TP rank),
//   then the q and kv up-projection gemms of the rank's heads; the core's head dim is
//   (d_qk + d_v) / 2.
// Recompute: full re-runs the layer's whole forward (collectives and CP ring included) right
//   before its backward; selective re-runs the attention core (the CP ring forward with cp > 1).
// First global stage: embedding lookup (copy, T_s h) before the first layer and its gradient
//   (accumulate, T_s h) after the last layer backward. Last global stage: final norm, the output
//   head (column parallel: SP all-gather, gemm {T, ceil(V/t), h}) and the vocabulary-parallel loss
//   (T ceil(V/t)); backward: head dgrad/wgrad with its TP collectives, final norm backward.
// Pipeline: each pipeline rank runs pipeline_orders() of the schedule; between actions the
//   combined p2p exchanges of schedules/pipeline_emitter, as build_pipeline (same boundaries, same
//   early receives, same explicit commits for the schedules that place their own), message bytes
//   mbs x seq/cp x h / (t if SP) x e. A p2p send waits for the op that produced the activation /
//   input gradient.
// Data parallelism: gradients are reduced over the data-parallel x context-parallel group
//   (Megatron's dp-cp group: CP ranks hold the same weights), dp_buckets buckets per chunk. On
//   the first pipeline rank each bucket is launched on dp_comm as soon as the last
//   weight-gradient pass of the chunk (the last microbatch's backward or W) has produced the
//   bucket's layers (backward order); the other pipeline ranks launch theirs after their last
//   pipeline exchange (Megatron's delay_grad_reduce: under the single hardware queue a bucket
//   waiting behind the previous one would hold back the gradient send that the previous stage
//   waits for, and the delay would chain through every stage); bytes = the
//   bucket's parameters on this rank (TP shard) x 4 (fp32 main grads); reduce-scatter with the
//   distributed optimizer, else all-reduce. Then (fp16: an fp32 gradient unscale, elementwise)
//   one optimizer_update over the rank's parameters
//   (/ (dp x cp) distributed) after every reduction, and with the distributed optimizer an
//   all-gather of the updated bf16 parameters per bucket.
// Folding (fold_dp): the mesh is still the whole tp x cp x dp x pp mesh (so every pipeline
//   neighbour and every group sits where it really does), but only the ranks with dp index 0
//   get ops; the others stay empty. Each gradient reduction / parameter all-gather is then a
//   collective over the built members of the dp-cp group (the cp ranks of dp 0; a one-member group
//   when cp = 1) timed as the FULL dp x cp group (Group::timed_as): the cost model prices it at
//   that group's real placement (dp members tp x cp ranks apart) with the same bytes. What
//   is folded: the other replicas' ops (identical programs, same times) and the rendezvous with
//   them. The analytical model has no contention, so the folded and unfolded step times are equal;
//   the flow-level network runs a folded Program on its quotient network (sim/flow_fold.hpp:
//   every flow's images load the port classes it crosses), equal to the unfolded run; metrics'
//   byte counts exclude the DP traffic to other replicas.
// Folding (fold_tp, when folds_tp(): gpus_per_node a multiple or divisor of tp, so every TP rank
//   sees the same placements): only the ranks with tp index 0 get ops. Each TP collective is
//   emitted as before but on a one-member "tp" group (the rank itself) timed as the FULL tp group
//   (Group::timed_as), priced by the cost model at its real placement with the same kind, bytes,
//   dtype and algorithm. The CP ring, the pipeline exchanges and the DP reductions
//   run between the tp index 0 ranks (their groups and peers are unchanged). TP ranks run
//   identical programs in lockstep, so under the analytical network each real TP collective's
//   members all arrive at once and it takes its analytical time: the folded and unfolded step
//   times are equal (tests/schedules, every schedule, SP, CP, distributed optimizer).
// No tensor slots (slot -1): the Program is for simulation.

namespace meshsim {

Program build_training_step(const TransformerModel& model, const StepPlan& plan,
                            int gpus_per_node) {
  check_step_plan(model, plan);
  require_positive(gpus_per_node, "gpus_per_node");
  if (model.moe && (plan.fold_dp || plan.fold_tp) && !moe_folds(plan, gpus_per_node)) {
    // Expert groups placed differently on the nodes: every rank built (see moe_folds).
    StepPlan whole = plan;
    whole.fold_dp = false;
    whole.fold_tp = false;
    check_step_size(model, whole, false);
    return step_detail::StepBuilder(model, whole, gpus_per_node).build();
  }
  if (plan.fold_tp && plan.tp > 1 && !folds_tp(plan, gpus_per_node)) {
    check_step_size(model, plan, false);
  }
  return step_detail::StepBuilder(model, plan, gpus_per_node).build();
}

}  // namespace meshsim
