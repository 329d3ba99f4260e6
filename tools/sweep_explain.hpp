#pragma once
// A sweep that explains itself: each rejected combination's rule id and reason with its numbers,
// counts per rule, one plan's story (--why), the progress bar with its ETA.
#include <chrono>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "schedules/plan_space.hpp"
#include "sim/hardware_profile.hpp"

namespace meshsim {

// Which optional fields a label shows: ep and etp (MoE), the sharding ("zero1", "fsdp"), the
// recompute ("rc=full") and the precision ("fp8-delayed") - the last three when the sweep searches
// them (more than one value).
struct LabelAxes {
  bool experts = false, sharding = false, recompute = false, precision = false;
};
LabelAxes label_axes(const PlanLists& lists, bool moe);

// "tp2 pp1 cp1 dp8 vp1 mbs1 1f1b" (+ " zigzag" when cp > 1, then the axes shown).
std::string plan_label(const StepPlan& p, LabelAxes axes = {});
// The same without dp (a combination whose mesh may not divide the GPUs); ep and etp whenever
// they differ from the dense default.
std::string combination_label(const Combination& c, LabelAxes axes = {});

// One line per rule id, by id: its count, and the first rejected combination with its reason in
// the sweep's flag words ("  rejected     4 [gbs-dp-mbs] e.g. tp2 pp2 cp1 vp1 mbs3 1f1b: ...").
void print_rejections(std::ostream& out, const PlanSpace& space, LabelAxes axes = {});
// {"counts": {rule: n}, "combinations": [{"tp", "pp", "cp", "vp", "mbs", "schedule",
// "cp_variant", "rule", "reason"}]}
nlohmann::ordered_json rejections_json(const PlanSpace& space);

// --why: a combination written as the sweep labels plans ("tp4 pp2 cp1 vp1 mbs1 1f1b zero1
// rc=full", any order, spaces or commas; dpN is ignored, dp being what is left); a value left out
// is the list's when it has one. InputError naming --why otherwise.
Combination parse_combination(std::string_view text, const PlanLists& lists);
// Its story: the rule it breaks with the numbers, or that it is valid and its memory and, when it
// fits, its simulated step.
std::string explain_combination(const TransformerModel& model, const PlanLists& lists,
                                const HardwareProfile& hw, const Combination& c);

// "\r[#####     ] 12/65 plans, 0:14 elapsed, ETA 0:52" on `err` (a newline at the end), when
// `enabled` (a terminal).
std::function<void(std::size_t, std::size_t)> progress_bar(std::ostream& err, bool enabled);

}  // namespace meshsim
