#pragma once
// Reads a Chrome trace written by ChromeTraceRecorder (or by the validate executors) back into
// spans and flows, so measured and simulated timelines can be compared.
#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/time.hpp"

namespace meshsim {

struct TraceSpan {
  int rank = 0;        // pid
  std::string stream;  // thread name
  std::string name;
  Nanos start = 0;
  Nanos end = 0;
  nlohmann::json args;
};

struct TraceFlow {
  std::int64_t id = 0;
  int src_rank = 0;
  int dst_rank = 0;
  Nanos send_ts = 0;
  Nanos recv_ts = 0;
};

struct ChromeTrace {
  std::map<int, std::string> process_names;  // rank -> "rank 3 (cp=3)"
  std::vector<TraceSpan> spans;              // in file order
  std::vector<TraceFlow> flows;              // by id
  nlohmann::json metadata;                   // "otherData"
};

// Throws InputError with `origin` and the offending event index/field on malformed input.
ChromeTrace read_chrome_trace(std::istream& in, std::string_view origin);

}  // namespace meshsim
