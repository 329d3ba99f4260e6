#include "traces/trace_observer.hpp"

#include <sstream>

namespace meshsim {

EngineSignals ChromeTraceObserver::subscribe(const Program& program, const CommPlan& plan) {
  recorder_.emplace(program, plan, metadata_);
  return recorder_->signals();
}

void ChromeTraceObserver::finished(const Timeline& timeline, const FlowPlan* flows) {
  if (flows != nullptr) {
    std::vector<std::string> names(FlowPlan::kLinkClassNames.size());
    for (std::uint8_t c : flows->port_class) names[c] = FlowPlan::kLinkClassNames[c];
    recorder_->add_link_counters(timeline.link_rates, names);
  }
  if (!timeline.host_waits.empty()) recorder_->add_host_waits(timeline.host_waits);
  std::ostringstream out;
  recorder_->write(out);
  text_ = out.str();
  recorder_.reset();  // it refers to the run's Program and CommPlan
}

}  // namespace meshsim
