#include "sim/dtype.hpp"

namespace meshsim {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::fp32:
      return "fp32";
    case DType::fp64:
      return "fp64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : {DType::bf16, DType::fp16, DType::fp32, DType::fp64}) {
    if (to_string(t) == name) return t;
  }
  return std::nullopt;
}

}  // namespace meshsim
