#pragma once
// The measured timeline's clock: std::chrono::steady_clock in nanoseconds since an origin that
// every rank sets right after leaving the same barrier, so that one rank's times compare with
// another's up to the barrier's exit skew (microseconds within a node).
#include <chrono>

#include "sim/time.hpp"

namespace meshsim {

class RunClock {
 public:
  RunClock() : origin_(std::chrono::steady_clock::now()) {}

  void reset() { origin_ = std::chrono::steady_clock::now(); }
  Nanos now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                origin_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point origin_;
};

}  // namespace meshsim
