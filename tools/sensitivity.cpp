#include "tools/sensitivity.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/step_metrics.hpp"

namespace meshsim {
namespace {

using json = nlohmann::json;

// A profile input: the JSON pointer of a number or of an efficiency table.
struct ProfileKnob {
  json::json_pointer at;
  bool table = false;
};

bool is_table(const json& v) {
  return v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const json& e) {
           return e.is_array() && e.size() == 2 && e[0].is_number() && e[1].is_number();
         });
}

void collect(const json& v, const json::json_pointer& at, std::vector<ProfileKnob>& out) {
  if (is_table(v)) {
    out.push_back({at, true});
  } else if (v.is_object()) {
    for (const auto& [key, child] : v.items()) {
      if (key != "sources") collect(child, at / key, out);
    }
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) collect(v[i], at / i, out);
  } else if (v.is_number_float()) {
    out.push_back({at, false});
  }
}

// "network/nic_gbps" -> "network.nic_gbps"
std::string dotted(const json::json_pointer& at) {
  std::string s = at.to_string().substr(1);
  std::replace(s.begin(), s.end(), '/', '.');
  return s;
}

// One side: the step with `change` applied, or why the input rejects it.
SensitivitySide time_side(std::string value, double baseline,
                          const std::function<double()>& simulate) {
  SensitivitySide side;
  side.value = std::move(value);
  try {
    side.step_time_s = simulate();
    side.valid = true;
    side.change = side.step_time_s / baseline - 1;
  } catch (const InputError& e) {
    side.why_not = e.what();
  }
  return side;
}

SensitivityInput profile_input(const ProfileKnob& k, const json& profile, double baseline,
                               double delta, const std::function<double(const json&)>& run) {
  SensitivityInput in;
  in.name = dotted(k.at);
  in.kind = "profile";
  const json& v = profile.at(k.at);
  in.value = k.table ? "table" : fmt::format("{:g}", v.get<double>());
  for (const double f : {1 - delta, 1 + delta}) {
    json changed = profile;
    json& target = changed.at(k.at);
    if (k.table) {
      for (auto& point : target) point[1] = point[1].get<double>() * f;
    } else {
      target = v.get<double>() * f;
    }
    SensitivitySide side =
        time_side(k.table ? fmt::format("x{:g}", f) : fmt::format("{:g}", target.get<double>()),
                  baseline, [&] { return run(changed); });
    (f < 1 ? in.minus : in.plus) = std::move(side);
  }
  return in;
}

// v x f rounded to the nearest positive multiple of unit.
std::int64_t scaled(std::int64_t v, double f, std::int64_t unit) {
  const auto k = std::llround(static_cast<double>(v) * f / static_cast<double>(unit));
  return std::max<std::int64_t>(1, k) * unit;
}

SensitivityInput plan_input(std::string name, std::int64_t StepPlan::*field, std::int64_t unit,
                            const StepPlan& plan, double baseline, double delta,
                            const std::function<double(const StepPlan&)>& run) {
  SensitivityInput in;
  in.name = std::move(name);
  in.kind = "plan";
  in.value = fmt::format("{}", plan.*field);
  for (const double f : {1 - delta, 1 + delta}) {
    StepPlan changed = plan;
    changed.*field = scaled(plan.*field, f, unit);
    SensitivitySide side =
        time_side(fmt::format("{}", changed.*field), baseline, [&] { return run(changed); });
    (f < 1 ? in.minus : in.plus) = std::move(side);
  }
  return in;
}

}  // namespace

double SensitivityInput::largest_change() const {
  double m = 0;
  for (const SensitivitySide* s : {&minus, &plus}) {
    if (s->valid) m = std::max(m, std::abs(s->change));
  }
  return m;
}

double simulated_step_time(const TransformerModel& model, const StepPlan& plan,
                           const HardwareProfile& hw, const NetworkChoice& network) {
  check_step_plan(model, plan);
  const SimulationResult sim =
      run_simulation(build_training_step(model, plan, hw.gpus_per_node), hw, network);
  return evaluate_step(sim, step_work(model, plan), hw).step_time_s;
}

Sensitivity step_sensitivity(const TransformerModel& model, const StepPlan& plan,
                             const HardwareProfile& hw, const NetworkChoice& network,
                             double delta) {
  Sensitivity s;
  s.delta = delta;
  s.baseline_s = simulated_step_time(model, plan, hw, network);
  const json profile = to_json(hw);
  std::vector<ProfileKnob> knobs;
  collect(profile, json::json_pointer(), knobs);
  const auto run_profile = [&](const json& changed) {
    return simulated_step_time(model, plan, hardware_from_json(changed, "profile"), network);
  };
  for (const ProfileKnob& k : knobs) {
    s.inputs.push_back(profile_input(k, profile, s.baseline_s, delta, run_profile));
  }
  const auto run_plan = [&](const StepPlan& changed) {
    return simulated_step_time(model, changed, hw, network);
  };
  const std::int64_t seq_unit =
      (plan.cp > 1 && plan.cp_variant == RingVariant::zigzag ? 2 * plan.cp : plan.cp) *
      (plan.sequence_parallel ? plan.tp : 1);
  s.inputs.push_back(
      plan_input("seq", &StepPlan::seq, seq_unit, plan, s.baseline_s, delta, run_plan));
  s.inputs.push_back(plan_input("gbs", &StepPlan::global_batch, plan.dp * plan.microbatch_size,
                                plan, s.baseline_s, delta, run_plan));
  std::stable_sort(s.inputs.begin(), s.inputs.end(), [](const auto& a, const auto& b) {
    return a.largest_change() > b.largest_change();
  });
  return s;
}

nlohmann::ordered_json to_json(const Sensitivity& s) {
  const auto side = [](const SensitivitySide& d) {
    nlohmann::ordered_json j{{"value", d.value}, {"valid", d.valid}};
    if (d.valid) {
      j["step_time_s"] = d.step_time_s;
      j["change"] = d.change;
    } else {
      j["why_not"] = d.why_not;
    }
    return j;
  };
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  for (const auto& in : s.inputs) {
    inputs.push_back({{"input", in.name},
                      {"kind", in.kind},
                      {"value", in.value},
                      {"minus", side(in.minus)},
                      {"plus", side(in.plus)}});
  }
  return {{"baseline_step_time_s", s.baseline_s}, {"delta", s.delta}, {"inputs", inputs}};
}

}  // namespace meshsim
