#pragma once
// Two traces of the same Program in one Chrome/Perfetto trace, one above the other: the
// simulated timeline's processes first ("simulated: rank R ..."), then the measured one's
// ("measured: rank R ...", pids and sort indices shifted past the simulated ones, flow ids
// shifted so arrows stay paired). Both keep their own time origin (0 = the step's start).
// otherData holds both traces' metadata under "simulated" and "measured".
#include <nlohmann/json.hpp>

namespace meshsim {

// Both arguments are ChromeTraceRecorder::to_json() results.
nlohmann::json side_by_side_trace(const nlohmann::json& simulated, const nlohmann::json& measured);

}  // namespace meshsim
