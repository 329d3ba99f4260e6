#include "traces/chrome_trace_reader.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

using nlohmann::json;

// Timestamps beyond this many microseconds (about 31 years) are rejected, so converting to integer
// nanoseconds, and adding a duration to a start, cannot overflow.
constexpr double kMaxAbsMicros = 1e15;

// Error messages stay on one line whatever the input contained.
std::string one_line(std::string s) {
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return s;
}

[[noreturn]] void fail_trace(std::string_view origin, std::string_view what) {
  throw InputError(one_line(fmt::format("{}: {}", origin, what)));
}

class EventReader {
 public:
  EventReader(std::string_view origin, std::size_t index, const json& event)
      : origin_(origin), index_(index), event_(event) {}

  [[noreturn]] void fail(std::string_view field, std::string_view what) const {
    throw InputError(
        one_line(fmt::format("{}: traceEvents[{}].{}: {}", origin_, index_, field, what)));
  }

  const json* find(const char* key) const {
    const auto it = event_.find(key);
    return it == event_.end() ? nullptr : &*it;
  }

  std::string string(const char* key) const {
    const json* v = find(key);
    if (v == nullptr || !v->is_string()) fail(key, "expected a string");
    return v->get<std::string>();
  }

  // An integer in [lo, hi].
  std::int64_t integer(const char* key, std::int64_t lo, std::int64_t hi,
                       std::string_view what) const {
    const json* v = find(key);
    if (v == nullptr || !v->is_number_integer()) fail(key, what);
    if (v->is_number_unsigned()) {
      const auto u = v->get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(hi)) fail(key, what);
      return static_cast<std::int64_t>(u);
    }
    const auto i = v->get<std::int64_t>();
    if (i < lo || i > hi) fail(key, what);
    return i;
  }

  int pid() const {
    return static_cast<int>(
        integer("pid", 0, std::numeric_limits<int>::max(), "expected a non-negative integer"));
  }
  int tid() const {
    return static_cast<int>(integer("tid", std::numeric_limits<int>::min(),
                                    std::numeric_limits<int>::max(), "expected an integer"));
  }

  // A time in microseconds, converted to the nearest nanosecond.
  Nanos micros(const char* key, bool non_negative) const {
    const json* v = find(key);
    const char* expected = non_negative ? "expected a non-negative number" : "expected a number";
    if (v == nullptr || !v->is_number()) fail(key, expected);
    const double us = v->get<double>();
    if (!std::isfinite(us) || (non_negative && us < 0.0)) fail(key, expected);
    if (std::abs(us) > kMaxAbsMicros) {
      fail(key, fmt::format("{} of microseconds not beyond {:g}", expected, kMaxAbsMicros));
    }
    return static_cast<Nanos>(std::llround(us * 1000.0));
  }

  json args() const {
    const json* v = find("args");
    if (v == nullptr) return json::object();
    if (!v->is_object()) fail("args", "expected an object");
    return *v;
  }

  // args.name of a metadata event.
  std::string args_name() const {
    const json* v = find("args");
    if (v == nullptr || !v->is_object()) fail("args", "expected an object");
    const auto it = v->find("name");
    if (it == v->end() || !it->is_string()) fail("args.name", "expected a string");
    return it->get<std::string>();
  }

 private:
  std::string_view origin_;
  std::size_t index_;
  const json& event_;
};

struct RawSpan {
  int pid = 0;
  int tid = 0;
  TraceSpan span;
};

struct FlowEnd {
  std::size_t index = 0;  // event index, for error messages
  int pid = 0;
  Nanos ts = 0;
};

// What the events say before the spans get their stream names and the flows their two ends.
struct RawEvents {
  std::map<std::pair<int, int>, std::string> thread_names;
  std::vector<RawSpan> spans;
  std::map<std::int64_t, FlowEnd> starts;
  std::vector<std::pair<std::int64_t, FlowEnd>> finishes;
};

// "M": a process name (the rank's) or a thread name (the stream's).
void read_metadata_event(const EventReader& r, ChromeTrace& trace, RawEvents& raw) {
  const int pid = r.pid();
  const std::string name = r.string("name");
  if (name == "process_name") {
    trace.process_names[pid] = r.args_name();
  } else if (name == "thread_name") {
    const int tid = r.tid();
    raw.thread_names[{pid, tid}] = r.args_name();
  }
}

// "X": a complete slice.
RawSpan read_span(const EventReader& r) {
  RawSpan raw;
  raw.pid = r.pid();
  raw.tid = r.tid();
  raw.span.rank = raw.pid;
  raw.span.start = r.micros("ts", false);
  raw.span.end = raw.span.start + r.micros("dur", true);
  raw.span.name = r.find("name") == nullptr ? std::string() : r.string("name");
  raw.span.args = r.args();
  return raw;
}

// "s" or "f": one end of a flow arrow, by id; a flow starts once.
void read_flow_end(const EventReader& r, std::size_t i, bool start, RawEvents& raw) {
  FlowEnd end;
  end.index = i;
  end.pid = r.pid();
  static_cast<void>(r.tid());  // checked: a flow binds to a slice of that thread
  end.ts = r.micros("ts", false);
  const std::int64_t id =
      r.integer("id", std::numeric_limits<std::int64_t>::min(),
                std::numeric_limits<std::int64_t>::max(), "expected an integer");
  if (start) {
    if (!raw.starts.emplace(id, end).second) {
      r.fail("id", fmt::format("flow {} starts twice", id));
    }
  } else {
    raw.finishes.emplace_back(id, end);
  }
}

void read_events(const json& events, std::string_view origin, ChromeTrace& trace, RawEvents& raw) {
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& event = events[i];
    if (!event.is_object()) {
      fail_trace(origin, fmt::format("traceEvents[{}]: expected an object", i));
    }
    const EventReader r(origin, i, event);
    const std::string ph = r.string("ph");
    if (ph == "M") {
      read_metadata_event(r, trace, raw);
    } else if (ph == "X") {
      raw.spans.push_back(read_span(r));
    } else if (ph == "s" || ph == "f") {
      read_flow_end(r, i, ph == "s", raw);
    }
    // Other phases (instant, counter, async, ...) carry nothing this reader needs.
  }
}

// Each span's stream: its thread's name, or "tid N" for an unnamed thread.
void name_spans(RawEvents& raw, ChromeTrace& trace) {
  trace.spans.reserve(raw.spans.size());
  for (auto& s : raw.spans) {
    const auto it = raw.thread_names.find({s.pid, s.tid});
    s.span.stream = it != raw.thread_names.end() ? it->second : fmt::format("tid {}", s.tid);
    trace.spans.push_back(std::move(s.span));
  }
}

// Flows by id, each end matched with its start; an end without a start, or a second end, is an
// error.
void pair_flows(const RawEvents& raw, std::string_view origin, ChromeTrace& trace) {
  std::map<std::int64_t, TraceFlow> flows;
  for (const auto& [id, f] : raw.finishes) {
    const auto s = raw.starts.find(id);
    if (s == raw.starts.end()) {
      fail_trace(origin,
                 fmt::format("traceEvents[{}].id: flow {} ends without a start (\"s\" event)",
                             f.index, id));
    }
    if (!flows.emplace(id, TraceFlow{id, s->second.pid, f.pid, s->second.ts, f.ts}).second) {
      fail_trace(origin, fmt::format("traceEvents[{}].id: flow {} ends twice", f.index, id));
    }
  }
  // A start without an end (an arrow cut off) is dropped: there is no pair to report.
  trace.flows.reserve(flows.size());
  for (auto& [id, flow] : flows) trace.flows.push_back(flow);
}

ChromeTrace parse_trace(const json& doc, std::string_view origin) {
  if (!doc.is_object()) fail_trace(origin, "expected a JSON object with a traceEvents array");
  const auto events_it = doc.find("traceEvents");
  if (events_it == doc.end() || !events_it->is_array())
    fail_trace(origin, "traceEvents: expected an array");
  const json& events = *events_it;

  ChromeTrace trace;
  trace.metadata = json::object();
  if (const auto it = doc.find("otherData"); it != doc.end()) {
    if (!it->is_object()) fail_trace(origin, "otherData: expected an object");
    trace.metadata = *it;
  }

  RawEvents raw;
  read_events(events, origin, trace, raw);
  name_spans(raw, trace);
  pair_flows(raw, origin, trace);
  return trace;
}

}  // namespace

ChromeTrace read_chrome_trace(std::istream& in, std::string_view origin) {
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw InputError(one_line(fmt::format("{}: could not read the trace", origin)));
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(one_line(fmt::format("{}: not valid JSON: {}", origin, e.what())));
  }
  try {
    return parse_trace(doc, origin);
  } catch (const json::exception& e) {
    // Every access above is type-checked first; this is a last line of defence.
    throw InputError(one_line(fmt::format("{}: malformed trace: {}", origin, e.what())));
  }
}

}  // namespace meshsim
