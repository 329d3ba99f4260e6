#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "tests/validate/thread_world.hpp"
#include "validate/check/numerics.hpp"
#include "validate/check/workload_registry.hpp"
#include "validate/cpu/cpu_kernel_runner.hpp"

using namespace meshsim;

namespace {

// A run of `workload` on its ranks as threads with the CPU kernels; rank 0's numerics.
NumericsReport run_and_check(const Workload& workload, InjectedFault fault = InjectedFault::none) {
  ValidateOptions options;
  options.gather_tensors = true;
  options.stall_timeout = std::chrono::milliseconds(60000);
  options.make_kernels = [fault](TensorStore& store) -> std::unique_ptr<KernelRunner> {
    return std::make_unique<CpuKernelRunner>(store, fault);
  };
  const auto results =
      testing::validate_in_threads(build_program(workload), tensor_layout(workload), options);
  return check_numerics(workload, results[0].tensors);
}

std::string describe(const NumericsReport& r) {
  std::string s;
  for (const auto& t : r.tensors) {
    s += t.tensor + " " + std::to_string(t.max_rel_error) + (t.pass ? " ok; " : " FAIL; ");
  }
  return s;
}

RingAttentionConfig ring(int cp, RingVariant variant, KvRotation rotate, bool causal) {
  RingAttentionConfig c;
  c.cp = cp;
  c.seq = 8 * cp;
  c.batch = 2;
  c.heads = 4;
  c.kv_heads = 2;  // grouped-query attention: heads 0, 1 use K/V head 0
  c.head_dim = 8;
  c.variant = variant;
  c.kv_rotation = rotate;
  c.causal = causal;
  c.dtype = DType::fp32;
  return c;
}

}  // namespace

TEST_CASE("compare_tensor: normwise relative error against the tolerance of the dtype") {
  GlobalTensorData got{"t", {3}, DType::bf16, {1.0, -2.0, 4.01}, 3};
  // max |got - ref| = 0.01 at the last element; max |ref| = 4: relative 0.0025 <= 2e-2.
  const TensorNumerics ok = compare_tensor(got, {1.0, -2.0, 4.0});
  CHECK(ok.max_abs_error == doctest::Approx(0.01));
  CHECK(ok.max_rel_error == doctest::Approx(0.0025));
  CHECK(ok.tolerance == 2e-2);
  CHECK(ok.pass);
  got.dtype = DType::fp32;  // 0.0025 > 1e-4
  CHECK_FALSE(compare_tensor(got, {1.0, -2.0, 4.0}).pass);
  // Matching -inf (a query with no visible key) is exact; a NaN never passes.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(compare_tensor(GlobalTensorData{"l", {2}, DType::fp32, {-inf, 1.0}, 2}, {-inf, 1.0}).pass);
  CHECK_FALSE(
      compare_tensor(GlobalTensorData{"l", {2}, DType::fp32, {std::nan(""), 1.0}, 2}, {0.0, 1.0})
          .pass);
}

TEST_CASE("ring attention equals float64 full attention: every variant, rotation and mask") {
  struct Case {
    RingVariant variant;
    bool causal;
  };
  for (const Case k : {Case{RingVariant::ring, true}, Case{RingVariant::ring, false},
                       Case{RingVariant::zigzag, true}}) {
    for (KvRotation rotate : {KvRotation::p2p, KvRotation::all_gather, KvRotation::all_to_all}) {
      for (int cp : {1, 2, 3}) {
        const RingAttentionConfig c = ring(cp, k.variant, rotate, k.causal);
        INFO(to_string(c.variant), " ", to_string(c.kv_rotation), " causal=", c.causal, " cp=", cp);
        const NumericsReport r = run_and_check(Workload{c});
        INFO(describe(r));
        CHECK(r.tensors.size() == 5);  // out, lse, dq, dk, dv
        CHECK(r.pass);
      }
    }
  }
}

TEST_CASE("ring attention numerics: forward only, backward only from given out/lse, bf16 storage") {
  RingAttentionConfig c = ring(4, RingVariant::zigzag, KvRotation::p2p, true);
  c.pass = AttentionPass::fwd;
  NumericsReport r = run_and_check(Workload{c});
  CHECK(r.tensors.size() == 2);  // out, lse
  CHECK(r.pass);
  c.pass = AttentionPass::bwd;
  r = run_and_check(Workload{c});
  INFO(describe(r));
  CHECK(r.tensors.size() == 3);  // dq, dk, dv
  CHECK(r.pass);
  c.pass = AttentionPass::fwd_bwd;
  c.dtype = DType::bf16;
  r = run_and_check(Workload{c});
  INFO(describe(r));
  CHECK(r.pass);
  CHECK(r.tensors[0].max_rel_error > 1e-5);  // bf16 rounding is visible: not a float copy
  c.dtype = DType::fp64;                     // fp64 accumulators too: every tensor within 1e-9
  r = run_and_check(Workload{c});
  INFO(describe(r));
  CHECK(r.pass);
  CHECK(r.tensors[1].dtype == DType::fp64);  // lse
}

TEST_CASE("tensor-parallel linear numerics: column and row, both modes, with bias") {
  for (TpLinearKind kind : {TpLinearKind::column, TpLinearKind::row}) {
    for (TpMode mode : {TpMode::all_reduce, TpMode::reduce_scatter}) {
      TpLinearConfig c;
      c.tp = 2;
      c.tokens = 8;
      c.in_features = 12;
      c.out_features = 16;
      c.kind = kind;
      c.mode = mode;
      c.bias = true;
      c.dtype = DType::fp32;
      const NumericsReport r = run_and_check(Workload{c});
      INFO(to_string(kind), " ", to_string(mode), ": ", describe(r));
      CHECK(r.tensors.size() == 4);  // y, dx, dw, db
      CHECK(r.pass);
    }
  }
}

TEST_CASE("an injected kernel fault makes the numerics FAIL") {
  const RingAttentionConfig c = ring(2, RingVariant::ring, KvRotation::p2p, true);
  for (InjectedFault f : {InjectedFault::attention_mask, InjectedFault::lse_merge}) {
    const NumericsReport r = run_and_check(Workload{c}, f);
    INFO(to_string(f), ": ", describe(r));
    CHECK_FALSE(r.pass);
  }
  TpLinearConfig t;
  t.tp = 2;
  t.tokens = 8;
  t.in_features = 8;
  t.out_features = 8;
  t.dtype = DType::bf16;
  // Every GEMM 10% too large: the bf16 tolerance (2e-2) cannot hide it.
  CHECK_FALSE(run_and_check(Workload{t}, InjectedFault::gemm_scale).pass);
}
