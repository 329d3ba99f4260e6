#pragma once
// How a simulated run is reported: a compact per-rank table and summary for people, one JSON
// object (schema-versioned, with provenance) for scripts.
#include <string>

#include <nlohmann/json.hpp>

#include "tools/simulation.hpp"

namespace meshsim {

inline constexpr int kReportSchemaVersion = 1;

nlohmann::ordered_json link_stats_json(const FlowPlan& flows, const Timeline& timeline);
// A flow-level run's collectives per (dim, kind): achieved and alone busbw, the bounding link
// class (sim/collective_bandwidth).
nlohmann::ordered_json collective_bandwidth_json(const SimulationResult& result);
nlohmann::ordered_json report_json(const SimulationResult& result, const Provenance& provenance);
std::string report_text(const SimulationResult& result, const Provenance& provenance);

}  // namespace meshsim
