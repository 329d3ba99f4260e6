#pragma once
// A RunObserver that records the run as a Chrome/Perfetto trace (with the flow-level network's
// per-link-class bandwidth counters when it was used) and keeps the trace's text.
#include <optional>
#include <string>

#include "sim/run.hpp"
#include "traces/chrome_trace_writer.hpp"

namespace meshsim {

class ChromeTraceObserver final : public RunObserver {
 public:
  explicit ChromeTraceObserver(TraceMetadata metadata) : metadata_(std::move(metadata)) {}

  EngineSignals subscribe(const Program& program, const CommPlan& plan) override;
  void finished(const Timeline& timeline, const FlowPlan* flows) override;

  // The trace's text, once the run has finished.
  std::string take_text() { return std::move(text_); }

 private:
  TraceMetadata metadata_;
  std::optional<ChromeTraceRecorder> recorder_;
  std::string text_;
};

}  // namespace meshsim
