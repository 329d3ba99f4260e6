#pragma once
// The kernels' activation for a Program's elementwise function (relu, gelu; none is the
// identity), as every backend's runner needs it. Other functions are not activations.
#include <fmt/format.h>

#include "kernels/elementwise_math.hpp"
#include "sim/error.hpp"
#include "sim/kernel_call.hpp"

namespace meshsim {

inline kernels::Activation activation_of(ElementwiseFn fn) {
  switch (fn) {
    case ElementwiseFn::none:
      return kernels::Activation::identity;
    case ElementwiseFn::relu:
      return kernels::Activation::relu;
    case ElementwiseFn::gelu:
      return kernels::Activation::gelu;
    default:
      break;
  }
  MESHSIM_CHECK(false, fmt::format("{} is not an activation", to_string(fn)));
  return kernels::Activation::identity;
}

}  // namespace meshsim
