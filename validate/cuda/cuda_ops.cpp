// The CUDA backend's per-kind steps, operand for operand those of the CPU runner
// (cpu_attention_ops.cpp, cpu_dense_ops.cpp, cpu_mlp_ops.cpp): the views come from SlotViews over
// the host staging store, so shapes, token layouts and row lookups are checked by the same code,
// and are then moved onto the device copy.
#include "validate/cuda/cuda_ops.hpp"

#include <fmt/format.h>

#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/gemm.hpp"
#include "sim/error.hpp"
#include "validate/cpu/cpu_ops.hpp"
#include "validate/cpu/cpu_slot_views.hpp"
#include "validate/cuda/cuda_check.hpp"
#include "validate/run/activation_of.hpp"

namespace meshsim {
namespace {

namespace kc = kernels::cuda;
using cpu_ops::expect_operands;

struct Launch {
  const SlotViews& v;
  const DeviceMemoryPlan& memory;
  std::byte* base;
  cudaStream_t stream;
  cublasHandle_t blas;
  InjectedFault fault;

  // The view on the device copy (an empty slot's null data stays null).
  template <class View>
  View dev(View view) const {
    const std::int64_t offset = memory.offset_of(view.data);
    view.data = offset < 0 ? nullptr : base + offset;
    return view;
  }
  double gemm_alpha() const {
    return fault == InjectedFault::gemm_scale ? cpu_ops::kFaultyGemmAlpha : 1.0;
  }
  void gemm(const kernels::MatrixView& a, bool ta, const kernels::MatrixView& b, bool tb,
            const kernels::MatrixView& c, double alpha, double beta) const {
    CUBLAS_CHECK(kc::gemm(blas, dev(a), ta, dev(b), tb, dev(c), alpha, beta, stream));
  }
};

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

void attention_forward(const Launch& l, const KernelCall& call) {
  expect_operands(call, 2, 2);
  const SlotViews& v = l.v;
  const auto& a = std::get<AttentionShape>(call.shape);
  const SlotId q = call.inputs[0], kv = call.inputs[1], out = call.outputs[0],
               lse = call.outputs[1];
  const std::int64_t part = v.part_holding(kv, a.k);
  const kernels::KvViews k = v.kv(kv, part);
  MESHSIM_CHECK(
      v.token_layout(out) == v.token_layout(q) && v.token_layout(lse) == v.token_layout(q),
      "attention_fwd: out and lse must hold the query slot's positions");
  const kc::AttentionBlock block{mask_of(a, l.fault), kc::device_rows(rows_in(v, q, a.q)),
                                 kc::device_rows(rows_in(v, kv, a.k, part)), 0.0};
  CUDA_CHECK(kc::attention_forward(block, l.dev(v.heads(q, a.heads_q)), l.dev(k.k), l.dev(k.v),
                                   l.dev(v.heads(out, a.heads_q)), l.dev(v.lse(lse)), l.stream));
}

void attention_backward(const Launch& l, const KernelCall& call) {
  expect_operands(call, 5, 2);
  const SlotViews& v = l.v;
  const auto& a = std::get<AttentionShape>(call.shape);
  const SlotId q = call.inputs[0], kv = call.inputs[1], out = call.inputs[2], dout = call.inputs[3],
               lse = call.inputs[4], dq = call.outputs[0], dkv = call.outputs[1];
  const std::int64_t part = v.part_holding(kv, a.k);
  const kernels::KvViews k = v.kv(kv, part);
  const std::vector<kernels::RowSpan> k_rows = rows_in(v, kv, a.k, part);
  MESHSIM_CHECK(rows_in(v, dkv, a.k) == k_rows,
                "attention_bwd: dK/dV must hold the positions of the K/V it differentiates");
  const kc::AttentionBlock block{mask_of(a, l.fault), kc::device_rows(rows_in(v, q, a.q)),
                                 kc::device_rows(k_rows), 0.0};
  const kernels::KvViews d = v.kv(dkv);
  CUDA_CHECK(kc::attention_backward(block, l.dev(v.heads(q, a.heads_q)), l.dev(k.k), l.dev(k.v),
                                    l.dev(v.heads(out, a.heads_q)), l.dev(v.heads(dout, a.heads_q)),
                                    l.dev(v.lse(lse)), l.dev(v.heads(dq, a.heads_q)), l.dev(d.k),
                                    l.dev(d.v), l.stream));
}

void lse_merge(const Launch& l, const KernelCall& call) {
  expect_operands(call, 4, 2);
  const SlotViews& v = l.v;
  const auto& a = std::get<AttentionShape>(call.shape);
  const SlotId blk_out = call.inputs[0], blk_lse = call.inputs[1], out = call.inputs[2],
               lse = call.inputs[3];
  MESHSIM_CHECK(call.outputs[0] == out && call.outputs[1] == lse,
                "lse_merge merges into its accumulator inputs");
  if (l.fault == InjectedFault::lse_merge) return;  // the merged output keeps the first block only
  const std::vector<kernels::RowSpan> rows = rows_in(v, out, a.q);
  MESHSIM_CHECK(rows_in(v, blk_out, a.q) == rows, "lse_merge: block and accumulator rows differ");
  CUDA_CHECK(kc::lse_merge(kc::device_rows(rows), l.dev(v.heads(blk_out, a.heads_q)),
                           l.dev(v.lse(blk_lse)), l.dev(v.heads(out, a.heads_q)), l.dev(v.lse(lse)),
                           l.stream));
}

void row_accumulate(const Launch& l, const KernelCall& call) {
  expect_operands(call, 2, 1);
  const SlotViews& v = l.v;
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
  const std::size_t o = kv ? 1 : 0;
  MESHSIM_CHECK(sy.shape.size() == o + 4, fmt::format("accumulate: slot '{}' shape", sy.name));
  const std::int64_t halves = kv ? 2 : 1, batch = sy.shape[o], tokens = sy.shape[o + 1],
                     width = sy.shape[o + 2] * sy.shape[o + 3];
  const kernels::VectorView vx = v.vector(x), vy = v.vector(y);
  for (std::int64_t h = 0; h < halves; ++h) {
    for (std::int64_t b = 0; b < batch; ++b) {
      for (const auto& r : rows) {
        const std::int64_t at = ((h * batch + b) * tokens + r.row) * width;
        CUDA_CHECK(kc::accumulate(l.dev(kernels::sub_vector(vx, at, r.count * width)),
                                  l.dev(kernels::sub_vector(vy, at, r.count * width)), 1.0,
                                  l.stream));
      }
    }
  }
}

void expect_outputs(const KernelCall& call, std::size_t min_inputs, std::size_t outputs) {
  MESHSIM_CHECK(call.inputs.size() >= min_inputs && call.outputs.size() == outputs,
                fmt::format("{} takes at least {} inputs and {} outputs", to_string(call.kind),
                            min_inputs, outputs));
}

void gemm(const Launch& l, const KernelCall& call) {
  expect_outputs(call, 2, 1);
  const SlotViews& v = l.v;
  const auto& g = std::get<GemmShape>(call.shape);
  const SlotId a = call.inputs[0], b = call.inputs[1], c = call.outputs[0];
  l.gemm(g.trans_a ? v.matrix(a, g.k, g.m) : v.matrix(a, g.m, g.k), g.trans_a,
         g.trans_b ? v.matrix(b, g.n, g.k) : v.matrix(b, g.k, g.n), g.trans_b,
         v.matrix(c, g.m, g.n), l.gemm_alpha(), g.accumulate ? 1.0 : 0.0);
}

void accumulate(const Launch& l, const KernelCall& call) {
  expect_outputs(call, 2, 1);
  const SlotViews& v = l.v;
  const std::int64_t n = std::get<VectorShape>(call.shape).elements;
  const SlotId x = call.inputs[0], y = call.inputs[1];
  MESHSIM_CHECK(call.outputs[0] == y, "accumulate adds into its second input");
  MESHSIM_CHECK(n <= v.elements(x) && n <= v.elements(y), "accumulate: more elements than slots");
  CUDA_CHECK(kc::accumulate(l.dev(kernels::sub_vector(v.vector(x), 0, n)),
                            l.dev(kernels::sub_vector(v.vector(y), 0, n)), 1.0, l.stream));
}

void copy(const Launch& l, const KernelCall& call) {
  expect_outputs(call, 1, 1);
  const SlotViews& v = l.v;
  const std::int64_t n = std::get<VectorShape>(call.shape).elements;
  const SlotId x = call.inputs[0], y = call.outputs[0];
  MESHSIM_CHECK(n <= v.elements(x) && n <= v.elements(y), "copy: more elements than slots");
  CUDA_CHECK(kc::copy(l.dev(kernels::sub_vector(v.vector(x), 0, n)),
                      l.dev(kernels::sub_vector(v.vector(y), 0, n)), l.stream));
}

void bias(const Launch& l, const KernelCall& call) {
  expect_outputs(call, 2, 1);
  const SlotViews& v = l.v;
  if (call.fn == ElementwiseFn::bias_add) {
    const SlotId y = call.inputs[0], b = call.inputs[1];
    const std::int64_t n = v.elements(b);
    CUDA_CHECK(
        kc::add_bias(l.dev(v.matrix(y, v.elements(y) / n, n)), l.dev(v.vector(b)), l.stream));
  } else {
    const SlotId dy = call.inputs[0], db = call.outputs[0];
    const std::int64_t n = v.elements(db);
    CUDA_CHECK(
        kc::bias_grad(l.dev(v.matrix(dy, v.elements(dy) / n, n)), l.dev(v.vector(db)), l.stream));
  }
}

void gemm_activation(const Launch& l, const KernelCall& call) {
  const SlotViews& v = l.v;
  const auto& g = std::get<GemmShape>(call.shape);
  const kernels::Activation f = activation_of(call.fn);
  MESHSIM_CHECK(!g.trans_a && !g.accumulate,
                "a gemm with an activation neither transposes A nor accumulates");
  if (!g.trans_b) {
    expect_operands(call, 2, 2);  // pre = x w, y = f(pre)
    const SlotId x = call.inputs[0], w = call.inputs[1], y = call.outputs[0], pre = call.outputs[1];
    l.gemm(v.matrix(x, g.m, g.k), false, v.matrix(w, g.k, g.n), false, v.matrix(pre, g.m, g.n),
           l.gemm_alpha(), 0.0);
    CUDA_CHECK(kc::activation_forward(f, l.dev(kernels::as_vector(v.matrix(pre, g.m, g.n))),
                                      l.dev(kernels::as_vector(v.matrix(y, g.m, g.n))), l.stream));
    return;
  }
  expect_operands(call, 3, 2);  // dh = f'(pre) dy, dx = dh w^T
  const SlotId dy = call.inputs[0], w = call.inputs[1], pre = call.inputs[2], dx = call.outputs[0],
               dh = call.outputs[1];
  const kernels::MatrixView dh_view = v.matrix(dh, g.m, g.k);
  CUDA_CHECK(kc::activation_backward(f, l.dev(kernels::as_vector(v.matrix(pre, g.m, g.k))),
                                     l.dev(kernels::as_vector(v.matrix(dy, g.m, g.k))),
                                     l.dev(kernels::as_vector(dh_view)), l.stream));
  l.gemm(dh_view, false, v.matrix(w, g.n, g.k), true, v.matrix(dx, g.m, g.n), l.gemm_alpha(), 0.0);
}

void linear_backward(const Launch& l, const KernelCall& call) {
  const SlotViews& v = l.v;
  const auto& g = std::get<GemmShape>(call.shape);  // the forward's: m tokens, n out, k in
  MESHSIM_CHECK(!g.trans_a && !g.trans_b, "linear_bwd takes the forward's untransposed shape");
  const bool with_fn = call.fn != ElementwiseFn::none;
  expect_operands(call, with_fn ? 4 : 3, 2);
  const SlotId x = call.inputs[0], w = call.inputs[1], dy = call.inputs[2], dx = call.outputs[0],
               dw = call.outputs[1];
  const kernels::MatrixView dy_view = v.matrix(dy, g.m, g.n);
  kernels::MatrixView dh = l.dev(dy_view);
  void* scratch = nullptr;
  if (with_fn) {
    // dh = f'(pre) dy in float32 (float64 for fp64) scratch, as a fused epilogue keeps it.
    const kernels::ScalarType t = dy_view.type == kernels::ScalarType::fp64
                                      ? kernels::ScalarType::fp64
                                      : kernels::ScalarType::fp32;
    CUDA_CHECK(
        cudaMallocAsync(&scratch, static_cast<std::size_t>(g.m * g.n * scalar_bytes(t)), l.stream));
    dh = kernels::matrix_view(scratch, t, g.m, g.n);
    CUDA_CHECK(kc::activation_backward(
        activation_of(call.fn), l.dev(kernels::as_vector(v.matrix(call.inputs[3], g.m, g.n))),
        l.dev(kernels::as_vector(dy_view)), kernels::as_vector(dh), l.stream));
  }
  // dx = dh w^T (w [k in, n out]), dw += x^T dh; the fault scales dh, so both results.
  CUBLAS_CHECK(kc::gemm(l.blas, dh, false, l.dev(v.matrix(w, g.k, g.n)), true,
                        l.dev(v.matrix(dx, g.m, g.k)), l.gemm_alpha(), 0.0, l.stream));
  CUBLAS_CHECK(kc::gemm(l.blas, l.dev(v.matrix(x, g.m, g.k)), true, dh, false,
                        l.dev(v.matrix(dw, g.k, g.n)), l.gemm_alpha(), 1.0, l.stream));
  if (scratch != nullptr) CUDA_CHECK(cudaFreeAsync(scratch, l.stream));
}

void activation(const Launch& l, const KernelCall& call) {
  expect_operands(call, 1, 1);
  const SlotViews& v = l.v;
  const std::int64_t n = std::get<VectorShape>(call.shape).elements;
  const SlotId x = call.inputs[0], y = call.outputs[0];
  MESHSIM_CHECK(
      n == v.elements(x) && n == v.elements(y),
      fmt::format("{}: {} elements over slots '{}' ({}) and '{}' ({})", to_string(call.fn), n,
                  v.slot(x).name, v.elements(x), v.slot(y).name, v.elements(y)));
  CUDA_CHECK(kc::activation_forward(activation_of(call.fn), l.dev(v.vector(x)), l.dev(v.vector(y)),
                                    l.stream));
}

}  // namespace

void CudaOps::launch(const Op& op, const KernelCall& call, cudaStream_t stream,
                     cublasHandle_t blas) {
  const SlotViews views(store_);
  const Launch l{views, memory_, base_, stream, blas, fault_};
  try {
    switch (call.kind) {
      case KernelKind::gemm:
        if (call.fn == ElementwiseFn::none) {
          gemm(l, call);
        } else {
          gemm_activation(l, call);
        }
        return;
      case KernelKind::linear_bwd:
        linear_backward(l, call);
        return;
      case KernelKind::attention_fwd:
        attention_forward(l, call);
        return;
      case KernelKind::attention_bwd:
        attention_backward(l, call);
        return;
      case KernelKind::lse_merge:
        lse_merge(l, call);
        return;
      case KernelKind::accumulate:
        if (std::holds_alternative<AttentionShape>(call.shape)) {
          row_accumulate(l, call);
        } else {
          accumulate(l, call);
        }
        return;
      case KernelKind::copy:
        copy(l, call);
        return;
      case KernelKind::elementwise:
        if (call.fn == ElementwiseFn::bias_add || call.fn == ElementwiseFn::bias_grad) {
          bias(l, call);
        } else {
          activation(l, call);
        }
        return;
      case KernelKind::loss:
      case KernelKind::optimizer_update:
        throw InvariantError(fmt::format(
            "{} kernels are not used by any builder, so the CUDA backend does not run them",
            to_string(call.kind)));
    }
  } catch (const std::logic_error& e) {  // KernelError and InvariantError: a builder bug
    throw InvariantError(fmt::format("rank {} op {} '{}' ({}): {}", op.rank, op.id, op.name,
                                     to_string(call.kind), e.what()));
  }
}

}  // namespace meshsim
