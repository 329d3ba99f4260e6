// Attention blocks on a CUDA device: forward (out, lse), backward (dq, dk, dv from the final out
// and lse) and the log-sum-exp merge, with the per-element math of kernels/attention_math.hpp.
// One warp per (batch, head, query row), four warps per thread block; keys in tiles of 32, one
// key per lane for the scores, the output row spread over the lanes (head_dim / 32 per lane).
#include <cmath>

#include <string>

#include "kernels/attention_math.hpp"
#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/device_access.cuh"

namespace meshsim::kernels::cuda {
namespace {

using detail::load;
using detail::store;
using detail::warp_max;
using detail::warp_sum;

constexpr int kWarps = 4;
constexpr int kSlots = static_cast<int>(kMaxHeadDim / 32);
constexpr unsigned kFullMask = 0xffffffffu;

struct RowAt {
  std::int64_t row = -1;
  std::int64_t position = -1;
};

// The i-th row of a block's rows (spans in order).
__device__ inline RowAt row_at(const DeviceRows& rows, std::int64_t i) {
  for (int s = 0; s < rows.count; ++s) {
    if (i < rows.spans[s].count) return RowAt{rows.spans[s].row + i, rows.spans[s].position + i};
    i -= rows.spans[s].count;
  }
  return RowAt{};
}

__device__ inline std::int64_t at(const HeadsView& x, std::int64_t b, std::int64_t row,
                                  std::int64_t h) {
  return b * x.batch_stride + row * x.token_stride + h * x.head_stride;
}

__device__ inline std::int64_t at(const LseView& x, std::int64_t b, std::int64_t h,
                                  std::int64_t row) {
  return b * x.batch_stride + h * x.head_stride + row;
}

template <class M>
__global__ void forward_kernel(AttentionBlock block, M scale, HeadsView q, HeadsView k, HeadsView v,
                               HeadsView out, LseView lse) {
  __shared__ M q_shared[kWarps][kMaxHeadDim];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t qi = static_cast<std::int64_t>(blockIdx.x) * kWarps + warp;
  const std::int64_t h = blockIdx.y, b = blockIdx.z;
  if (qi >= block.q.total) return;  // the whole warp
  const RowAt qr = row_at(block.q, qi);
  const std::int64_t hk = kv_head_of(h, q.heads, k.heads);
  const std::int64_t dims = q.head_dim;
  M* qs = q_shared[warp];
  for (std::int64_t d = lane; d < dims; d += 32) {
    qs[d] = scale * load<M>(q.data, q.type, at(q, b, qr.row, h) + d);
  }
  __syncwarp();

  SoftmaxRow<M> row;
  M acc[kSlots] = {};
  for (std::int64_t j0 = 0; j0 < block.k.total; j0 += 32) {
    const std::int64_t j = j0 + lane;
    M s = negative_infinity<M>();
    std::int64_t key_row = -1;
    if (j < block.k.total) {
      const RowAt kr = row_at(block.k, j);
      key_row = kr.row;
      if (key_visible(block.mask, qr.position, kr.position)) {
        const std::int64_t base = at(k, b, kr.row, hk);
        M dot = 0;
        for (std::int64_t d = 0; d < dims; ++d) dot += qs[d] * load<M>(k.data, k.type, base + d);
        s = dot;
      }
    }
    const M factor = softmax_rescale(row, warp_max(s));
    const M w = softmax_weight(s, row.max);
    row.sum += warp_sum(w);
    for (int t = 0; t < kSlots; ++t) acc[t] *= factor;
    const std::int64_t tile = block.k.total - j0 < 32 ? block.k.total - j0 : 32;
    for (int jj = 0; jj < tile; ++jj) {
      const M wj = __shfl_sync(kFullMask, w, jj);
      const std::int64_t rj = __shfl_sync(kFullMask, key_row, jj);
      if (wj == M(0)) continue;  // the same on every lane
      const std::int64_t base = at(v, b, rj, hk);
      for (int t = 0; t < kSlots; ++t) {
        const std::int64_t d = lane + 32 * t;
        if (d < dims) acc[t] += wj * load<M>(v.data, v.type, base + d);
      }
    }
  }
  const M inv = row.sum > M(0) ? M(1) / row.sum : M(0);
  for (int t = 0; t < kSlots; ++t) {
    const std::int64_t d = lane + 32 * t;
    if (d < dims) store<M>(out.data, out.type, at(out, b, qr.row, h) + d, acc[t] * inv);
  }
  if (lane == 0) store<M>(lse.data, lse.type, at(lse, b, h, qr.row), softmax_lse(row));
}

// dK/dV accumulators: [batch, block key index, heads_kv, head_dim].
template <class M>
__global__ void backward_kernel(AttentionBlock block, M scale, HeadsView q, HeadsView k,
                                HeadsView v, HeadsView out, HeadsView dout, LseView lse,
                                HeadsView dq, M* dk_acc, M* dv_acc) {
  __shared__ M q_shared[kWarps][kMaxHeadDim];
  __shared__ M do_shared[kWarps][kMaxHeadDim];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t qi = static_cast<std::int64_t>(blockIdx.x) * kWarps + warp;
  const std::int64_t h = blockIdx.y, b = blockIdx.z;
  if (qi >= block.q.total) return;
  const RowAt qr = row_at(block.q, qi);
  const std::int64_t hk = kv_head_of(h, q.heads, k.heads);
  const std::int64_t dims = q.head_dim;
  M* qs = q_shared[warp];
  M* dos = do_shared[warp];
  M d_part = 0;
  for (std::int64_t d = lane; d < dims; d += 32) {
    qs[d] = load<M>(q.data, q.type, at(q, b, qr.row, h) + d);
    dos[d] = load<M>(dout.data, dout.type, at(dout, b, qr.row, h) + d);
    d_part += dos[d] * load<M>(out.data, out.type, at(out, b, qr.row, h) + d);
  }
  const M d_i = warp_sum(d_part);  // D_i = dout_i . out_i
  __syncwarp();
  const M lse_i = load<M>(lse.data, lse.type, at(lse, b, h, qr.row));

  M dq_acc[kSlots] = {};
  for (std::int64_t j0 = 0; j0 < block.k.total; j0 += 32) {
    const std::int64_t j = j0 + lane;
    M p = 0, ds = 0;
    std::int64_t key_row = -1;
    if (j < block.k.total) {
      const RowAt kr = row_at(block.k, j);
      key_row = kr.row;
      if (key_visible(block.mask, qr.position, kr.position)) {
        const std::int64_t kb = at(k, b, kr.row, hk), vb = at(v, b, kr.row, hk);
        M qk = 0, dp = 0;
        for (std::int64_t d = 0; d < dims; ++d) {
          qk += qs[d] * load<M>(k.data, k.type, kb + d);
          dp += dos[d] * load<M>(v.data, v.type, vb + d);
        }
        p = attention_probability(scale * qk, lse_i);
        ds = p * (dp - d_i);
      }
    }
    const std::int64_t tile = block.k.total - j0 < 32 ? block.k.total - j0 : 32;
    for (int jj = 0; jj < tile; ++jj) {
      const M pj = __shfl_sync(kFullMask, p, jj);
      const M dsj = __shfl_sync(kFullMask, ds, jj);
      const std::int64_t rj = __shfl_sync(kFullMask, key_row, jj);
      if (pj == M(0) && dsj == M(0)) continue;  // the same on every lane
      const std::int64_t kb = at(k, b, rj, hk);
      const std::int64_t acc = ((b * block.k.total + j0 + jj) * k.heads + hk) * dims;
      for (int t = 0; t < kSlots; ++t) {
        const std::int64_t d = lane + 32 * t;
        if (d >= dims) continue;
        dq_acc[t] += scale * dsj * load<M>(k.data, k.type, kb + d);
        atomicAdd(dk_acc + acc + d, scale * dsj * qs[d]);
        atomicAdd(dv_acc + acc + d, pj * dos[d]);
      }
    }
  }
  for (int t = 0; t < kSlots; ++t) {
    const std::int64_t d = lane + 32 * t;
    if (d < dims) store<M>(dq.data, dq.type, at(dq, b, qr.row, h) + d, dq_acc[t]);
  }
}

// Element i of a row-major [batch, tokens, heads, head_dim] index space, as coordinates.
struct HeadIndex {
  std::int64_t b, t, h, d;
};
__device__ HeadIndex head_index(std::int64_t i, std::int64_t tokens, std::int64_t heads,
                                std::int64_t head_dim) {
  return HeadIndex{i / (head_dim * heads * tokens), (i / (head_dim * heads)) % tokens,
                   (i / head_dim) % heads, i % head_dim};
}

template <class M>
__global__ void backward_store_kernel(DeviceRows rows, const M* dk_acc, const M* dv_acc,
                                      HeadsView dk, HeadsView dv) {
  const std::int64_t n = dk.batch * rows.total * dk.heads * dk.head_dim;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const HeadIndex e = head_index(i, rows.total, dk.heads, dk.head_dim);
    const std::int64_t row = row_at(rows, e.t).row;
    store<M>(dk.data, dk.type, at(dk, e.b, row, e.h) + e.d, dk_acc[i]);
    store<M>(dv.data, dv.type, at(dv, e.b, row, e.h) + e.d, dv_acc[i]);
  }
}

__global__ void zero_kernel(HeadsView x) {
  const std::int64_t n = x.batch * x.tokens * x.heads * x.head_dim;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const HeadIndex e = head_index(i, x.tokens, x.heads, x.head_dim);
    store<float>(x.data, x.type, at(x, e.b, e.t, e.h) + e.d, 0.0F);
  }
}

template <class M>
__global__ void merge_kernel(DeviceRows rows, HeadsView block_out, LseView block_lse,
                             HeadsView out_acc, LseView lse_acc) {
  const std::int64_t h = blockIdx.y, b = blockIdx.z;
  const std::int64_t row = row_at(rows, blockIdx.x).row;
  const M la = load<M>(lse_acc.data, lse_acc.type, at(lse_acc, b, h, row));
  const M lb = load<M>(block_lse.data, block_lse.type, at(block_lse, b, h, row));
  const LseMerge<M> m = lse_merge_weights(la, lb);
  for (std::int64_t d = threadIdx.x; d < out_acc.head_dim; d += blockDim.x) {
    const std::int64_t ia = at(out_acc, b, row, h) + d, ib = at(block_out, b, row, h) + d;
    const M a = load<M>(out_acc.data, out_acc.type, ia);
    const M x = load<M>(block_out.data, block_out.type, ib);
    store<M>(out_acc.data, out_acc.type, ia, m.weight_a * a + m.weight_b * x);
  }
  __syncthreads();  // every thread read lse_acc before it changes
  if (threadIdx.x == 0) store<M>(lse_acc.data, lse_acc.type, at(lse_acc, b, h, row), m.lse);
}

void check_heads(const HeadsView& x, const HeadsView& like_q, const char* what) {
  MESHSIM_KERNEL_CHECK(x.batch == like_q.batch && x.head_dim == like_q.head_dim,
                       std::string(what) + ": batch or head_dim differs from q's");
}

void check_block(const AttentionBlock& block, const HeadsView& q, const HeadsView& k,
                 const HeadsView& v) {
  MESHSIM_KERNEL_CHECK(q.head_dim >= 1 && q.head_dim <= kMaxHeadDim,
                       "head_dim " + std::to_string(q.head_dim) + " outside [1, 256]");
  MESHSIM_KERNEL_CHECK(k.heads >= 1 && q.heads % k.heads == 0 && k.heads == v.heads,
                       "query heads must be a multiple of the K/V heads");
  check_heads(k, q, "k");
  check_heads(v, q, "v");
  MESHSIM_KERNEL_CHECK(q.batch <= 65535 && q.heads <= 65535, "batch or heads beyond 65535");
  (void)block;
}

double scale_of(const AttentionBlock& block, const HeadsView& q) {
  return block.scale != 0.0 ? block.scale : 1.0 / std::sqrt(static_cast<double>(q.head_dim));
}

dim3 row_grid(std::int64_t rows, const HeadsView& q) {
  return dim3(static_cast<unsigned>((rows + kWarps - 1) / kWarps), static_cast<unsigned>(q.heads),
              static_cast<unsigned>(q.batch));
}

void zero(const HeadsView& x, cudaStream_t stream) {
  zero_kernel<<<detail::grid_for(x.batch * x.tokens * x.heads * x.head_dim), 256, 0, stream>>>(x);
}

}  // namespace

DeviceRows device_rows(std::span<const RowSpan> rows) {
  MESHSIM_KERNEL_CHECK(rows.size() <= static_cast<std::size_t>(kMaxRowSpans),
                       std::to_string(rows.size()) + " row spans (at most 16)");
  DeviceRows d;
  d.count = static_cast<std::int32_t>(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    d.spans[i] = rows[i];
    d.total += rows[i].count;
  }
  return d;
}

cudaError_t attention_forward(const AttentionBlock& block, const HeadsView& q, const HeadsView& k,
                              const HeadsView& v, const HeadsView& out, const LseView& lse,
                              cudaStream_t stream) {
  check_block(block, q, k, v);
  check_heads(out, q, "out");
  if (block.q.total == 0) return cudaSuccess;
  const double scale = scale_of(block, q);
  const dim3 grid = row_grid(block.q.total, q);
  if (detail::any_fp64(q.type, k.type, v.type)) {
    forward_kernel<double><<<grid, 32 * kWarps, 0, stream>>>(block, scale, q, k, v, out, lse);
  } else {
    forward_kernel<float>
        <<<grid, 32 * kWarps, 0, stream>>>(block, static_cast<float>(scale), q, k, v, out, lse);
  }
  return cudaGetLastError();
}

cudaError_t attention_backward(const AttentionBlock& block, const HeadsView& q, const HeadsView& k,
                               const HeadsView& v, const HeadsView& out, const HeadsView& dout,
                               const LseView& lse, const HeadsView& dq, const HeadsView& dk,
                               const HeadsView& dv, cudaStream_t stream) {
  check_block(block, q, k, v);
  check_heads(out, q, "out");
  check_heads(dout, q, "dout");
  check_heads(dq, q, "dq");
  check_heads(dk, k, "dk");
  check_heads(dv, k, "dv");
  MESHSIM_KERNEL_CHECK(dk.heads == k.heads && dv.heads == k.heads, "dk/dv heads differ from k's");
  zero(dq, stream);
  zero(dk, stream);
  zero(dv, stream);
  if (block.q.total == 0 || block.k.total == 0) return cudaGetLastError();
  const bool fp64 = detail::any_fp64(q.type, k.type, v.type);
  const std::size_t element = fp64 ? sizeof(double) : sizeof(float);
  const auto n = static_cast<std::size_t>(q.batch * block.k.total * k.heads * k.head_dim);
  void* acc = nullptr;
  cudaError_t rc = cudaMallocAsync(&acc, 2 * n * element, stream);
  if (rc != cudaSuccess) return rc;
  rc = cudaMemsetAsync(acc, 0, 2 * n * element, stream);
  if (rc != cudaSuccess) return rc;
  const double scale = scale_of(block, q);
  const dim3 grid = row_grid(block.q.total, q);
  const unsigned store_grid = detail::grid_for(static_cast<std::int64_t>(n));
  if (fp64) {
    auto* dk_acc = static_cast<double*>(acc);
    backward_kernel<double><<<grid, 32 * kWarps, 0, stream>>>(block, scale, q, k, v, out, dout, lse,
                                                              dq, dk_acc, dk_acc + n);
    backward_store_kernel<double>
        <<<store_grid, 256, 0, stream>>>(block.k, dk_acc, dk_acc + n, dk, dv);
  } else {
    auto* dk_acc = static_cast<float*>(acc);
    backward_kernel<float><<<grid, 32 * kWarps, 0, stream>>>(
        block, static_cast<float>(scale), q, k, v, out, dout, lse, dq, dk_acc, dk_acc + n);
    backward_store_kernel<float>
        <<<store_grid, 256, 0, stream>>>(block.k, dk_acc, dk_acc + n, dk, dv);
  }
  rc = cudaGetLastError();
  const cudaError_t freed = cudaFreeAsync(acc, stream);
  return rc != cudaSuccess ? rc : freed;
}

cudaError_t lse_merge(const DeviceRows& rows, const HeadsView& block_out, const LseView& block_lse,
                      const HeadsView& out_acc, const LseView& lse_acc, cudaStream_t stream) {
  check_heads(block_out, out_acc, "block_out");
  MESHSIM_KERNEL_CHECK(block_out.heads == out_acc.heads, "block_out heads differ");
  if (rows.total == 0) return cudaSuccess;
  MESHSIM_KERNEL_CHECK(rows.total <= 0x7fffffff, "too many rows");
  const dim3 grid(static_cast<unsigned>(rows.total), static_cast<unsigned>(out_acc.heads),
                  static_cast<unsigned>(out_acc.batch));
  if (detail::any_fp64(block_out.type, out_acc.type, block_lse.type, lse_acc.type)) {
    merge_kernel<double><<<grid, 64, 0, stream>>>(rows, block_out, block_lse, out_acc, lse_acc);
  } else {
    merge_kernel<float><<<grid, 64, 0, stream>>>(rows, block_out, block_lse, out_acc, lse_acc);
  }
  return cudaGetLastError();
}

}  // namespace meshsim::kernels::cuda
