#include <doctest/doctest.h>

#include <initializer_list>

#include <cmath>
#include <vector>

#include "kernels/cpu/gemm.hpp"
#include "kernels/reference/gemm.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::cpu;
using meshsim::kernels::test::Buffer;
using meshsim::kernels::test::max_rel_error;
using meshsim::kernels::test::random_buffer;
using meshsim::kernels::test::Rng;
using meshsim::kernels::test::tolerance;

namespace {

// The worse of two types' tolerances: C is rounded to its type, and with every operand in bf16 or
// fp16 the math is float32.
double gemm_tolerance(ScalarType in, ScalarType out) {
  return std::max(tolerance(in == ScalarType::fp64 ? ScalarType::fp64 : ScalarType::fp32),
                  tolerance(out));
}

}  // namespace

TEST_CASE("gemm: C = alpha op(A) op(B) + beta C against the float64 reference, all transposes") {
  // m, n, k = 37, 23, 41 (odd sizes, no vector-width multiple); max |C - C_ref| / max |C_ref|
  // within the tolerance of the math and C's storage type (fp32 1e-5, bf16 1e-2, fp64 1e-12).
  Rng rng(1);
  const std::int64_t m = 37, n = 23, k = 41;
  struct Types {
    ScalarType in, out;
  };
  for (Types t :
       {Types{ScalarType::fp32, ScalarType::fp32}, Types{ScalarType::fp64, ScalarType::fp64},
        Types{ScalarType::bf16, ScalarType::fp32}, Types{ScalarType::bf16, ScalarType::bf16},
        Types{ScalarType::fp16, ScalarType::fp32}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (double beta : {0.0, 1.0}) {
          CAPTURE(to_string(t.in));
          CAPTURE(to_string(t.out));
          CAPTURE(ta);
          CAPTURE(tb);
          CAPTURE(beta);
          Buffer a = random_buffer(t.in, m * k, rng);
          Buffer b = random_buffer(t.in, k * n, rng);
          Buffer c = random_buffer(t.out, m * n, rng);
          std::vector<double> want = c.values();
          reference::gemm(m, n, k, ta, tb, 0.75, a.values(), b.values(), beta, want);
          gemm(matrix_view(a.data(), t.in, ta ? k : m, ta ? m : k),
               ta ? Transpose::yes : Transpose::no,
               matrix_view(b.data(), t.in, tb ? n : k, tb ? k : n),
               tb ? Transpose::yes : Transpose::no, matrix_view(c.data(), t.out, m, n), 0.75, beta);
          CHECK(max_rel_error(c.values(), want) <= gemm_tolerance(t.in, t.out));
        }
      }
    }
  }
}

TEST_CASE("gemm: strided operands (sub-matrices) and beta = 0 ignoring NaN in C") {
  // C is the [5, 4] block at (1, 2) of a [8, 9] fp32 matrix; A the [5, 3] block of a [6, 7]
  // matrix. Elements of C's parent outside the block stay untouched; NaN in C does not leak.
  Rng rng(2);
  Buffer pa = random_buffer(ScalarType::fp32, 6 * 7, rng);
  Buffer b = random_buffer(ScalarType::fp32, 3 * 4, rng);
  Buffer pc(ScalarType::fp32, 8 * 9);
  pc.fill(NAN);
  const MatrixView a = sub_matrix(matrix_view(pa.data(), ScalarType::fp32, 6, 7), 1, 3, 5, 3);
  const MatrixView c = sub_matrix(matrix_view(pc.data(), ScalarType::fp32, 8, 9), 1, 2, 5, 4);
  gemm(a, Transpose::no, matrix_view(b.data(), ScalarType::fp32, 3, 4), Transpose::no, c);
  std::vector<double> av(15);
  const std::vector<double> pav = pa.values();
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 3; ++j)
      av[static_cast<std::size_t>(i * 3 + j)] = pav[static_cast<std::size_t>((i + 1) * 7 + 3 + j)];
  }
  std::vector<double> want(20);
  reference::gemm(5, 4, 3, false, false, 1.0, av, b.values(), 0.0, want);
  const std::vector<double> pcv = pc.values();
  std::vector<double> got(20);
  int outside_nan = 0;
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 9; ++j) {
      const double x = pcv[static_cast<std::size_t>(i * 9 + j)];
      if (i >= 1 && i < 6 && j >= 2 && j < 6) {
        got[static_cast<std::size_t>((i - 1) * 4 + (j - 2))] = x;
      } else if (std::isnan(x)) {
        ++outside_nan;
      }
    }
  }
  CHECK(outside_nan == 72 - 20);
  CHECK(max_rel_error(got, want) <= 1e-5);
}

TEST_CASE("gemm with k = 0: C = beta C") {
  // An empty inner dimension: op(A) op(B) is the zero matrix, so beta = 0 clears C and beta = 1
  // keeps it.
  std::vector<float> none, c{1, 2, 3, 4};
  const MatrixView a = matrix_view(none.data(), ScalarType::fp32, 2, 0);
  const MatrixView b = matrix_view(none.data(), ScalarType::fp32, 0, 2);
  gemm(a, Transpose::no, b, Transpose::no, matrix_view(c.data(), ScalarType::fp32, 2, 2), 1, 1);
  CHECK(c == std::vector<float>{1, 2, 3, 4});
  gemm(a, Transpose::no, b, Transpose::no, matrix_view(c.data(), ScalarType::fp32, 2, 2));
  CHECK(c == std::vector<float>{0, 0, 0, 0});
}

TEST_CASE("gemm rejects mismatched shapes") {
  std::vector<float> x(12);
  const MatrixView a = matrix_view(x.data(), ScalarType::fp32, 3, 4);
  CHECK_THROWS_AS(gemm(a, Transpose::no, a, Transpose::no, a), KernelError);  // 4 != 3
}

TEST_CASE("linear_backward: dX = dY W^T, dW += X^T dY (W [in, out]) and the torch layout") {
  // m = 19 tokens, in = 13, out = 11. dW starts random and is accumulated into (a main grad).
  Rng rng(3);
  const std::int64_t m = 19, in = 13, out = 11;
  for (WeightLayout layout : {WeightLayout::in_out, WeightLayout::out_in}) {
    for (ScalarType t : {ScalarType::fp32, ScalarType::bf16}) {
      const bool out_in = layout == WeightLayout::out_in;
      Buffer x = random_buffer(t, m * in, rng);
      Buffer w = random_buffer(t, in * out, rng);
      Buffer dy = random_buffer(t, m * out, rng);
      Buffer dx(t, m * in);
      Buffer dw = random_buffer(ScalarType::fp32, in * out, rng);
      std::vector<double> want_dx(static_cast<std::size_t>(m * in));
      std::vector<double> want_dw = dw.values();
      reference::linear_backward(m, in, out, out_in, x.values(), w.values(), dy.values(), want_dx,
                                 want_dw);
      linear_backward(
          matrix_view(x.data(), t, m, in),
          out_in ? matrix_view(w.data(), t, out, in) : matrix_view(w.data(), t, in, out),
          matrix_view(dy.data(), t, m, out), matrix_view(dx.data(), t, m, in),
          out_in ? matrix_view(dw.data(), ScalarType::fp32, out, in)
                 : matrix_view(dw.data(), ScalarType::fp32, in, out),
          layout);
      CHECK(max_rel_error(dx.values(), want_dx) <= tolerance(t));
      CHECK(max_rel_error(dw.values(), want_dw) <= 1e-5);  // fp32 main grad
    }
  }
}

TEST_CASE("BLAS threads can be read and set") {
  const int before = blas_threads();
  set_blas_threads(1);
  CHECK(blas_threads() == 1);
  set_blas_threads(before);
  CHECK_THROWS_AS(set_blas_threads(0), KernelError);
  CHECK_FALSE(blas_config().empty());
}
