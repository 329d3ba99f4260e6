#include "tools/pipeline_report.hpp"

#include <fmt/format.h>

#include "tools/run_report.hpp"

namespace meshsim {

double bubble_fraction(const RunMetrics& m) {
  if (m.makespan <= 0 || m.ranks.empty()) return 0.0;
  double busy = 0;
  for (const auto& r : m.ranks) busy += static_cast<double>(r.compute);
  return 1.0 - busy / (static_cast<double>(m.ranks.size()) * static_cast<double>(m.makespan));
}

nlohmann::ordered_json pipeline_report_json(const SimulationResult& r, const Provenance& p,
                                            const std::vector<int>& peaks) {
  nlohmann::ordered_json j = report_json(r, p);
  j["bubble_fraction"] = bubble_fraction(r.metrics);
  for (auto& rank : j["ranks"]) {
    const auto i = rank["rank"].get<std::size_t>();
    rank["peak_inflight"] = peaks.at(i);
    rank["busy_s"] = rank["compute_s"];
  }
  return j;
}

std::string pipeline_report_text(const SimulationResult& r, const Provenance& p,
                                 const std::vector<int>& peaks) {
  std::string out = report_text(r, p);
  out += fmt::format("bubble fraction {:.4f}; peak in-flight activations per rank: {}\n\n",
                     bubble_fraction(r.metrics), fmt::join(peaks, " "));
  return out;
}

}  // namespace meshsim
