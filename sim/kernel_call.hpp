#pragma once
// The closed catalogue of compute kernels a Program may call. One description, two meanings: the
// cost model derives FLOPs and bytes from it, the executors run it on tensor slots.
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/compact_list.hpp"
#include "sim/dtype.hpp"
#include "sim/quant_format.hpp"

namespace meshsim {

using SlotId = std::int32_t;

enum class KernelKind : std::uint8_t {
  gemm,              // C (+)= op(A) op(B); GemmShape
  attention_fwd,     // out, lse of a (q ranges) x (k ranges) block; AttentionShape
  attention_bwd,     // dq, dk, dv of a block; AttentionShape
  lse_merge,         // merge a block's (out, lse) into the accumulators; AttentionShape (q only)
  accumulate,        // y += x; VectorShape, or AttentionShape for row blocks of attention slots
  copy,              // y = x (slice, concat, dtype conversion); VectorShape
  elementwise,       // y = f(x); VectorShape
  loss,              // scalar loss and its gradient; VectorShape
  optimizer_update,  // Adam step over a parameter shard; VectorShape
  linear_bwd,        // a linear layer's whole backward: dX = dY W^T and dW += X^T dY; GemmShape
                     // of the forward (m tokens, n outputs, k inputs)
};
inline constexpr int kKernelKindCount = 10;

// Causal masks compare *global* sequence positions: key j is visible to query i when j <= i.
enum class MaskMode : std::uint8_t { none, causal };

struct TokenRange {
  std::int64_t begin = 0;  // global sequence position, inclusive
  std::int64_t end = 0;    // exclusive
  std::int64_t size() const { return end - begin; }
  bool operator==(const TokenRange&) const = default;
};

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false, accumulate = false;
  bool operator==(const GemmShape&) const = default;
};

struct AttentionShape {
  std::int64_t batch = 1, heads_q = 1, heads_kv = 1, head_dim = 1;
  MaskMode mask = MaskMode::none;
  CompactList<TokenRange> q;  // query positions (for lse_merge: the rows merged)
  CompactList<TokenRange> k;  // key positions (empty for lse_merge)
  bool operator==(const AttentionShape&) const = default;
};

// An element-wise (memory-bound) call over `elements` elements. `operands`: full-size tensors of
// the call's dtype it moves per element, reads plus writes (2: read x, write y; a backward that
// reads x and dy and writes dx moves 3); `mask_bytes`: further bytes per element not in the
// call's dtype: a 1-byte dropout mask written (forward) or read (backward), or the loss's fp32
// passes over the logits (schedules/cross_entropy.hpp) or of an eager norm or RoPE
// (schedules/layer_kernels.hpp).
struct VectorShape {
  std::int64_t elements = 0;
  std::int32_t operands = 2;
  std::int32_t mask_bytes = 0;
  bool operator==(const VectorShape&) const = default;
};
inline constexpr std::int32_t kMaxVectorOperands = 64;
inline constexpr std::int32_t kMaxVectorMaskBytes = 128;

using KernelShape = std::variant<GemmShape, AttentionShape, VectorShape>;

// What an elementwise kernel computes, and the activation fused into a layer's GEMMs (cuBLASLt's
// RELU/GELU_AUX epilogues forward, the matching DRELU/DGELU on the gradient backward):
//   elementwise bias_add:  inputs {y, b} -> {y}, y[i, j] += b[j] (y [rows, n]);
//   elementwise bias_grad: inputs {dy, db} -> {db}, db[j] += sum_i dy[i, j];
//   elementwise relu|gelu: inputs {x} -> {y}, y = f(x);
//   gemm with relu|gelu: inputs {x, w}, outputs {y, pre}: pre = x w, y = f(pre) (pre kept for
//     the backward; w stored [in, out], GemmShape{m tokens, n out, k in});
//   linear_bwd with relu|gelu: inputs {x, w, dy, pre}, outputs {dx, dw}: with dh = f'(pre) * dy,
//     dx = dh w^T (overwritten) and dw += x^T dh (accumulated, w and dw [in, out]);
//   gemm with relu|gelu and trans_b (the input gradient B of a split backward, the forward's
//     GemmShape with trans_b): inputs {dy, w, pre}, outputs {dx, dh}: dh = f'(pre) * dy (kept
//     for the weight gradient), dx = dh w^T; the weight gradient W is then a plain accumulating
//     gemm with trans_a: inputs {x, dh, dw} -> {dw}, dw += x^T dh.
enum class ElementwiseFn : std::uint8_t { none, bias_add, bias_grad, relu, gelu };
inline constexpr int kElementwiseFnCount = 5;

struct KernelCall {
  KernelKind kind = KernelKind::elementwise;
  DType dtype = DType::bf16;  // storage type of the operands
  KernelShape shape = VectorShape{};
  CompactList<SlotId> inputs;  // empty in a Program built only to simulate (no tensor slots)
  CompactList<SlotId> outputs;
  ElementwiseFn fn = ElementwiseFn::none;
  // Low-precision operands (sim/quant_format.hpp). gemm: A and B are stored in `quant` (its
  // element bytes) and multiplied on the FP8 / FP4 tensor cores, C stays in `dtype`. copy: a
  // quantize, reading its input in `dtype` and writing VectorShape::operands - 1 quantized copies
  // (1: row-wise; 2: row- and column-wise, the transposed copy Hopper's FP8 GEMMs need for the
  // backward, or MXFP8's second scaling direction). Other kinds: none.
  QuantFormat quant = QuantFormat::none;
  // gemm: the share of the GPU's SMs the GEMM is launched on, in (0, 1]: below 1 when SMs are kept
  // for a communication kernel running beside it (Transformer Engine's set_sm_margin: the GEMM
  // gets sm_count - num_sm SMs, comm_gemm_overlap.cpp's _math_sms). Its math runs at that share of
  // the peak.
  double sm_share = 1.0;
  bool operator==(const KernelCall&) const = default;
};

std::string_view to_string(KernelKind k);
std::optional<KernelKind> parse_kernel_kind(std::string_view name);
std::string_view to_string(MaskMode m);
std::optional<MaskMode> parse_mask_mode(std::string_view name);

std::string_view to_string(ElementwiseFn f);
std::optional<ElementwiseFn> parse_elementwise_fn(std::string_view name);

// The shape alternative each kind takes first (index into KernelShape), and whether it accepts a
// given alternative (accumulate also takes an AttentionShape: y += x on the rows of the q ranges
// of [batch, tokens, heads_q, head_dim] slots, or of the k ranges of packed
// [2, batch, tokens, heads_kv, head_dim] slots, found through the slots' token positions).
std::size_t expected_shape_index(KernelKind k);
bool accepts_shape(KernelKind k, std::size_t shape_index);

// Query-key pairs the block computes per head and sample (attention kinds), 0 otherwise. With a
// causal mask a pair (i, j) counts when j <= i.
std::int64_t attention_pairs(const AttentionShape& s);

// Work of one call: floating-point operations and bytes moved to/from memory.
double kernel_flops(const KernelCall& call);
double kernel_bytes(const KernelCall& call);

}  // namespace meshsim
