// The CPU runner's MLP steps, used by the pipeline builder (operand lists in sim/kernel_call.hpp's
// ElementwiseFn comment and schedules/pipeline.hpp):
//   gemm fn=f             {x, w} -> {y, pre}:        pre = x w, y = f(pre);
//   gemm fn=f, trans_b    {dy, w, pre} -> {dx, dh}:  dh = f'(pre) dy, dx = dh w^T;
//   linear_bwd [fn=f]     {x, w, dy[, pre]} -> {dx, dw}: dh = f'(pre) dy (dy without fn),
//                         dx = dh w^T, dw += x^T dh; w [in, out] (WeightLayout::in_out);
//   elementwise fn=f      {x} -> {y}:                y = f(x).
// InjectedFault::gemm_scale scales every GEMM result by kFaultyGemmAlpha (linear_bwd: both dx and
// dw, through dh).
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/vector_ops.hpp"
#include "sim/error.hpp"
#include "validate/cpu/cpu_ops.hpp"
#include "validate/run/activation_of.hpp"

namespace meshsim::cpu_ops {
namespace {

using kernels::cpu::Transpose;

double gemm_alpha(InjectedFault fault) {
  return fault == InjectedFault::gemm_scale ? kFaultyGemmAlpha : 1.0;
}

}  // namespace

void gemm_activation(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  const auto& g = std::get<GemmShape>(call.shape);
  const kernels::Activation f = activation_of(call.fn);
  MESHSIM_CHECK(!g.trans_a && !g.accumulate,
                "a gemm with an activation neither transposes A nor accumulates");
  if (!g.trans_b) {
    // Forward: pre [m, n] = x [m, k] w [k, n], y = f(pre).
    expect_operands(call, 2, 2);
    const SlotId x = call.inputs[0], w = call.inputs[1], y = call.outputs[0], pre = call.outputs[1];
    kernels::cpu::gemm(v.matrix(x, g.m, g.k), Transpose::no, v.matrix(w, g.k, g.n), Transpose::no,
                       v.matrix(pre, g.m, g.n), gemm_alpha(fault), 0.0);
    kernels::cpu::activation_forward(f, kernels::as_vector(v.matrix(pre, g.m, g.n)),
                                     kernels::as_vector(v.matrix(y, g.m, g.n)));
    return;
  }
  // Input gradient of a split backward: dh [m, k] = f'(pre) dy, dx [m, n] = dh w^T, w [n, k].
  expect_operands(call, 3, 2);
  const SlotId dy = call.inputs[0], w = call.inputs[1], pre = call.inputs[2], dx = call.outputs[0],
               dh = call.outputs[1];
  const kernels::MatrixView dh_view = v.matrix(dh, g.m, g.k);
  kernels::cpu::activation_backward(f, kernels::as_vector(v.matrix(pre, g.m, g.k)),
                                    kernels::as_vector(v.matrix(dy, g.m, g.k)),
                                    kernels::as_vector(dh_view));
  kernels::cpu::gemm(dh_view, Transpose::no, v.matrix(w, g.n, g.k), Transpose::yes,
                     v.matrix(dx, g.m, g.n), gemm_alpha(fault), 0.0);
}

void linear_backward(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  const auto& g = std::get<GemmShape>(call.shape);  // the forward's: m tokens, n out, k in
  MESHSIM_CHECK(!g.trans_a && !g.trans_b, "linear_bwd takes the forward's untransposed shape");
  const bool with_fn = call.fn != ElementwiseFn::none;
  expect_operands(call, with_fn ? 4 : 3, 2);
  const SlotId x = call.inputs[0], w = call.inputs[1], dy = call.inputs[2], dx = call.outputs[0],
               dw = call.outputs[1];
  kernels::MatrixView dh = v.matrix(dy, g.m, g.n);
  // The gradient through the activation (and the fault's scale) in float32 (float64 for fp64
  // operands) scratch, as a fused epilogue keeps it in registers.
  std::vector<double> scratch;
  if (with_fn || fault == InjectedFault::gemm_scale) {
    const bool fp64 = dh.type == kernels::ScalarType::fp64;
    const kernels::ScalarType t = fp64 ? kernels::ScalarType::fp64 : kernels::ScalarType::fp32;
    // double elements hold either type (float32 uses the first half).
    scratch.resize(static_cast<std::size_t>(g.m * g.n));
    const kernels::MatrixView tmp = kernels::matrix_view(scratch.data(), t, g.m, g.n);
    if (with_fn) {
      kernels::cpu::activation_backward(activation_of(call.fn),
                                        kernels::as_vector(v.matrix(call.inputs[3], g.m, g.n)),
                                        kernels::as_vector(dh), kernels::as_vector(tmp));
    } else {
      kernels::cpu::copy(kernels::as_vector(dh), kernels::as_vector(tmp));
    }
    if (fault == InjectedFault::gemm_scale) {
      kernels::cpu::scale(kernels::as_vector(tmp), kFaultyGemmAlpha);
    }
    dh = tmp;
  }
  kernels::cpu::linear_backward(v.matrix(x, g.m, g.k), v.matrix(w, g.k, g.n), dh,
                                v.matrix(dx, g.m, g.k), v.matrix(dw, g.k, g.n),
                                kernels::cpu::WeightLayout::in_out);
}

void activation(const SlotViews& v, const KernelCall& call) {
  expect_operands(call, 1, 1);
  const std::int64_t n = std::get<VectorShape>(call.shape).elements;
  const SlotId x = call.inputs[0], y = call.outputs[0];
  MESHSIM_CHECK(
      n == v.elements(x) && n == v.elements(y),
      fmt::format("{}: {} elements over slots '{}' ({}) and '{}' ({})", to_string(call.fn), n,
                  v.slot(x).name, v.elements(x), v.slot(y).name, v.elements(y)));
  kernels::cpu::activation_forward(activation_of(call.fn), v.vector(x), v.vector(y));
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
