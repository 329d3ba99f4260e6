#include "validate/run/kernel_runner.hpp"

#include <thread>

namespace meshsim {

void SleepKernelRunner::run(const Op& /*op*/, const KernelCall& /*call*/) {
  std::this_thread::sleep_for(duration_);
}

}  // namespace meshsim
