// kernels/cpu on the operands validate/run/kernel_operands binds.
#include "validate/cpu/cpu_ops.hpp"

#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/vector_ops.hpp"
#include "sim/error.hpp"

namespace meshsim::cpu_ops {
namespace {

namespace kcpu = kernels::cpu;

kcpu::Transpose transpose(bool t) {
  return t ? kcpu::Transpose::yes : kcpu::Transpose::no;
}

void run_gemm(const GemmOperands& g) {
  kcpu::gemm(g.a, transpose(g.trans_a), g.b, transpose(g.trans_b), g.c, g.alpha, g.beta);
}

}  // namespace

void attention_forward(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  const AttentionForwardOperands o = bind_attention_forward(v, call, fault);
  kcpu::attention_forward(kcpu::AttentionBlock{o.mask, o.q_rows, o.k_rows, 0.0}, o.q, o.kv.k,
                          o.kv.v, o.out, o.lse);
}

void attention_backward(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  const AttentionBackwardOperands o = bind_attention_backward(v, call, fault);
  kcpu::attention_backward(kcpu::AttentionBlock{o.mask, o.q_rows, o.k_rows, 0.0}, o.q, o.kv.k,
                           o.kv.v, o.out, o.dout, o.lse, o.dq, o.dkv.k, o.dkv.v);
}

void lse_merge(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  const auto o = bind_lse_merge(v, call, fault);
  if (o) kcpu::lse_merge(o->rows, o->block_out, o->block_lse, o->out, o->lse);
}

void gemm(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  run_gemm(bind_gemm(v, call, fault));
}

void accumulate(const SlotViews& v, const KernelCall& call) {
  for (const VectorPair& p : bind_accumulate(v, call)) kcpu::accumulate(p.x, p.y);
}

void copy(const SlotViews& v, const KernelCall& call) {
  const VectorPair p = bind_copy(v, call);
  kcpu::copy(p.x, p.y);
}

void bias(const SlotViews& v, const KernelCall& call) {
  const BiasOperands o = bind_bias(v, call);
  if (o.add) {
    kcpu::add_bias(o.rows, o.bias);
  } else {
    kcpu::bias_grad(o.rows, o.bias);
  }
}

void gemm_activation(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  const GemmActivationOperands o = bind_gemm_activation(v, call, fault);
  if (!o.backward) {
    run_gemm(o.gemm);
    kcpu::activation_forward(o.f, o.pre, o.y);
    return;
  }
  kcpu::activation_backward(o.f, o.pre, o.y, o.dh);
  run_gemm(o.gemm);
}

void linear_backward(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  const LinearBackwardOperands o = bind_linear_backward(v, call, fault);
  kernels::MatrixView dh = o.dy;
  // The gradient through the activation (and the fault's scale) in float32 (float64 for fp64
  // operands) scratch, as a fused epilogue keeps it in registers.
  std::vector<double> scratch;
  if (o.f || o.alpha != 1.0) {
    const bool fp64 = dh.type == kernels::ScalarType::fp64;
    const kernels::ScalarType t = fp64 ? kernels::ScalarType::fp64 : kernels::ScalarType::fp32;
    // double elements hold either type (float32 uses the first half).
    scratch.resize(static_cast<std::size_t>(dh.rows * dh.cols));
    const kernels::MatrixView tmp = kernels::matrix_view(scratch.data(), t, dh.rows, dh.cols);
    if (o.f) {
      kcpu::activation_backward(*o.f, o.pre, kernels::as_vector(dh), kernels::as_vector(tmp));
    } else {
      kcpu::copy(kernels::as_vector(dh), kernels::as_vector(tmp));
    }
    if (o.alpha != 1.0) kcpu::scale(kernels::as_vector(tmp), o.alpha);
    dh = tmp;
  }
  kcpu::linear_backward(o.x, o.w, dh, o.dx, o.dw, kcpu::WeightLayout::in_out);
}

void activation(const SlotViews& v, const KernelCall& call) {
  const ActivationOperands o = bind_activation(v, call);
  kcpu::activation_forward(o.f, o.x, o.y);
}

void loss(const SlotViews& /*v*/, const KernelCall& /*call*/) {
  throw InvariantError(
      "loss kernels are not used by any builder (the pipeline seeds its backward with a given "
      "dout), so the CPU runner does not run them");
}

void optimizer_update(const SlotViews& /*v*/, const KernelCall& /*call*/) {
  throw InvariantError(
      "optimizer_update kernels are not used by any builder, so the CPU runner does not run them");
}

}  // namespace meshsim::cpu_ops
