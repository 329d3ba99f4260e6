#include <doctest/doctest.h>

#include <initializer_list>

#include <vector>

#include "kernels/cpu/loss.hpp"
#include "kernels/reference/loss.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::cpu;
using namespace meshsim::kernels::test;

TEST_CASE("mse_loss and dot_loss equal the float64 reference") {
  // L to 1e-12 relative (the sums run in float64 over the stored inputs); dy within dy's type.
  Rng rng(1);
  for (ScalarType t : {ScalarType::fp32, ScalarType::bf16}) {
    Buffer y = random_buffer(t, 9001, rng);
    Buffer target = random_buffer(t, 9001, rng);
    Buffer dy(ScalarType::fp32, 9001);
    std::vector<double> want_dy(9001);
    const double want = reference::mse_loss(y.values(), target.values(), want_dy);
    CHECK(mse_loss(y.vector(), target.vector(), dy.vector()) ==
          doctest::Approx(want).epsilon(1e-12));
    CHECK(max_rel_error(dy.values(), want_dy) <= 1e-5);
    const double want_dot = reference::dot_loss(y.values(), target.values(), want_dy);
    CHECK(dot_loss(y.vector(), target.vector(), dy.vector(), 0.25) ==
          doctest::Approx(want_dot).epsilon(1e-12));
    for (double& g : want_dy) g *= 0.25;  // grad_scale
    CHECK(max_rel_error(dy.values(), want_dy) <= 1e-5);
  }
}

TEST_CASE("mse_loss gradient equals central finite differences of the loss") {
  // dL/dy_i ~ (L(y + h e_i) - L(y - h e_i)) / 2h, h = 1e-4 on fp64 data; L is quadratic, so the
  // central difference is exact up to rounding: 1e-8 relative.
  Rng rng(2);
  Buffer y = random_buffer(ScalarType::fp64, 50, rng);
  Buffer t = random_buffer(ScalarType::fp64, 50, rng);
  Buffer dy(ScalarType::fp64, 50);
  mse_loss(y.vector(), t.vector(), dy.vector());
  const std::vector<double> g = dy.values();
  std::vector<double> yv = y.values();
  const double h = 1e-4;
  for (std::size_t i = 0; i < yv.size(); i += 7) {
    const double keep = yv[i];
    yv[i] = keep + h;
    y.set(yv);
    const double up = mse_loss(y.vector(), t.vector(), VectorView{});
    yv[i] = keep - h;
    y.set(yv);
    const double down = mse_loss(y.vector(), t.vector(), VectorView{});
    yv[i] = keep;
    CHECK(g[i] == doctest::Approx((up - down) / (2 * h)).epsilon(1e-8));
  }
}
