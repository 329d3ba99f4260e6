#pragma once
// The pipeline command's report: the common run report plus the bubble fraction and, per rank,
// the peak in-flight activations and busy time.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/simulation.hpp"

namespace meshsim {

// 1 - sum over ranks of compute-busy time / (ranks x makespan).
double bubble_fraction(const RunMetrics& metrics);

nlohmann::ordered_json pipeline_report_json(const SimulationResult& result,
                                            const Provenance& provenance,
                                            const std::vector<int>& peak_inflight);
std::string pipeline_report_text(const SimulationResult& result, const Provenance& provenance,
                                 const std::vector<int>& peak_inflight);

}  // namespace meshsim
