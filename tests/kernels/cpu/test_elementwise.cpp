#include <doctest/doctest.h>

#include <initializer_list>

#include <vector>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/reference/vector_ops.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::cpu;
using namespace meshsim::kernels::test;

TEST_CASE("add_bias and bias_grad against the float64 reference") {
  // y [37, 19] += b; db += column sums of dy [37, 19]; fp32 1e-5, bf16 1e-2.
  Rng rng(1);
  for (ScalarType t : {ScalarType::fp32, ScalarType::bf16, ScalarType::fp64}) {
    Buffer y = random_buffer(t, 37 * 19, rng);
    Buffer bias = random_buffer(t, 19, rng);
    std::vector<double> want = y.values();
    reference::add_bias(37, 19, want, bias.values());
    add_bias(matrix_view(y.data(), t, 37, 19), bias.vector());
    CHECK(max_rel_error(y.values(), want) <= tolerance(t));

    Buffer dy = random_buffer(t, 37 * 19, rng);
    Buffer db = random_buffer(ScalarType::fp32, 19, rng);  // the fp32 main grad
    std::vector<double> want_db = db.values();
    reference::bias_grad(37, 19, dy.values(), want_db);
    bias_grad(matrix_view(dy.data(), t, 37, 19), db.vector());
    CHECK(max_rel_error(db.values(), want_db) <= 1e-5);
    bias_grad(matrix_view(dy.data(), t, 37, 19), db.vector(), Store::overwrite);
    std::vector<double> fresh(19, 0.0);
    reference::bias_grad(37, 19, dy.values(), fresh);
    CHECK(max_rel_error(db.values(), fresh) <= 1e-5);
  }
}

TEST_CASE("activations forward and backward against the float64 reference") {
  // 5000 inputs in [-4, 4); fp32 1e-5 relative to the largest magnitude, bf16 1e-2.
  Rng rng(2);
  for (Activation a :
       {Activation::relu, Activation::gelu, Activation::gelu_tanh, Activation::silu}) {
    for (ScalarType t : {ScalarType::fp32, ScalarType::bf16}) {
      Buffer x = random_buffer(t, 5000, rng, -4.0, 4.0);
      Buffer dy = random_buffer(t, 5000, rng);
      Buffer y(t, 5000), dx(t, 5000);
      std::vector<double> want_y(5000), want_dx(5000);
      reference::activation_forward(a, x.values(), want_y);
      reference::activation_backward(a, x.values(), dy.values(), want_dx);
      activation_forward(a, x.vector(), y.vector());
      activation_backward(a, x.vector(), dy.vector(), dx.vector());
      CHECK(max_rel_error(y.values(), want_y) <= tolerance(t));
      CHECK(max_rel_error(dx.values(), want_dx) <= tolerance(t));
    }
  }
}
