#include <doctest/doctest.h>

#include <chrono>

#include "validate/run/kernel_runner.hpp"

using namespace meshsim;
using namespace std::chrono_literals;

TEST_CASE("the sleeping runner takes at least its time; the null runner nothing") {
  const Op op;
  const KernelCall call;
  SleepKernelRunner sleeper(20ms);
  const auto t0 = std::chrono::steady_clock::now();
  sleeper.run(op, call);
  CHECK(std::chrono::steady_clock::now() - t0 >= 20ms);
  NullKernelRunner null;
  null.run(op, call);
}
