#include <doctest/doctest.h>

#include <vector>

#include "kernels/reference/loss.hpp"

using namespace meshsim::kernels::reference;

TEST_CASE("reference losses by hand") {
  // y = (1, 3), t = (0, 1): L = (1 + 4) / 2 = 2.5, dy = 2 (y - t) / 2 = (1, 2).
  std::vector<double> dy(2);
  CHECK(mse_loss(std::vector<double>{1, 3}, std::vector<double>{0, 1}, dy) == 2.5);
  CHECK(dy == std::vector<double>{1, 2});
  // L = 2 * 1 + (-1) * 3 = -1, dy = w
  CHECK(dot_loss(std::vector<double>{1, 3}, std::vector<double>{2, -1}, dy) == -1.0);
  CHECK(dy == std::vector<double>{2, -1});
}
