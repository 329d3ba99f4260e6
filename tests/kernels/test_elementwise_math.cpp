#include <doctest/doctest.h>

#include <initializer_list>

#include <cmath>

#include "kernels/elementwise_math.hpp"

using namespace meshsim::kernels;

TEST_CASE("activations: values at known points") {
  CHECK(activation_value(Activation::relu, -1.5) == 0.0);
  CHECK(activation_value(Activation::relu, 2.0) == 2.0);
  CHECK(activation_value(Activation::gelu, 0.0) == 0.0);
  CHECK(activation_value(Activation::gelu, 1.0) == doctest::Approx(0.8413447460685429));  // Phi(1)
  CHECK(activation_value(Activation::gelu_tanh, 1.0) == doctest::Approx(0.8411919906082768));
  CHECK(activation_value(Activation::silu, 1.0) == doctest::Approx(1.0 / (1.0 + std::exp(-1.0))));
  CHECK(activation_value(Activation::identity, -3.0) == -3.0);
}

TEST_CASE("activation derivatives equal central finite differences") {
  // f'(x) ~ (f(x + h) - f(x - h)) / 2h with h = 1e-6: error O(h^2 f''') + O(eps / h) ~ 1e-9.
  const double h = 1e-6;
  for (Activation a : {Activation::identity, Activation::relu, Activation::gelu,
                       Activation::gelu_tanh, Activation::silu}) {
    for (double x : {-3.1, -1.2, -0.3, 0.4, 1.7, 2.9}) {
      const double fd = (activation_value(a, x + h) - activation_value(a, x - h)) / (2 * h);
      CHECK(activation_derivative(a, x) == doctest::Approx(fd).epsilon(1e-8));
    }
  }
}

TEST_CASE("adam_element: the first step moves by lr against the gradient's sign") {
  // t = 1: m_hat = g, v_hat = g^2, so p -= lr * g / (|g| + eps) = lr * sign(g) (eps negligible).
  const AdamStep<double> s{
      1e-2, 0.9, 0.999, 1e-8, 0.0, 1.0 - 0.9, 1.0 - 0.999, 1.0 - 0.9, std::sqrt(1.0 - 0.999)};
  double m = 0.0, v = 0.0;
  CHECK(adam_element(s, 1.0, 0.5, m, v) == doctest::Approx(1.0 - 1e-2).epsilon(1e-7));
  CHECK(m == doctest::Approx(0.05));    // (1 - beta1) g
  CHECK(v == doctest::Approx(2.5e-4));  // (1 - beta2) g^2
}
