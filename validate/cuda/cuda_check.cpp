#include "validate/cuda/cuda_check.hpp"

#include <fmt/format.h>

namespace meshsim {

void cuda_call_failed(const char* library, const char* message, const char* call, const char* file,
                      int line) {
  throw CudaError(
      fmt::format("{} call {} failed at {}:{}: {}", library, call, file, line, message));
}

}  // namespace meshsim
