#include "validate/run/issue_order.hpp"

namespace meshsim {

bool GroupIssueOrder::wait_turn(GroupId group, int ordinal) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return aborted_ || next_[static_cast<std::size_t>(group)] == ordinal; });
  return !aborted_;
}

void GroupIssueOrder::issued(GroupId group) {
  {
    const std::lock_guard lock(mu_);
    ++next_[static_cast<std::size_t>(group)];
  }
  cv_.notify_all();
}

void GroupIssueOrder::abort() {
  {
    const std::lock_guard lock(mu_);
    aborted_ = true;
  }
  cv_.notify_all();
}

}  // namespace meshsim
