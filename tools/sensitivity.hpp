#pragma once
// Which inputs move the step time most (`meshsim explain`): each number of the hardware profile
// and each plan knob moved by -delta and +delta (10 %) in turn, the step simulated again, the
// inputs ranked by the larger relative change of the step time.
//   profile: every non-integer number of the profile's JSON (peaks, bandwidths, latencies,
//            memory, ...) by itself; each efficiency table ([size, efficiency] pairs) as a whole,
//            its efficiencies scaled together. Integers (GPUs per node, NIC counts) are counts,
//            not magnitudes, and stay.
//   plan:    seq and gbs, rounded to the nearest value the plan allows (seq a multiple of cp
//            (2 cp zigzag) times tp under sequence parallelism, gbs a multiple of dp x mbs).
// A side whose value the profile or the plan rejects (an efficiency over 1, a plan that no longer
// divides) is reported as not valid instead of timed.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/training_step.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/run.hpp"

namespace meshsim {

struct SensitivitySide {
  std::string value;       // the input's value on this side ("x0.9" for a table)
  bool valid = false;      // false: the profile or the plan rejects the value
  std::string why_not;     // the InputError's message when not valid
  double step_time_s = 0;  // when valid
  double change = 0;       // step_time_s / baseline - 1, when valid
};

struct SensitivityInput {
  std::string name;   // the JSON path ("network.nvlink_bandwidth"), or "seq" / "gbs"
  std::string kind;   // "profile" or "plan"
  std::string value;  // the baseline value
  SensitivitySide minus, plus;
  double largest_change() const;  // max |change| over the valid sides
};

struct Sensitivity {
  double baseline_s = 0;
  double delta = 0.1;
  std::vector<SensitivityInput> inputs;  // ranked: largest change first (ties: input order)
};

// The step time of the plan on the hardware (the same run as meshsim step's).
double simulated_step_time(const TransformerModel& model, const StepPlan& plan,
                           const HardwareProfile& hw, const NetworkChoice& network);

Sensitivity step_sensitivity(const TransformerModel& model, const StepPlan& plan,
                             const HardwareProfile& hw, const NetworkChoice& network,
                             double delta = 0.1);

nlohmann::ordered_json to_json(const Sensitivity& s);

}  // namespace meshsim
