#pragma once
// Small Kineto traces written event by event for the Kineto reader's tests: a CPU operator, the
// cudaLaunchKernel inside it and the kernel it launched, as torch.profiler exports them.
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "traces/kineto_trace.hpp"

namespace meshsim::test {

class KinetoFixture {
 public:
  // An operator on CPU thread 100 over [ts, ts + dur] (µs); returns its External id.
  int op(const std::string& name, double ts, double dur,
         nlohmann::json args = nlohmann::json::object()) {
    const int ext = next_++;
    args["External id"] = ext;
    events_.push_back({{"ph", "X"},
                       {"cat", "cpu_op"},
                       {"name", name},
                       {"pid", 100},
                       {"tid", 100},
                       {"ts", ts},
                       {"dur", dur},
                       {"args", args}});
    return ext;
  }
  // A launch at cpu_ts and its kernel on stream 7 at [gpu_ts, gpu_ts + dur].
  void kernel(const std::string& name, double cpu_ts, double gpu_ts, double dur, int stream = 7) {
    const int corr = next_++;
    events_.push_back({{"ph", "X"},
                       {"cat", "cuda_runtime"},
                       {"name", "cudaLaunchKernel"},
                       {"pid", 100},
                       {"tid", 100},
                       {"ts", cpu_ts},
                       {"dur", 1.0},
                       {"args", {{"correlation", corr}}}});
    events_.push_back({{"ph", "X"},
                       {"cat", "kernel"},
                       {"name", name},
                       {"pid", 0},
                       {"tid", stream},
                       {"ts", gpu_ts},
                       {"dur", dur},
                       {"args", {{"correlation", corr}, {"device", 0}, {"stream", stream}}}});
  }
  nlohmann::json& raw_events() { return events_; }
  KinetoTrace read(int world_size = 8) const {
    nlohmann::json doc = {{"traceEvents", events_},
                          {"distributedInfo", {{"rank", 0}, {"world_size", world_size}}}};
    std::istringstream in(doc.dump());
    return read_kineto_trace(in, "t.json");
  }

 private:
  nlohmann::json events_ = nlohmann::json::array();
  int next_ = 1;
};

inline nlohmann::json shapes(nlohmann::json dims, nlohmann::json types,
                             nlohmann::json concrete = nullptr) {
  nlohmann::json a = {{"Input Dims", dims}, {"Input type", types}};
  if (!concrete.is_null()) a["Concrete Inputs"] = concrete;
  return a;
}

}  // namespace meshsim::test
