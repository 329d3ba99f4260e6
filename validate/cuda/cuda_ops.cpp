// The CUDA backend's per-kind steps on the operands validate/run/kernel_operands binds (the CPU
// runner's too): the views come from SlotViews over the host staging store, so shapes, token
// layouts and row lookups are checked by the same code, and are then moved onto the device copy.
#include "validate/cuda/cuda_ops.hpp"

#include <fmt/format.h>

#include "kernels/cuda/cuda_kernels.hpp"
#include "kernels/cuda/gemm.hpp"
#include "sim/error.hpp"
#include "validate/cuda/cuda_check.hpp"
#include "validate/run/kernel_operands.hpp"
#include "validate/run/slot_views.hpp"

namespace meshsim {
namespace {

namespace kc = kernels::cuda;

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
  void gemm(const kernels::MatrixView& a, bool ta, const kernels::MatrixView& b, bool tb,
            const kernels::MatrixView& c, double alpha, double beta) const {
    CUBLAS_CHECK(kc::gemm(blas, dev(a), ta, dev(b), tb, dev(c), alpha, beta, stream));
  }
};

void gemm(const Launch& l, const GemmOperands& g) {
  l.gemm(g.a, g.trans_a, g.b, g.trans_b, g.c, g.alpha, g.beta);
}

void attention_forward(const Launch& l, const KernelCall& call) {
  const AttentionForwardOperands o = bind_attention_forward(l.v, call, l.fault);
  const kc::AttentionBlock block{o.mask, kc::device_rows(o.q_rows), kc::device_rows(o.k_rows), 0.0};
  CUDA_CHECK(kc::attention_forward(block, l.dev(o.q), l.dev(o.kv.k), l.dev(o.kv.v), l.dev(o.out),
                                   l.dev(o.lse), l.stream));
}

void attention_backward(const Launch& l, const KernelCall& call) {
  const AttentionBackwardOperands o = bind_attention_backward(l.v, call, l.fault);
  const kc::AttentionBlock block{o.mask, kc::device_rows(o.q_rows), kc::device_rows(o.k_rows), 0.0};
  CUDA_CHECK(kc::attention_backward(block, l.dev(o.q), l.dev(o.kv.k), l.dev(o.kv.v), l.dev(o.out),
                                    l.dev(o.dout), l.dev(o.lse), l.dev(o.dq), l.dev(o.dkv.k),
                                    l.dev(o.dkv.v), l.stream));
}

void lse_merge(const Launch& l, const KernelCall& call) {
  const auto o = bind_lse_merge(l.v, call, l.fault);
  if (!o) return;
  CUDA_CHECK(kc::lse_merge(kc::device_rows(o->rows), l.dev(o->block_out), l.dev(o->block_lse),
                           l.dev(o->out), l.dev(o->lse), l.stream));
}

void accumulate(const Launch& l, const KernelCall& call) {
  for (const VectorPair& p : bind_accumulate(l.v, call)) {
    CUDA_CHECK(kc::accumulate(l.dev(p.x), l.dev(p.y), 1.0, l.stream));
  }
}

void copy(const Launch& l, const KernelCall& call) {
  const VectorPair p = bind_copy(l.v, call);
  CUDA_CHECK(kc::copy(l.dev(p.x), l.dev(p.y), l.stream));
}

void bias(const Launch& l, const KernelCall& call) {
  const BiasOperands o = bind_bias(l.v, call);
  if (o.add) {
    CUDA_CHECK(kc::add_bias(l.dev(o.rows), l.dev(o.bias), l.stream));
  } else {
    CUDA_CHECK(kc::bias_grad(l.dev(o.rows), l.dev(o.bias), l.stream));
  }
}

void gemm_activation(const Launch& l, const KernelCall& call) {
  const GemmActivationOperands o = bind_gemm_activation(l.v, call, l.fault);
  if (!o.backward) {
    gemm(l, o.gemm);
    CUDA_CHECK(kc::activation_forward(o.f, l.dev(o.pre), l.dev(o.y), l.stream));
    return;
  }
  CUDA_CHECK(kc::activation_backward(o.f, l.dev(o.pre), l.dev(o.y), l.dev(o.dh), l.stream));
  gemm(l, o.gemm);
}

void linear_backward(const Launch& l, const KernelCall& call) {
  const LinearBackwardOperands o = bind_linear_backward(l.v, call, l.fault);
  kernels::MatrixView dh = l.dev(o.dy);
  void* scratch = nullptr;
  if (o.f) {
    // dh = f'(pre) dy in float32 (float64 for fp64) scratch, as a fused epilogue keeps it.
    const kernels::ScalarType t = o.dy.type == kernels::ScalarType::fp64
                                      ? kernels::ScalarType::fp64
                                      : kernels::ScalarType::fp32;
    CUDA_CHECK(cudaMallocAsync(
        &scratch, static_cast<std::size_t>(dh.rows * dh.cols * scalar_bytes(t)), l.stream));
    dh = kernels::matrix_view(scratch, t, dh.rows, dh.cols);
    CUDA_CHECK(kc::activation_backward(*o.f, l.dev(o.pre), l.dev(kernels::as_vector(o.dy)),
                                       kernels::as_vector(dh), l.stream));
  }
  // dx = dh w^T (w [k in, n out]), dw += x^T dh; the fault scales dh, so both results.
  CUBLAS_CHECK(kc::gemm(l.blas, dh, false, l.dev(o.w), true, l.dev(o.dx), o.alpha, 0.0, l.stream));
  CUBLAS_CHECK(kc::gemm(l.blas, l.dev(o.x), true, dh, false, l.dev(o.dw), o.alpha, 1.0, l.stream));
  if (scratch != nullptr) CUDA_CHECK(cudaFreeAsync(scratch, l.stream));
}

void activation(const Launch& l, const KernelCall& call) {
  const ActivationOperands o = bind_activation(l.v, call);
  CUDA_CHECK(kc::activation_forward(o.f, l.dev(o.x), l.dev(o.y), l.stream));
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
          gemm(l, bind_gemm(l.v, call, l.fault));
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
        accumulate(l, call);
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
