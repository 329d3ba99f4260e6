#pragma once
// The Program's compute kernels on a CUDA device (namespace meshsim::kernels::cuda): the same
// operations and conventions as kernels/cpu (see kernels/cpu/attention.hpp and friends), on views
// whose data pointers are device addresses, launched asynchronously on `stream`. Each function
// returns the launch status (cudaGetLastError after the launch); bad arguments throw KernelError
// before anything is launched. The per-element math is kernels/attention_math.hpp and
// kernels/elementwise_math.hpp, the functions the CPU kernels and their tests use.
//
// Math in float32 unless an operand is fp64 (then float64); bf16/fp16 operands are converted on
// load and results rounded once on store, as on the CPU. The kernels are written plainly (one warp
// per query row, keys in tiles of 32, fp32 atomics for dK/dV): they are there to check a Program's
// numerics and schedule on real GPUs, not to compete with FlashAttention.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "kernels/attention_math.hpp"
#include "kernels/elementwise_math.hpp"
#include "kernels/views.hpp"

namespace meshsim::kernels::cuda {

// Row spans passed by value to a kernel (ring attention uses one or two per operand).
inline constexpr int kMaxRowSpans = 16;
struct DeviceRows {
  std::int32_t count = 0;
  std::int64_t total = 0;  // rows over all spans
  RowSpan spans[kMaxRowSpans];
};
DeviceRows device_rows(std::span<const RowSpan> rows);  // KernelError beyond kMaxRowSpans

inline constexpr std::int64_t kMaxHeadDim = 256;

struct AttentionBlock {
  Mask mask = Mask::none;
  DeviceRows q;        // query rows: rows of q, out, lse, dout, dq
  DeviceRows k;        // key rows: rows of k, v, dk, dv
  double scale = 0.0;  // softmax scale; 0: 1/sqrt(head_dim)
};

// out and lse of the block's query rows (other rows untouched); a query without a visible key
// gets out 0 and lse -inf.
cudaError_t attention_forward(const AttentionBlock& block, const HeadsView& q, const HeadsView& k,
                              const HeadsView& v, const HeadsView& out, const LseView& lse,
                              cudaStream_t stream);

// FlashAttention's backward from the final out and lse, Store::overwrite: dq, dk and dv are zeroed
// first (all rows), then hold the block's gradients. dK/dV accumulate in float32 (float64 for fp64)
// device scratch (stream-ordered allocation) and are rounded once into dk, dv.
cudaError_t attention_backward(const AttentionBlock& block, const HeadsView& q, const HeadsView& k,
                               const HeadsView& v, const HeadsView& out, const HeadsView& dout,
                               const LseView& lse, const HeadsView& dq, const HeadsView& dk,
                               const HeadsView& dv, cudaStream_t stream);

// Merges (block_out, block_lse) into (out_acc, lse_acc) on the given rows.
cudaError_t lse_merge(const DeviceRows& rows, const HeadsView& block_out, const LseView& block_lse,
                      const HeadsView& out_acc, const LseView& lse_acc, cudaStream_t stream);

// y += alpha x (any types, same size).
cudaError_t accumulate(const VectorView& x, const VectorView& y, double alpha, cudaStream_t stream);
// dst = src with conversion (same size).
cudaError_t copy(const VectorView& src, const VectorView& dst, cudaStream_t stream);
// y[i, j] += bias[j].
cudaError_t add_bias(const MatrixView& y, const VectorView& bias, cudaStream_t stream);
// db[j] += sum_i dy[i, j], summed in float64.
cudaError_t bias_grad(const MatrixView& dy, const VectorView& db, cudaStream_t stream);
// y = f(x).
cudaError_t activation_forward(Activation f, const VectorView& x, const VectorView& y,
                               cudaStream_t stream);
// dx = f'(x) dy (overwritten).
cudaError_t activation_backward(Activation f, const VectorView& x, const VectorView& dy,
                                const VectorView& dx, cudaStream_t stream);

}  // namespace meshsim::kernels::cuda
