#include "traces/kineto_trace.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

using nlohmann::json;

// Beyond this many microseconds (about 31 years) a time is not a trace's.
constexpr double kMaxMicros = 1e15;

class KinetoEvent {
 public:
  KinetoEvent(std::string_view origin, std::size_t index, const json& event)
      : origin_(origin), index_(index), event_(event) {}

  [[noreturn]] void fail(std::string_view field, std::string_view what) const {
    throw InputError(fmt::format("{}: traceEvents[{}].{}: {}", origin_, index_, field, what));
  }

  std::string text(const char* key) const {
    const auto it = event_.find(key);
    if (it == event_.end()) return "";
    if (it->is_string()) return it->get<std::string>();
    if (it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
    fail(key, "expected a string or an integer");
  }

  double micros(const char* key) const {
    const auto it = event_.find(key);
    if (it == event_.end() || !it->is_number()) fail(key, "expected a number of microseconds");
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < 0 || v > kMaxMicros) {
      fail(key, fmt::format("expected a number of microseconds in [0, {:g}]", kMaxMicros));
    }
    return v;
  }

  json args() const {
    const auto it = event_.find("args");
    if (it == event_.end()) return json::object();
    if (!it->is_object()) fail("args", "expected an object");
    return *it;
  }

  // args.<key> as an integer, or `fallback` when absent.
  std::int64_t arg_integer(const json& args, const char* key, std::int64_t fallback) const {
    const auto it = args.find(key);
    if (it == args.end()) return fallback;
    if (!it->is_number_integer()) fail(fmt::format("args.{}", key), "expected an integer");
    return it->get<std::int64_t>();
  }

 private:
  std::string_view origin_;
  std::size_t index_;
  const json& event_;
};

struct Launch {
  std::string thread;
  double ts_us = 0;
};

bool is_gpu_category(const std::string& cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "Memcpy" ||
         cat == "gpu_memset" || cat == "Memset";
}

bool is_launch_category(const std::string& cat) {
  return cat == "cuda_runtime" || cat == "Runtime" || cat == "cuda_driver";
}

// The operators enclosing each launch on its thread (outermost first): a sweep over the thread's
// operators and launches in time order with a stack of the open operators.
std::vector<std::vector<std::size_t>> enclosing_ops(const std::vector<KinetoCpuOp>& ops,
                                                    const std::vector<Launch>& launches) {
  // (thread, ts, order, -dur, index): operators (order 0) before launches (order 1) at equal
  // times, longer operators first so that a parent opens before its child.
  using Key = std::tuple<std::string, double, int, double, std::size_t>;
  std::vector<Key> keys;
  keys.reserve(ops.size() + launches.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    keys.emplace_back(ops[i].thread, ops[i].ts_us, 0, -ops[i].dur_us, i);
  }
  for (std::size_t i = 0; i < launches.size(); ++i) {
    keys.emplace_back(launches[i].thread, launches[i].ts_us, 1, 0.0, i);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<std::vector<std::size_t>> out(launches.size());
  std::vector<std::size_t> open;
  const std::string* thread = nullptr;
  for (const auto& [th, ts, order, neg_dur, index] : keys) {
    if (thread == nullptr || *thread != th) open.clear();
    thread = &th;
    while (!open.empty() && ops[open.back()].ts_us + ops[open.back()].dur_us < ts) open.pop_back();
    if (order == 0) {
      open.push_back(index);
    } else {
      out[index] = open;
    }
  }
  return out;
}

struct RawKernel {
  KinetoKernel kernel;
  std::int64_t correlation = -1;
  std::int64_t external_id = -1;
};

void read_distributed_info(const json& doc, KinetoTrace& trace) {
  const auto it = doc.find("distributedInfo");
  if (it == doc.end() || !it->is_object()) return;
  const auto rank = it->find("rank");
  const auto world = it->find("world_size");
  if (rank != it->end() && rank->is_number_integer()) trace.rank = rank->get<int>();
  if (world != it->end() && world->is_number_integer()) trace.world_size = world->get<int>();
}

// Links each kernel to the operators that launched it.
void link_kernels(std::vector<RawKernel>& raw, const std::map<std::int64_t, Launch>& launch_of,
                  const std::unordered_map<std::int64_t, std::size_t>& op_of_external,
                  KinetoTrace& trace) {
  std::vector<Launch> launches;
  std::vector<std::size_t> launch_kernel;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto it = launch_of.find(raw[i].correlation);
    if (raw[i].correlation >= 0 && it != launch_of.end()) {
      launches.push_back(it->second);
      launch_kernel.push_back(i);
    } else if (const auto op = op_of_external.find(raw[i].external_id);
               op != op_of_external.end()) {
      raw[i].kernel.stack = {op->second};
    }
  }
  auto stacks = enclosing_ops(trace.cpu_ops, launches);
  for (std::size_t j = 0; j < launches.size(); ++j) {
    raw[launch_kernel[j]].kernel.stack = std::move(stacks[j]);
  }
  for (auto& r : raw) trace.kernels.push_back(std::move(r.kernel));
  std::stable_sort(
      trace.kernels.begin(), trace.kernels.end(), [](const KinetoKernel& a, const KinetoKernel& b) {
        return std::tie(a.device, a.stream, a.ts_us) < std::tie(b.device, b.stream, b.ts_us);
      });
}

KinetoTrace parse_kineto(const json& doc, std::string_view origin) {
  if (!doc.is_object()) throw InputError(fmt::format("{}: expected a JSON object", origin));
  const auto events = doc.find("traceEvents");
  if (events == doc.end() || !events->is_array()) {
    throw InputError(fmt::format("{}: traceEvents: expected an array of trace events", origin));
  }
  KinetoTrace trace;
  read_distributed_info(doc, trace);
  std::vector<RawKernel> raw;
  std::map<std::int64_t, Launch> launch_of;  // correlation id -> launch
  std::unordered_map<std::int64_t, std::size_t> op_of_external;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    if (!e.is_object()) {
      throw InputError(fmt::format("{}: traceEvents[{}]: expected an object", origin, i));
    }
    const KinetoEvent ev(origin, i, e);
    if (ev.text("ph") != "X") continue;
    const std::string cat = ev.text("cat");
    const bool gpu = is_gpu_category(cat), launch = is_launch_category(cat);
    if (!gpu && !launch && cat != "cpu_op" && cat != "user_annotation") continue;
    const double ts = ev.micros("ts"), dur = ev.micros("dur");
    const json args = ev.args();
    if (gpu) {
      RawKernel k;
      k.kernel = {ev.text("name"),
                  cat,
                  static_cast<int>(ev.arg_integer(args, "device", 0)),
                  ev.arg_integer(args, "stream", 0),
                  ts,
                  dur,
                  {}};
      k.correlation = ev.arg_integer(args, "correlation", -1);
      k.external_id = ev.arg_integer(args, "External id", -1);
      raw.push_back(std::move(k));
    } else if (launch) {
      const std::int64_t corr = ev.arg_integer(args, "correlation", -1);
      if (corr >= 0) launch_of[corr] = {ev.text("pid") + "/" + ev.text("tid"), ts};
    } else {
      const std::int64_t ext = ev.arg_integer(args, "External id", -1);
      if (ext >= 0) op_of_external[ext] = trace.cpu_ops.size();
      trace.cpu_ops.push_back(
          {ev.text("name"), ts, dur, ev.text("pid") + "/" + ev.text("tid"), args});
    }
  }
  link_kernels(raw, launch_of, op_of_external, trace);
  return trace;
}

}  // namespace

KinetoTrace read_kineto_trace(std::istream& in, std::string_view origin) {
  const std::string text(std::istreambuf_iterator<char>(in), {});
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(
        fmt::format("{}: not a JSON trace (byte {}): expected a PyTorch profiler "
                    "Chrome trace",
                    origin, e.byte));
  } catch (const json::exception& e) {  // a number out of range ("1e999")
    throw InputError(fmt::format(
        "{}: not a JSON trace ({}): expected a PyTorch profiler Chrome trace", origin, e.what()));
  }
  return parse_kineto(doc, origin);
}

}  // namespace meshsim
