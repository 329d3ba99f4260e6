#include "traces/side_by_side_trace.hpp"

#include <algorithm>
#include <string>

#include "traces/chrome_trace_writer.hpp"

namespace meshsim {
namespace {

std::int64_t max_field(const nlohmann::json& trace, const char* field,
                       const char* only_phase = nullptr) {
  std::int64_t m = -1;
  for (const auto& e : trace.at("traceEvents")) {
    if (only_phase != nullptr && e.value("ph", "") != only_phase) continue;
    if (e.contains(field) && e[field].is_number_integer()) {
      m = std::max(m, e[field].get<std::int64_t>());
    }
  }
  return m;
}

// Appends `trace`'s events with the process names prefixed and pids, sort indices and flow ids
// shifted.
void append(nlohmann::json& events, const nlohmann::json& trace, const std::string& prefix,
            std::int64_t pid_shift, std::int64_t id_shift) {
  for (nlohmann::json e : trace.at("traceEvents")) {
    if (e.contains("pid")) e["pid"] = e["pid"].get<std::int64_t>() + pid_shift;
    if (e.contains("id") && e["id"].is_number_integer()) {
      e["id"] = e["id"].get<std::int64_t>() + id_shift;
    }
    const std::string name = e.value("name", "");
    if (e.value("ph", "") == "M" && name == "process_name") {
      e["args"]["name"] = prefix + e["args"]["name"].get<std::string>();
    } else if (e.value("ph", "") == "M" && name == "process_sort_index") {
      e["args"]["sort_index"] = e["args"]["sort_index"].get<std::int64_t>() + pid_shift;
    }
    events.push_back(std::move(e));
  }
}

}  // namespace

nlohmann::json side_by_side_trace(const nlohmann::json& simulated, const nlohmann::json& measured) {
  const std::int64_t pid_shift = max_field(simulated, "pid") + 1;
  const std::int64_t id_shift = std::max<std::int64_t>(max_field(simulated, "id", "s"), -1) + 1;
  nlohmann::json events = nlohmann::json::array();
  append(events, simulated, "simulated: ", 0, 0);
  append(events, measured, "measured: ", pid_shift, id_shift);
  nlohmann::json out;
  out["traceEvents"] = std::move(events);
  out["displayTimeUnit"] = "ns";
  out["otherData"] = {{"schema_version", kChromeTraceSchemaVersion},
                      {"layout", "side-by-side"},
                      {"simulated", simulated.value("otherData", nlohmann::json::object())},
                      {"measured", measured.value("otherData", nlohmann::json::object())}};
  return out;
}

}  // namespace meshsim
