#include <doctest/doctest.h>

#include "validate/cpu/shape_kernels.hpp"

using namespace meshsim;

namespace {

class CountingRunner final : public KernelRunner {
 public:
  void run(const Op&, const KernelCall&) override { ++calls; }
  int calls = 0;
};

}  // namespace

TEST_CASE("shape kernels: every kernel kind runs on scratch operands of its shape") {
  const AttentionShape block{1, 4, 2, 16, MaskMode::causal, {{0, 32}}, {{0, 32}}};
  AttentionShape rows = block;
  rows.k.clear();
  const std::vector<KernelCall> calls = {
      {KernelKind::gemm,
       DType::bf16,
       GemmShape{16, 8, 4, true, false, true},
       {},
       {},
       ElementwiseFn::none},
      {KernelKind::gemm, DType::fp32, GemmShape{16, 8, 4}, {}, {}, ElementwiseFn::gelu},
      {KernelKind::gemm,
       DType::fp32,
       GemmShape{16, 8, 4, false, true},
       {},
       {},
       ElementwiseFn::relu},
      {KernelKind::linear_bwd, DType::bf16, GemmShape{16, 8, 4}, {}, {}, ElementwiseFn::gelu},
      {KernelKind::attention_fwd, DType::bf16, block, {}, {}, ElementwiseFn::none},
      {KernelKind::attention_bwd, DType::fp16, block, {}, {}, ElementwiseFn::none},
      {KernelKind::lse_merge, DType::fp32, rows, {}, {}, ElementwiseFn::none},
      {KernelKind::accumulate, DType::fp32, rows, {}, {}, ElementwiseFn::none},
      {KernelKind::accumulate, DType::bf16, VectorShape{100}, {}, {}, ElementwiseFn::none},
      {KernelKind::copy, DType::fp64, VectorShape{100}, {}, {}, ElementwiseFn::none},
      {KernelKind::elementwise, DType::bf16, VectorShape{100}, {}, {}, ElementwiseFn::gelu},
      {KernelKind::elementwise, DType::bf16, VectorShape{100}, {}, {}, ElementwiseFn::bias_add},
      {KernelKind::loss, DType::fp32, VectorShape{100}, {}, {}, ElementwiseFn::none},
      {KernelKind::optimizer_update, DType::bf16, VectorShape{100}, {}, {}, ElementwiseFn::none},
      {KernelKind::optimizer_update, DType::fp32, VectorShape{100}, {}, {}, ElementwiseFn::none},
  };
  ShapeKernelRunner runner;
  for (const auto& c : calls) {
    CAPTURE(to_string(c.kind));
    CHECK(runs_on_scratch(c));
    CHECK_NOTHROW(runner.run(Op{}, c));
  }
}

TEST_CASE("shape kernels: calls naming slots go to the wrapped runner, or fail without one") {
  const KernelCall slotted{KernelKind::copy,   DType::fp32, VectorShape{4}, {0}, {1},
                           ElementwiseFn::none};
  CHECK_FALSE(runs_on_scratch(slotted));
  auto inner = std::make_unique<CountingRunner>();
  CountingRunner* counter = inner.get();
  ShapeKernelRunner with(std::move(inner));
  with.run(Op{}, slotted);
  CHECK(counter->calls == 1);
  ShapeKernelRunner without;
  Op op;
  op.name = "copy x";
  CHECK_THROWS_WITH(without.run(op, slotted), doctest::Contains("op 'copy x' names tensor slots"));
}
