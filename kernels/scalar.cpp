#include "kernels/scalar.hpp"

namespace meshsim::kernels {

std::string_view to_string(ScalarType t) {
  switch (t) {
    case ScalarType::bf16:
      return "bf16";
    case ScalarType::fp16:
      return "fp16";
    case ScalarType::fp32:
      return "fp32";
    case ScalarType::fp64:
      return "fp64";
  }
  return "?";
}

}  // namespace meshsim::kernels
