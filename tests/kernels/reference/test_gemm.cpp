#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "kernels/reference/gemm.hpp"

using namespace meshsim::kernels::reference;

TEST_CASE("reference gemm by hand, with transposes and beta") {
  // A = [[1, 2], [3, 4]], B = [[5, 6], [7, 8]]: AB = [[19, 22], [43, 50]], A^T B = [[26, 30],
  // [38, 44]], A B^T = [[17, 23], [39, 53]]; with beta = 1 and C = 1s, each entry gains 1.
  const std::vector<double> a{1, 2, 3, 4}, b{5, 6, 7, 8};
  std::vector<double> c(4, 1.0);
  gemm(2, 2, 2, false, false, 1.0, a, b, 0.0, c);
  CHECK(c == std::vector<double>{19, 22, 43, 50});
  gemm(2, 2, 2, true, false, 1.0, a, b, 0.0, c);
  CHECK(c == std::vector<double>{26, 30, 38, 44});
  std::fill(c.begin(), c.end(), 1.0);
  gemm(2, 2, 2, false, true, 2.0, a, b, 1.0, c);
  CHECK(c == std::vector<double>{35, 47, 79, 107});  // 2 A B^T + 1
  CHECK_THROWS_AS(gemm(2, 2, 3, false, false, 1.0, a, b, 0.0, c), std::invalid_argument);
}

TEST_CASE("reference linear_backward by hand") {
  // X = [[1, 2]] (m = 1, in = 2), W [in, out] = [[1, 0, 2], [0, 1, 3]], dY = [[1, 1, 1]]:
  // dX = dY W^T = [[3, 4]], dW = X^T dY = [[1, 1, 1], [2, 2, 2]].
  const std::vector<double> x{1, 2}, w{1, 0, 2, 0, 1, 3}, dy{1, 1, 1};
  std::vector<double> dx(2), dw(6, 0.0);
  linear_backward(1, 2, 3, false, x, w, dy, dx, dw);
  CHECK(dx == std::vector<double>{3, 4});
  CHECK(dw == std::vector<double>{1, 1, 1, 2, 2, 2});
}
