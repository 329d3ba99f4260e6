#pragma once
// The operands of each compute op's KernelCall, bound once for every backend: which slots it
// reads and writes (operand order as documented in sim/kernel_call.hpp and by the builders), seen
// as kernels/views.hpp views over the rank's TensorStore, with shapes, token layouts and row
// lookups checked (a mismatch is a builder bug: InvariantError). The CPU runner calls kernels/cpu
// on these views; the CUDA backend maps them onto its device copy and calls kernels/cuda.
//
// An injected fault (a test flag) makes one kernel kind compute something slightly wrong, so the
// numerics check can be seen to FAIL; it is applied here where it changes the operands.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "kernels/attention_math.hpp"
#include "kernels/elementwise_math.hpp"
#include "kernels/views.hpp"
#include "sim/kernel_call.hpp"
#include "sim/program.hpp"
#include "validate/run/slot_views.hpp"

namespace meshsim {

// Which kernel computes a wrong result on purpose.
enum class InjectedFault : std::uint8_t {
  none,
  attention_mask,  // attention blocks ignore the causal mask
  lse_merge,       // merges are skipped: the output keeps the first block only
  gemm_scale,      // every GEMM result is 10% too large
};
std::string_view to_string(InjectedFault f);
std::optional<InjectedFault> parse_injected_fault(std::string_view name);

// Whether `fault` changes anything `program` computes: an lse_merge op for lse-merge, a causal
// attention op for attention-mask, a GEMM for gemm-scale (none: false).
bool fault_applies(InjectedFault fault, const Program& program);

// InjectedFault::gemm_scale: every GEMM result (forward and gradients) is this much too large.
inline constexpr double kFaultyGemmAlpha = 1.1;
double gemm_alpha(InjectedFault fault);  // kFaultyGemmAlpha under gemm_scale, else 1

// The call has exactly this many input and output slots (InvariantError otherwise).
void expect_operands(const KernelCall& call, std::size_t inputs, std::size_t outputs);

// attention_fwd {q, kv} -> {out, lse}: one block of queries against one block of keys.
struct AttentionForwardOperands {
  kernels::Mask mask = kernels::Mask::none;
  std::vector<kernels::RowSpan> q_rows, k_rows;
  kernels::HeadsView q;
  kernels::KvViews kv;
  kernels::HeadsView out;
  kernels::LseView lse;
};
AttentionForwardOperands bind_attention_forward(const SlotViews& v, const KernelCall& call,
                                                InjectedFault fault);

// attention_bwd {q, kv, out, dout, lse} -> {dq, dkv}.
struct AttentionBackwardOperands {
  kernels::Mask mask = kernels::Mask::none;
  std::vector<kernels::RowSpan> q_rows, k_rows;
  kernels::HeadsView q;
  kernels::KvViews kv;
  kernels::HeadsView out, dout;
  kernels::LseView lse;
  kernels::HeadsView dq;
  kernels::KvViews dkv;
};
AttentionBackwardOperands bind_attention_backward(const SlotViews& v, const KernelCall& call,
                                                  InjectedFault fault);

// lse_merge {block_out, block_lse, out, lse} -> {out, lse}; nullopt under InjectedFault::lse_merge
// (the merged output keeps the first block only).
struct LseMergeOperands {
  std::vector<kernels::RowSpan> rows;
  kernels::HeadsView block_out;
  kernels::LseView block_lse;
  kernels::HeadsView out;
  kernels::LseView lse;
};
std::optional<LseMergeOperands> bind_lse_merge(const SlotViews& v, const KernelCall& call,
                                               InjectedFault fault);

// y += x over runs of elements, or y = x (a cast).
struct VectorPair {
  kernels::VectorView x, y;
};
// accumulate {x, y} -> {y} with an AttentionShape: the row blocks its q (or k) ranges name, one
// pair per (K/V half, batch, row run); with a VectorShape: the first `elements`, one pair.
std::vector<VectorPair> bind_accumulate(const SlotViews& v, const KernelCall& call);
// copy {x} -> {y} over the first `elements`.
VectorPair bind_copy(const SlotViews& v, const KernelCall& call);

// c = alpha op(a) op(b) + beta c.
struct GemmOperands {
  kernels::MatrixView a;
  bool trans_a = false;
  kernels::MatrixView b;
  bool trans_b = false;
  kernels::MatrixView c;
  double alpha = 1;
  double beta = 0;
};
// gemm {A, B[, C]} -> {C} without an activation (C among the inputs when it accumulates).
GemmOperands bind_gemm(const SlotViews& v, const KernelCall& call, InjectedFault fault);

// gemm with a relu/gelu epilogue: forward {x, w} -> {y, pre}: pre = x w, y = f(pre); the input
// gradient of a split backward (trans_b) {dy, w, pre} -> {dx, dh}: dh = f'(pre) dy, dx = dh w^T.
struct GemmActivationOperands {
  kernels::Activation f = kernels::Activation::identity;
  bool backward = false;
  GemmOperands gemm;  // forward: x w -> pre; backward: dh w^T -> dx
  kernels::VectorView pre;
  kernels::VectorView y;   // forward: f(pre); backward: dy
  kernels::VectorView dh;  // backward only
};
GemmActivationOperands bind_gemm_activation(const SlotViews& v, const KernelCall& call,
                                            InjectedFault fault);

// linear_bwd [fn=f] {x, w, dy[, pre]} -> {dx, dw}: dh = f'(pre) dy (dy without fn),
// dx = dh w^T, dw += x^T dh; w [in, out]; shape the forward's (m tokens, n out, k in).
struct LinearBackwardOperands {
  std::optional<kernels::Activation> f;  // with the activation's derivative
  kernels::MatrixView x, w, dy, dx, dw;  // [m, k], [k, n], [m, n], [m, k], [k, n]
  kernels::VectorView pre;               // with f only
  double alpha = 1;                      // the fault's scale of dh (so of dx and dw)
};
LinearBackwardOperands bind_linear_backward(const SlotViews& v, const KernelCall& call,
                                            InjectedFault fault);

// elementwise bias_add {y, b} -> {y} (b added to every row of y) or bias_grad {dy, db} -> {db}
// (db = column sums of dy).
struct BiasOperands {
  bool add = true;
  kernels::MatrixView rows;  // y or dy
  kernels::VectorView bias;  // b or db
};
BiasOperands bind_bias(const SlotViews& v, const KernelCall& call);

// elementwise fn=f {x} -> {y}: y = f(x).
struct ActivationOperands {
  kernels::Activation f = kernels::Activation::identity;
  kernels::VectorView x, y;
};
ActivationOperands bind_activation(const SlotViews& v, const KernelCall& call);

}  // namespace meshsim
