#include <doctest/doctest.h>

#include <initializer_list>

#include <vector>

#include "kernels/cpu/vector_ops.hpp"
#include "kernels/reference/vector_ops.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::cpu;
using namespace meshsim::kernels::test;

TEST_CASE("accumulate: y += alpha x against the float64 reference, mixed types") {
  // 10007 elements (more than two 4096-element chunks); max |y - ref| / max |ref| within y's
  // storage tolerance (fp32 1e-5, bf16 1e-2, fp64 1e-12).
  Rng rng(1);
  struct Types {
    ScalarType x, y;
  };
  for (Types t :
       {Types{ScalarType::fp32, ScalarType::fp32}, Types{ScalarType::fp32, ScalarType::bf16},
        Types{ScalarType::bf16, ScalarType::fp32}, Types{ScalarType::fp64, ScalarType::fp64},
        Types{ScalarType::fp16, ScalarType::fp32}}) {
    Buffer x = random_buffer(t.x, 10007, rng);
    Buffer y = random_buffer(t.y, 10007, rng);
    std::vector<double> want = y.values();
    reference::accumulate(x.values(), want, -0.5);
    accumulate(x.vector(), y.vector(), -0.5);
    CHECK(max_rel_error(y.values(), want) <= tolerance(t.y));
  }
  Buffer a(ScalarType::fp32, 3), b(ScalarType::fp32, 4);
  CHECK_THROWS_AS(accumulate(a.vector(), b.vector()), KernelError);
}

TEST_CASE("copy converts with one rounding; the strided copy slices and concatenates") {
  Rng rng(2);
  Buffer src = random_buffer(ScalarType::fp32, 100, rng);
  Buffer dst(ScalarType::bf16, 100);
  copy(src.vector(), dst.vector());
  Buffer want(ScalarType::bf16, 100);
  want.set(src.values());
  CHECK(dst.values() == want.values());

  // concatenate two [3, 2] matrices side by side into a [3, 4] one, then slice the right half
  std::vector<float> left{1, 2, 3, 4, 5, 6}, right{7, 8, 9, 10, 11, 12}, both(12), back(6);
  const MatrixView whole = matrix_view(both.data(), ScalarType::fp32, 3, 4);
  copy(matrix_view(left.data(), ScalarType::fp32, 3, 2), sub_matrix(whole, 0, 0, 3, 2));
  copy(matrix_view(right.data(), ScalarType::fp32, 3, 2), sub_matrix(whole, 0, 2, 3, 2));
  CHECK(both == std::vector<float>{1, 2, 7, 8, 3, 4, 9, 10, 5, 6, 11, 12});
  copy(sub_matrix(whole, 0, 2, 3, 2), matrix_view(back.data(), ScalarType::fp32, 3, 2));
  CHECK(back == right);
}

TEST_CASE("fill and scale") {
  Buffer v(ScalarType::fp64, 5);
  fill(v.vector(), 3.0);
  scale(v.vector(), -0.5);
  CHECK(v.values() == std::vector<double>(5, -1.5));
}
