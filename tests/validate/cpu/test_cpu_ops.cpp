#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/elementwise_math.hpp"
#include "kernels/reference/gemm.hpp"
#include "sim/error.hpp"
#include "validate/cpu/cpu_ops.hpp"
#include "validate/tensors/tensor_store.hpp"
#include "validate/tensors/value_generator.hpp"

using namespace meshsim;

namespace {

// One rank's slots filled with seeded values; the ops run on them through SlotViews.
struct Bench {
  explicit Bench(const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& slots,
                 DType dtype = DType::fp32)
      : builder(Mesh({{"x", 1}}, 1), true, "mlp ops") {
    for (const auto& [name, shape] : slots) {
      ids.push_back(builder.slot(0, name, name == "dw" ? DType::fp32 : dtype, shape));
    }
    program = builder.peek();
    store = std::make_unique<TensorStore>(program, 0);
    for (SlotId id : ids) {
      const TensorSlot& s = program.slots[static_cast<std::size_t>(id)];
      const ValueGenerator gen(7, s.name);
      const auto n = TensorStore::slot_bytes(s) / dtype_bytes(s.dtype);
      for (std::int64_t i = 0; i < n; ++i)
        store_element(s.dtype, store->bytes(id).data(), i, gen.raw(i));
    }
  }
  // The slot's values as stored, widened to double.
  std::vector<double> values(SlotId id) const {
    const TensorSlot& s = program.slots[static_cast<std::size_t>(id)];
    std::vector<double> out(
        static_cast<std::size_t>(TensorStore::slot_bytes(s) / dtype_bytes(s.dtype)));
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = load_element(s.dtype, store->bytes(id).data(), static_cast<std::int64_t>(i));
    }
    return out;
  }
  SlotViews views() { return SlotViews(*store); }

  ProgramBuilder builder;
  Program program;
  std::vector<SlotId> ids;
  std::unique_ptr<TensorStore> store;
};

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - want[i]) <= tol * (1.0 + std::abs(want[i])));
  }
}

constexpr std::int64_t kT = 5, kIn = 7, kOut = 3;  // tokens, inputs, outputs

double f_of(ElementwiseFn fn, double z) {
  return kernels::activation_value(
      fn == ElementwiseFn::relu ? kernels::Activation::relu : kernels::Activation::gelu, z);
}
double df_of(ElementwiseFn fn, double z) {
  return kernels::activation_derivative(
      fn == ElementwiseFn::relu ? kernels::Activation::relu : kernels::Activation::gelu, z);
}

}  // namespace

TEST_CASE("gemm with an activation epilogue: pre = x w, y = f(pre)") {
  for (ElementwiseFn fn : {ElementwiseFn::relu, ElementwiseFn::gelu}) {
    CAPTURE(to_string(fn));
    Bench b({{"x", {kT, kIn}}, {"w", {kIn, kOut}}, {"y", {kT, kOut}}, {"pre", {kT, kOut}}});
    const SlotId x = b.ids[0], w = b.ids[1], y = b.ids[2], pre = b.ids[3];
    const KernelCall call{KernelKind::gemm, DType::fp32, GemmShape{kT, kOut, kIn},
                          {x, w},           {y, pre},    fn};
    cpu_ops::gemm_activation(b.views(), call, InjectedFault::none);
    std::vector<double> want_pre(static_cast<std::size_t>(kT * kOut));
    kernels::reference::gemm(kT, kOut, kIn, false, false, 1.0, b.values(x), b.values(w), 0.0,
                             want_pre);
    std::vector<double> want_y = want_pre;
    for (double& v : want_y) v = f_of(fn, v);
    check_close(b.values(pre), want_pre, 1e-5);
    check_close(b.values(y), want_y, 1e-5);
    // the injected fault: every GEMM result too large by kFaultyGemmAlpha
    cpu_ops::gemm_activation(b.views(), call, InjectedFault::gemm_scale);
    for (double& v : want_pre) v *= kFaultyGemmAlpha;
    check_close(b.values(pre), want_pre, 1e-5);
  }
}

TEST_CASE("split backward B: dh = f'(pre) dy, dx = dh w^T") {
  Bench b({{"dy", {kT, kOut}},
           {"w", {kIn, kOut}},
           {"pre", {kT, kOut}},
           {"dx", {kT, kIn}},
           {"dh", {kT, kOut}}});
  const SlotId dy = b.ids[0], w = b.ids[1], pre = b.ids[2], dx = b.ids[3], dh = b.ids[4];
  const KernelCall call{KernelKind::gemm, DType::fp32, GemmShape{kT, kIn, kOut, false, true, false},
                        {dy, w, pre},     {dx, dh},    ElementwiseFn::gelu};
  cpu_ops::gemm_activation(b.views(), call, InjectedFault::none);
  const auto dyv = b.values(dy), prev = b.values(pre);
  std::vector<double> want_dh(dyv.size());
  for (std::size_t i = 0; i < dyv.size(); ++i)
    want_dh[i] = df_of(ElementwiseFn::gelu, prev[i]) * dyv[i];
  std::vector<double> want_dx(static_cast<std::size_t>(kT * kIn));
  kernels::reference::gemm(kT, kIn, kOut, false, true, 1.0, want_dh, b.values(w), 0.0, want_dx);
  check_close(b.values(dh), want_dh, 1e-5);
  check_close(b.values(dx), want_dx, 1e-5);
}

TEST_CASE("linear_bwd with and without an activation: dx = dh w^T, dw += x^T dh") {
  for (ElementwiseFn fn : {ElementwiseFn::none, ElementwiseFn::relu, ElementwiseFn::gelu}) {
    for (DType dtype : {DType::fp32, DType::bf16}) {
      CAPTURE(to_string(fn));
      CAPTURE(to_string(dtype));
      Bench b({{"x", {kT, kIn}},
               {"w", {kIn, kOut}},
               {"dy", {kT, kOut}},
               {"pre", {kT, kOut}},
               {"dx", {kT, kIn}},
               {"dw", {kIn, kOut}}},
              dtype);
      const SlotId x = b.ids[0], w = b.ids[1], dy = b.ids[2], pre = b.ids[3], dx = b.ids[4],
                   dw = b.ids[5];
      KernelCall call{
          KernelKind::linear_bwd, dtype, GemmShape{kT, kOut, kIn}, {x, w, dy}, {dx, dw}, fn};
      if (fn != ElementwiseFn::none) call.inputs.push_back(pre);
      const auto dw_before = b.values(dw);
      cpu_ops::linear_backward(b.views(), call, InjectedFault::none);
      const auto dyv = b.values(dy), prev = b.values(pre);
      std::vector<double> dh(dyv.size());
      for (std::size_t i = 0; i < dh.size(); ++i) {
        dh[i] = fn == ElementwiseFn::none ? dyv[i] : df_of(fn, prev[i]) * dyv[i];
      }
      std::vector<double> want_dx(static_cast<std::size_t>(kT * kIn));
      std::vector<double> want_dw = dw_before;  // accumulated
      kernels::reference::linear_backward(kT, kIn, kOut, false, b.values(x), b.values(w), dh,
                                          want_dx, want_dw);
      const double tol = dtype == DType::fp32 ? 1e-5 : 1e-2;
      check_close(b.values(dx), want_dx, tol);
      check_close(b.values(dw), want_dw, 1e-5 + (dtype == DType::fp32 ? 0.0 : 1e-2));
    }
  }
}

TEST_CASE("elementwise activation, and the kernels no builder emits") {
  Bench b({{"x", {4, 6}}, {"y", {24}}});
  const SlotId x = b.ids[0], y = b.ids[1];
  const KernelCall call{KernelKind::elementwise, DType::fp32, VectorShape{24}, {x}, {y},
                        ElementwiseFn::relu};
  cpu_ops::activation(b.views(), call);
  auto want = b.values(x);
  for (double& v : want) v = v > 0 ? v : 0.0;
  check_close(b.values(y), want, 0.0);
  KernelCall wrong = call;
  wrong.shape = VectorShape{23};
  CHECK_THROWS_AS(cpu_ops::activation(b.views(), wrong), InvariantError);
  CHECK_THROWS_AS(cpu_ops::loss(b.views(), call), InvariantError);
  CHECK_THROWS_AS(cpu_ops::optimizer_update(b.views(), call), InvariantError);
}
