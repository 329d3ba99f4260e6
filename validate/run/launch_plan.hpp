#pragma once
// How a rank's ops are issued by one host thread in launch order onto device streams (the CUDA
// backend, issue 8): before launching op i on its stream, wait for the completion events of the
// deps that live on other streams (cudaStreamWaitEvent); deps on the same stream are implied by
// stream order, and a wait already made on that stream for a later op of the same other stream
// implies the earlier one. The device then applies the readiness rules itself; under
// CUDA_DEVICE_MAX_CONNECTIONS=1 its single hardware queue is the launch order.
#include <vector>

#include "validate/run/rank_schedule.hpp"

namespace meshsim {

struct LaunchStep {
  int op = 0;                    // local index (launch order)
  std::vector<int> wait_events;  // local indices of ops whose completion event to wait for
};

std::vector<LaunchStep> launch_plan(const RankSchedule& schedule);

}  // namespace meshsim
