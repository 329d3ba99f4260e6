#include "validate/run/solo_world.hpp"

#include <fmt/format.h>

#include "validate/run/executor.hpp"

namespace meshsim {

void SoloWorld::abort(int code) {
  // One process: nothing else to stop; the executor's threads are woken through the hub.
  throw ExecutionError(fmt::format("run aborted (code {})", code));
}

std::unique_ptr<CommBackend> SoloWorld::make_comm(const Program& /*program*/, const CommPlan& plan,
                                                  const CommArgs& args) {
  hub_ = std::make_unique<InProcessHub>(plan);
  return std::make_unique<InProcessCommBackend>(*hub_, args);
}

}  // namespace meshsim
