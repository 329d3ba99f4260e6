#include "traces/kineto_timeline.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "traces/chrome_trace_writer.hpp"

namespace meshsim {

KinetoTimeline kineto_timeline(const KinetoTrace& trace, std::string_view origin) {
  KinetoTimeline out;
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (const auto& k : trace.kernels) {
    first = std::min(first, k.ts_us);
    last = std::max(last, k.ts_us + k.dur_us);
  }
  if (trace.kernels.empty()) first = 0;
  out.span_s = (last - first) * 1e-6;
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"},
                    {"pid", 0},
                    {"name", "process_name"},
                    {"args", {{"name", fmt::format("rank {} (profiled)", trace.rank)}}}});
  events.push_back(
      {{"ph", "M"}, {"pid", 0}, {"name", "process_sort_index"}, {"args", {{"sort_index", 0}}}});
  // One thread per (device, stream), numbered in (device, stream) order.
  std::map<std::pair<int, std::int64_t>, std::int64_t> tids;
  for (const auto& k : trace.kernels) tids.emplace(std::make_pair(k.device, k.stream), 0);
  std::int64_t next = 0;
  for (auto& [key, tid] : tids) {
    tid = next++;
    events.push_back(
        {{"ph", "M"},
         {"pid", 0},
         {"tid", tid},
         {"name", "thread_name"},
         {"args", {{"name", fmt::format("device {} stream {}", key.first, key.second)}}}});
  }
  for (const auto& k : trace.kernels) {
    const KinetoMatch m = match_kineto_kernel(trace, k);
    out.seconds[static_cast<std::size_t>(m.category)] += k.dur_us * 1e-6;
    const std::int64_t tid = tids.at(std::make_pair(k.device, k.stream));
    nlohmann::json args = {{"category", to_string(m.category)}};
    if (!m.op.empty()) args["op"] = m.op;
    if (!m.unmatched.empty()) args["unmatched"] = m.unmatched;
    events.push_back({{"ph", "X"},
                      {"pid", 0},
                      {"tid", tid},
                      {"name", k.name},
                      {"ts", k.ts_us - first},
                      {"dur", k.dur_us},
                      {"args", std::move(args)}});
  }
  out.trace = {{"traceEvents", std::move(events)},
               {"displayTimeUnit", "ns"},
               {"otherData",
                {{"schema_version", kChromeTraceSchemaVersion},
                 {"source", std::string(origin)},
                 {"rank", trace.rank},
                 {"world_size", trace.world_size}}}};
  return out;
}

}  // namespace meshsim
