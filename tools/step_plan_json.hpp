#pragma once
// The plan `meshsim step --json` prints under "plan": the mesh, batch, schedule and every setting
// of the StepPlan that shapes the step (the MoE plan and the layer layout when given).
#include <nlohmann/json.hpp>

#include "schedules/model_catalog.hpp"
#include "schedules/step_plan.hpp"

namespace meshsim {

nlohmann::ordered_json plan_json(const TransformerModel& model, const StepPlan& p);

}  // namespace meshsim
