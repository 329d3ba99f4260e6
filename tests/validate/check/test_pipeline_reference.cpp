#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "schedules/pipeline.hpp"
#include "tests/validate/thread_world.hpp"
#include "validate/check/numerics.hpp"
#include "validate/check/pipeline_reference.hpp"
#include "validate/cpu/cpu_kernel_runner.hpp"
#include "validate/tensors/tensor_store.hpp"
#include "validate/tensors/workload_layouts.hpp"

using namespace meshsim;

namespace {

// Exact GELU and its derivative, written out independently of kernels/elementwise_math.hpp:
// gelu(z) = z Phi(z), gelu'(z) = Phi(z) + z phi(z).
double phi_cdf(double z) {
  return 0.5 * (1.0 + std::erf(z / std::sqrt(2.0)));
}
double gelu(double z) {
  return z * phi_cdf(z);
}
double dgelu(double z) {
  return phi_cdf(z) + z * std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi);
}

GlobalTensorData tensor(std::string name, std::vector<std::int64_t> shape,
                        std::vector<double> values) {
  GlobalTensorData t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.values = std::move(values);
  t.elements_written = static_cast<std::int64_t>(t.values.size());
  return t;
}

PipelineConfig small(PipelineSchedule s, int p, int m, DType dtype) {
  PipelineConfig c;
  c.shape = PipelineShape{s, p, m, s == PipelineSchedule::interleaved ? 2 : 1, 0};
  c.tokens = 4;
  c.hidden = 6;
  c.dtype = dtype;
  return c;
}

// Every rank of the pipeline Program as threads with the CPU kernels; rank 0's gathered tensors.
std::vector<GlobalTensorData> run_pipeline(const PipelineConfig& c,
                                           InjectedFault fault = InjectedFault::none) {
  ValidateOptions options;
  options.gather_tensors = true;
  options.stall_timeout = std::chrono::milliseconds(60000);
  options.make_kernels = [fault](TensorStore& store) -> std::unique_ptr<KernelRunner> {
    return std::make_unique<CpuKernelRunner>(store, fault);
  };
  auto results = testing::validate_in_threads(build_pipeline(c), pipeline_layout(c), options);
  return std::move(results[0].tensors);
}

}  // namespace

TEST_CASE("pipeline reference: 2 stages, 1 microbatch, hidden 2, 1 token, by hand") {
  // x = [1, -0.5]; W0 = [[0.5, -1], [1, 0.25]], W1 = [[1, 0], [2, -1]] (W [in, out], y = x W);
  // dout = [0.3, -0.7] (L = sum dout * y).
  //   pre0 = x W0 = [0, -1.125];  h1 = gelu(pre0) = [0, a], a = gelu(-1.125)
  //   pre1 = h1 W1 = [2a, -a];    y = [gelu(2a), gelu(-a)]
  //   d1 = dout * gelu'(pre1) = [0.3 gelu'(2a), -0.7 gelu'(-a)]
  //   dW1 = h1^T d1 = [[0, 0], [a d1_0, a d1_1]];  g1 = d1 W1^T = [d1_0, 2 d1_0 - d1_1]
  //   d0 = g1 * gelu'(pre0) = [g1_0 / 2, g1_1 gelu'(-1.125)]   (gelu'(0) = 1/2)
  //   dW0 = x^T d0 = [[d0_0, d0_1], [-d0_0 / 2, -d0_1 / 2]];  dx = d0 W0^T
  //       = [0.5 d0_0 - d0_1, d0_0 + 0.25 d0_1]
  PipelineConfig c;
  c.shape = PipelineShape{PipelineSchedule::gpipe, 2, 1, 1, 0};
  c.tokens = 1;
  c.hidden = 2;
  const std::vector<GlobalTensorData> in = {
      tensor("x", {1, 1, 2}, {1.0, -0.5}),
      tensor("w", {2, 2, 2}, {0.5, -1.0, 1.0, 0.25, 1.0, 0.0, 2.0, -1.0}),
      tensor("dout", {1, 1, 2}, {0.3, -0.7}),
  };
  const auto r = pipeline_reference(c, in);
  const double a = gelu(-1.125);
  const double d10 = 0.3 * dgelu(2 * a), d11 = -0.7 * dgelu(-a);
  const double g10 = d10, g11 = 2 * d10 - d11;
  const double d00 = g10 * 0.5, d01 = g11 * dgelu(-1.125);
  const std::vector<double> y = {gelu(2 * a), gelu(-a)};
  const std::vector<double> dx = {0.5 * d00 - d01, d00 + 0.25 * d01};
  const std::vector<double> dw = {d00, d01, -0.5 * d00, -0.5 * d01, 0.0, 0.0, a * d10, a * d11};
  REQUIRE(r.at("y").size() == y.size());
  REQUIRE(r.at("dx").size() == dx.size());
  REQUIRE(r.at("dw").size() == dw.size());
  for (std::size_t i = 0; i < y.size(); ++i) CHECK(r.at("y")[i] == doctest::Approx(y[i]));
  for (std::size_t i = 0; i < dx.size(); ++i) CHECK(r.at("dx")[i] == doctest::Approx(dx[i]));
  for (std::size_t i = 0; i < dw.size(); ++i) CHECK(r.at("dw")[i] == doctest::Approx(dw[i]));
}

TEST_CASE("pipeline layout: every shard is a slot of its rank with the shard's elements") {
  for (PipelineSchedule s :
       {PipelineSchedule::gpipe, PipelineSchedule::interleaved, PipelineSchedule::dualpipev}) {
    CAPTURE(to_string(s));
    const PipelineConfig c = small(s, 2, 4, DType::bf16);
    const Program p = build_pipeline(c);
    const TensorLayout layout = pipeline_layout(c);
    int mapped = 0;
    for (const TensorSlot& slot : p.slots) {
      const ShardSpec* shard = layout.shard(slot.rank, slot.name);
      if (shard == nullptr) continue;
      ++mapped;
      CHECK(shard_elements(*shard) * dtype_bytes(slot.dtype) == TensorStore::slot_bytes(slot));
    }
    // w, dw per global stage; x, dx, dout, y per microbatch
    const int stages = 2 * chunks_of(c.shape);
    CHECK(mapped == 2 * stages + 4 * 4);
    for (const char* name : {"x", "w", "dout", "y", "dx", "dw"}) {
      const auto holders = layout.holders(name);
      const GlobalTensor* t = layout.tensor(name);
      REQUIRE(t != nullptr);
      CHECK(holders.size() == static_cast<std::size_t>(t->shape[0]));  // one slot per index
    }
  }
}

TEST_CASE("every pipeline schedule's gradients equal the unpipelined model's (float64)") {
  struct Case {
    PipelineSchedule s;
    int p, m;
  };
  for (const Case& k :
       {Case{PipelineSchedule::gpipe, 2, 3}, Case{PipelineSchedule::one_f_one_b, 3, 5},
        Case{PipelineSchedule::interleaved, 2, 4}, Case{PipelineSchedule::zb_h1, 3, 4},
        Case{PipelineSchedule::zb_v, 2, 4}, Case{PipelineSchedule::dualpipev, 2, 4}}) {
    for (DType dtype : {DType::fp32, DType::bf16}) {
      CAPTURE(to_string(k.s));
      CAPTURE(to_string(dtype));
      const PipelineConfig c = small(k.s, k.p, k.m, dtype);
      const auto tensors = run_pipeline(c);
      const auto expected = pipeline_reference(c, tensors);
      for (const std::string name : {"y", "dx", "dw"}) {
        // dw is stored in fp32 (main grad) but computed from activations stored in the config's
        // dtype: judged by the tolerance of that dtype.
        GlobalTensorData got = find_tensor(tensors, name);
        got.dtype = c.dtype;
        const TensorNumerics n = compare_tensor(got, expected.at(name));
        INFO(name, ": max abs ", n.max_abs_error, ", rel ", n.max_rel_error, ", tolerance ",
             n.tolerance);
        CHECK(got.elements_written == static_cast<std::int64_t>(expected.at(name).size()));
        CHECK(n.pass);
      }
    }
  }
}

TEST_CASE("pipeline numerics: an injected GEMM fault fails") {
  const PipelineConfig c = small(PipelineSchedule::zb_h1, 2, 2, DType::fp32);
  const auto tensors = run_pipeline(c, InjectedFault::gemm_scale);
  const auto expected = pipeline_reference(c, tensors);
  for (const char* name : {"y", "dx", "dw"}) {
    CAPTURE(name);
    CHECK_FALSE(compare_tensor(find_tensor(tensors, name), expected.at(name)).pass);
  }
}
