#pragma once
// `meshsim report`: one self-contained HTML page (inline CSS and SVG, no scripts, nothing from
// the network) from the JSON that `meshsim sweep --out results.json` writes: a header, the step
// time of the timed plans, the memory of every plan against the GPU's capacity, the critical-path
// breakdown of the best five plans and a table of the top twenty. Deterministic: the same input
// gives the same bytes.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace meshsim {

// Validates `sweep` (schema_version 1, see sweep_json in tools/sweep.hpp) and renders the page.
// Bad input throws InputError "<origin>: field 'rows[3].mem_gb': expected ...".
std::string sweep_report_html(const nlohmann::json& sweep, std::string_view origin);
// Several sweeps (JSON, origin) of one model at different GPU counts: the first's page plus the
// step time vs GPUs Pareto chart of all of them. InputError when they sweep different models.
std::string sweep_report_html(const std::vector<std::pair<nlohmann::json, std::string>>& sweeps);

}  // namespace meshsim
