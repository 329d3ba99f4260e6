// The CPU runner's dense steps used by the ring and tensor-parallel builders: gemm {A, B[, C]} ->
// {C} (C among the inputs when it accumulates), accumulate {x, y} -> {y} over the first
// `elements`, copy {x} -> {y} (a cast), bias_add {y, b} -> {y} and bias_grad {dy, db} -> {db}.
#include <fmt/format.h>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/vector_ops.hpp"
#include "sim/error.hpp"
#include "validate/cpu/cpu_ops.hpp"

namespace meshsim::cpu_ops {
namespace {

void expect_outputs(const KernelCall& call, std::size_t min_inputs, std::size_t outputs) {
  MESHSIM_CHECK(call.inputs.size() >= min_inputs && call.outputs.size() == outputs,
                fmt::format("{} takes at least {} inputs and {} outputs", to_string(call.kind),
                            min_inputs, outputs));
}

}  // namespace

void gemm(const SlotViews& v, const KernelCall& call, InjectedFault fault) {
  expect_outputs(call, 2, 1);
  const auto& g = std::get<GemmShape>(call.shape);
  const SlotId a = call.inputs[0], b = call.inputs[1], c = call.outputs[0];
  const auto ta = g.trans_a ? kernels::cpu::Transpose::yes : kernels::cpu::Transpose::no;
  const auto tb = g.trans_b ? kernels::cpu::Transpose::yes : kernels::cpu::Transpose::no;
  const double alpha = fault == InjectedFault::gemm_scale ? kFaultyGemmAlpha : 1.0;
  kernels::cpu::gemm(g.trans_a ? v.matrix(a, g.k, g.m) : v.matrix(a, g.m, g.k), ta,
                     g.trans_b ? v.matrix(b, g.n, g.k) : v.matrix(b, g.k, g.n), tb,
                     v.matrix(c, g.m, g.n), alpha, g.accumulate ? 1.0 : 0.0);
}

void accumulate(const SlotViews& v, const KernelCall& call) {
  expect_outputs(call, 2, 1);
  const std::int64_t n = std::get<VectorShape>(call.shape).elements;
  const SlotId x = call.inputs[0], y = call.inputs[1];
  MESHSIM_CHECK(call.outputs[0] == y, "accumulate adds into its second input");
  MESHSIM_CHECK(n <= v.elements(x) && n <= v.elements(y), "accumulate: more elements than slots");
  kernels::cpu::accumulate(kernels::sub_vector(v.vector(x), 0, n),
                           kernels::sub_vector(v.vector(y), 0, n));
}

void copy(const SlotViews& v, const KernelCall& call) {
  expect_outputs(call, 1, 1);
  const std::int64_t n = std::get<VectorShape>(call.shape).elements;
  const SlotId x = call.inputs[0], y = call.outputs[0];
  MESHSIM_CHECK(n <= v.elements(x) && n <= v.elements(y), "copy: more elements than slots");
  kernels::cpu::copy(kernels::sub_vector(v.vector(x), 0, n),
                     kernels::sub_vector(v.vector(y), 0, n));
}

void bias(const SlotViews& v, const KernelCall& call) {
  expect_outputs(call, 2, 1);
  if (call.fn == ElementwiseFn::bias_add) {
    const SlotId y = call.inputs[0], b = call.inputs[1];
    const std::int64_t n = v.elements(b);
    kernels::cpu::add_bias(v.matrix(y, v.elements(y) / n, n), v.vector(b));
  } else {
    const SlotId dy = call.inputs[0], db = call.outputs[0];
    const std::int64_t n = v.elements(db);
    kernels::cpu::bias_grad(v.matrix(dy, v.elements(dy) / n, n), v.vector(db));
  }
}

}  // namespace meshsim::cpu_ops
