#include <doctest/doctest.h>

#include <vector>

#include "kernels/reference/vector_ops.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::reference;

TEST_CASE("reference accumulate, bias and activation by hand") {
  std::vector<double> y{1, 2, 3, 4};
  reference::accumulate(std::vector<double>{1, 1, 1, 1}, y, 2.0);
  CHECK(y == std::vector<double>{3, 4, 5, 6});
  add_bias(2, 2, y, std::vector<double>{10, 20});  // rows [3, 4], [5, 6]
  CHECK(y == std::vector<double>{13, 24, 15, 26});
  std::vector<double> db{1, 1};
  bias_grad(2, 2, y, db);
  CHECK(db == std::vector<double>{29, 51});  // 1 + 13 + 15, 1 + 24 + 26
  std::vector<double> out(2), dx(2);
  activation_forward(Activation::relu, std::vector<double>{-1, 2}, out);
  CHECK(out == std::vector<double>{0, 2});
  activation_backward(Activation::relu, std::vector<double>{-1, 2}, std::vector<double>{5, 7}, dx);
  CHECK(dx == std::vector<double>{0, 7});
}
