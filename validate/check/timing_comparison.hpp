#pragma once
// Predicted against measured (ARCHITECTURE.md §5): the same Program simulated with a hardware
// profile and executed for real, compared op by op and end to end. An op's time is its
// dispatch-to-completion span (for a comm op this includes waiting for its peers, in both
// timelines). The error of an op is (predicted - measured) / measured; summaries use its absolute
// value, split into compute and comm ops since their sources of error differ.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/program.hpp"
#include "sim/timeline.hpp"

namespace meshsim {

struct OpComparison {
  OpId op = 0;
  Nanos predicted = 0;
  Nanos measured = 0;
  double error = 0;  // (predicted - measured) / measured; 0 when both are 0
};

struct ErrorSummary {
  std::int64_t ops = 0;
  double median = 0, p90 = 0, worst = 0;  // of |error|
  OpId worst_op = -1;
};

struct TimingComparison {
  Nanos predicted_makespan = 0;
  Nanos measured_makespan = 0;
  double makespan_error = 0;      // (predicted - measured) / measured
  std::vector<OpComparison> ops;  // in op id order
  ErrorSummary compute, comm;
};

TimingComparison compare_timings(const Program& program, const Timeline& predicted,
                                 const Timeline& measured);

// The report: the makespans, the error summaries and the `rows` ops with the longest measured
// time (all ops in the JSON form, which `rest_in` names for the reader: "({n} more ops in
// {rest_in})").
std::string timing_comparison_text(const Program& program, const TimingComparison& c,
                                   std::string_view rest_in, std::size_t rows = 20);
nlohmann::ordered_json timing_comparison_json(const Program& program, const TimingComparison& c);

}  // namespace meshsim
