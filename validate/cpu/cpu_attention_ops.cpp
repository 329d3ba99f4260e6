// The CPU runner's attention steps: the ring builders' attention_fwd {q, kv} -> {out, lse},
// attention_bwd {q, kv, out, dout, lse} -> {dq, dkv}, lse_merge {block_out, block_lse, out, lse}
// -> {out, lse} and the row-block accumulate {x, y} -> {y}. Rows are found from the global
// positions of the call's q/k ranges and the slots' token positions.
#include <fmt/format.h>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/vector_ops.hpp"
#include "sim/error.hpp"
#include "validate/cpu/cpu_ops.hpp"

namespace meshsim::cpu_ops {
namespace {

kernels::Mask mask_of(const AttentionShape& a, InjectedFault fault) {
  if (fault == InjectedFault::attention_mask) return kernels::Mask::none;
  return a.mask == MaskMode::causal ? kernels::Mask::causal : kernels::Mask::none;
}

std::vector<kernels::RowSpan> rows_in(const SlotViews& v, SlotId slot,
                                      const std::vector<TokenRange>& wanted,
                                      std::int64_t part = 0) {
  const auto w = position_ranges(wanted);
  return kernels::locate_rows(w, v.token_layout(slot, part));
}

// The K/V operand of a block: the part of the (possibly all-gathered) slot holding its keys.
struct KvOperand {
  kernels::KvViews views;
  std::vector<kernels::RowSpan> rows;
};

KvOperand kv_operand(const SlotViews& v, SlotId slot, const AttentionShape& a) {
  const std::int64_t part = v.part_holding(slot, a.k);
  return KvOperand{v.kv(slot, part), rows_in(v, slot, a.k, part)};
}

}  // namespace

void attention_forward(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  expect_operands(call, 2, 2);
  const auto& a = std::get<AttentionShape>(call.shape);
  const SlotId q = call.inputs[0], kv = call.inputs[1], out = call.outputs[0],
               lse = call.outputs[1];
  const KvOperand k = kv_operand(v, kv, a);
  const kernels::cpu::AttentionBlock block{mask_of(a, fault), rows_in(v, q, a.q), k.rows, 0.0};
  MESHSIM_CHECK(
      v.token_layout(out) == v.token_layout(q) && v.token_layout(lse) == v.token_layout(q),
      "attention_fwd: out and lse must hold the query slot's positions");
  kernels::cpu::attention_forward(block, v.heads(q, a.heads_q), k.views.k, k.views.v,
                                  v.heads(out, a.heads_q), v.lse(lse));
}

void attention_backward(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  expect_operands(call, 5, 2);
  const auto& a = std::get<AttentionShape>(call.shape);
  const SlotId q = call.inputs[0], kv = call.inputs[1], out = call.inputs[2], dout = call.inputs[3],
               lse = call.inputs[4], dq = call.outputs[0], dkv = call.outputs[1];
  const KvOperand k = kv_operand(v, kv, a);
  MESHSIM_CHECK(rows_in(v, dkv, a.k) == k.rows,
                "attention_bwd: dK/dV must hold the positions of the K/V it differentiates");
  const kernels::cpu::AttentionBlock block{mask_of(a, fault), rows_in(v, q, a.q), k.rows, 0.0};
  const kernels::KvViews d = v.kv(dkv);
  kernels::cpu::attention_backward(block, v.heads(q, a.heads_q), k.views.k, k.views.v,
                                   v.heads(out, a.heads_q), v.heads(dout, a.heads_q), v.lse(lse),
                                   v.heads(dq, a.heads_q), d.k, d.v);
}

void lse_merge(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  expect_operands(call, 4, 2);
  const auto& a = std::get<AttentionShape>(call.shape);
  const SlotId blk_out = call.inputs[0], blk_lse = call.inputs[1], out = call.inputs[2],
               lse = call.inputs[3];
  MESHSIM_CHECK(call.outputs[0] == out && call.outputs[1] == lse,
                "lse_merge merges into its accumulator inputs");
  if (fault == InjectedFault::lse_merge) return;  // the merged output keeps the first block only
  const std::vector<kernels::RowSpan> rows = rows_in(v, out, a.q);
  MESHSIM_CHECK(rows_in(v, blk_out, a.q) == rows, "lse_merge: block and accumulator rows differ");
  kernels::cpu::lse_merge(rows, v.heads(blk_out, a.heads_q), v.lse(blk_lse),
                          v.heads(out, a.heads_q), v.lse(lse));
}

void row_accumulate(const SlotViews& v, const KernelCall& call) {
  expect_operands(call, 2, 1);
  const auto& a = std::get<AttentionShape>(call.shape);
  const SlotId x = call.inputs[0], y = call.inputs[1];
  MESHSIM_CHECK(call.outputs[0] == y, "accumulate adds into its second input");
  MESHSIM_CHECK(a.q.empty() != a.k.empty(), "a row-block accumulate names q rows or k rows");
  const bool kv = a.q.empty();
  const TensorSlot& sx = v.slot(x);
  const TensorSlot& sy = v.slot(y);
  MESHSIM_CHECK(sx.shape == sy.shape && sx.tokens == sy.tokens,
                fmt::format("accumulate: slots '{}' and '{}' differ", sx.name, sy.name));
  const std::vector<kernels::RowSpan> rows = rows_in(v, y, kv ? a.k : a.q);
  // [halves, batch, tokens, heads * head_dim] with halves = 2 for packed K/V.
  const std::size_t o = kv ? 1 : 0;
  const std::int64_t halves = kv ? 2 : 1, batch = sy.shape[o], tokens = sy.shape[o + 1],
                     width = sy.shape[o + 2] * sy.shape[o + 3];
  MESHSIM_CHECK(sy.shape.size() == o + 4, fmt::format("accumulate: slot '{}' shape", sy.name));
  const kernels::VectorView vx = v.vector(x), vy = v.vector(y);
  for (std::int64_t h = 0; h < halves; ++h) {
    for (std::int64_t b = 0; b < batch; ++b) {
      for (const auto& r : rows) {
        const std::int64_t at = ((h * batch + b) * tokens + r.row) * width;
        kernels::cpu::accumulate(kernels::sub_vector(vx, at, r.count * width),
                                 kernels::sub_vector(vy, at, r.count * width));
      }
    }
  }
}

}  // namespace meshsim::cpu_ops
