#include "traces/trace_observer.hpp"

#include <sstream>

namespace meshsim {

EngineSignals ChromeTraceObserver::subscribe(const Program& program, const CommPlan& plan) {
  recorder_.emplace(program, plan, metadata_);
  return recorder_->signals();
}

void ChromeTraceObserver::finished(const Timeline& timeline, const FlowPlan* flows) {
  if (flows != nullptr) {
    recorder_->add_link_counters(timeline.link_rates,
                                 std::vector<std::string>(FlowPlan::kLinkClassNames.begin(),
                                                          FlowPlan::kLinkClassNames.end()));
  }
  std::ostringstream out;
  recorder_->write(out);
  text_ = out.str();
  recorder_.reset();  // it refers to the run's Program and CommPlan
}

}  // namespace meshsim
