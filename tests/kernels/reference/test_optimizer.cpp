#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/reference/optimizer.hpp"

using namespace meshsim::kernels::reference;

TEST_CASE("reference Adam by hand: two steps with a constant gradient") {
  // g = 2 each step, lr 0.1, no decay. Step 1: m = 0.2, v = 0.004, m_hat = 2, v_hat = 4:
  // p = 1 - 0.1 * 2 / (2 + eps) = 0.9. Step 2: m = 0.38, v = 0.007996, m_hat = 0.38 / 0.19 = 2,
  // v_hat = 0.007996 / 0.001999 = 4: p = 0.8.
  std::vector<double> p{1.0}, m{0.0}, v{0.0};
  const std::vector<double> g{2.0};
  const AdamHyper hyper{0.1, 0.9, 0.999, 1e-8, 0.0};
  adam_update(hyper, 1, p, g, m, v);
  CHECK(p[0] == doctest::Approx(0.9).epsilon(1e-8));
  adam_update(hyper, 2, p, g, m, v);
  CHECK(m[0] == doctest::Approx(0.38));
  CHECK(v[0] == doctest::Approx(0.007996));
  CHECK(p[0] == doctest::Approx(0.8).epsilon(1e-8));
  // decoupled weight decay 0.5: p first shrinks by lr * 0.5 = 5%
  std::vector<double> p2{1.0}, m2{0.0}, v2{0.0};
  adam_update(AdamHyper{0.1, 0.9, 0.999, 1e-8, 0.5}, 1, p2, g, m2, v2);
  CHECK(p2[0] == doctest::Approx(0.95 - 0.1).epsilon(1e-8));
}
