#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/comm_plan.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/program.hpp"
#include "traces/chrome_trace_reader.hpp"
#include "traces/chrome_trace_writer.hpp"

namespace meshsim {
namespace {

using nlohmann::json;

KernelCall tiny_kernel() {
  return KernelCall{KernelKind::elementwise, DType::bf16, VectorShape{4096}, {}, {}};
}

// Two CP ranks; per rank: "attn 0" (compute), "kv exchange" (cp_comm, after attn 0, one send to
// and one receive from the other rank), "attn 1" (compute, after the exchange).
// Op ids: rank 0 -> 0, 1, 2; rank 1 -> 3, 4, 5.
Program exchange_program() {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "reader round trip");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("cp_comm");
  for (int r = 0; r < 2; ++r) {
    const int peer = 1 - r;
    const OpId a0 = b.add(r, compute, "attn 0", OpLabels{Phase::fwd, 2, 1, 0, -1}, tiny_kernel());
    P2PCall exchange;
    exchange.sends.push_back(Transfer{peer, 2048, 0, -1});
    exchange.recvs.push_back(Transfer{peer, 2048, 0, -1});
    const OpId x = b.add(r, comm, "kv exchange", OpLabels{Phase::fwd, 2, 1, 0, -1}, exchange, {a0});
    b.add(r, compute, "attn 1", OpLabels{Phase::fwd, 2, 1, 1, -1}, tiny_kernel(), {x});
  }
  return std::move(b).finish();
}

std::string write_trace(const ChromeTraceRecorder& recorder) {
  std::ostringstream out;
  recorder.write(out);
  return out.str();
}

ChromeTrace read_text(const std::string& text, std::string_view origin = "test.json") {
  std::istringstream in(text);
  return read_chrome_trace(in, origin);
}

std::string error_of(const std::string& text) {
  try {
    read_text(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// A valid trace with awkward times, recorded by driving the recorder's signals by hand (the
// engine is not involved): times far from 0 with odd nanoseconds check ns precision.
struct HandTrace {
  Program program;
  CommPlan plan;
  std::vector<OpTiming> timings;
  std::vector<WindowTiming> windows;
  std::string text;
};

HandTrace hand_trace() {
  HandTrace h;
  h.program = exchange_program();
  h.plan = match_communication(h.program);
  constexpr Nanos t0 = 987'654'321'123;  // ~16 minutes into a run
  h.timings = {
      {t0, -1, t0 + 1001},                // rank 0 attn 0
      {t0 + 1001, t0 + 1777, t0 + 2401},  // rank 0 kv exchange
      {t0 + 2401, -1, t0 + 3335},         // rank 0 attn 1
      {t0 + 7, -1, t0 + 1777},            // rank 1 attn 0
      {t0 + 1777, t0 + 1777, t0 + 2401},  // rank 1 kv exchange
      {t0 + 2401, -1, t0 + 2402},         // rank 1 attn 1
  };
  REQUIRE(h.plan.transfers.size() == 2);
  h.windows = {{t0 + 1777, t0 + 2333, 4}, {t0 + 1777, t0 + 2401, 4}};
  ChromeTraceRecorder recorder(h.program, h.plan, TraceMetadata{"measured", "9.9", "hand", "", ""});
  const EngineSignals s = recorder.signals();
  // Completion order as an engine would report it.
  s.on_op_complete(0, h.timings[0]);
  s.on_op_complete(3, h.timings[3]);
  s.on_transfer_complete(0, h.windows[0]);
  s.on_op_complete(1, h.timings[1]);
  s.on_transfer_complete(1, h.windows[1]);
  s.on_op_complete(4, h.timings[4]);
  s.on_op_complete(2, h.timings[2]);
  s.on_op_complete(5, h.timings[5]);
  h.text = write_trace(recorder);
  return h;
}

TEST_CASE("chrome trace reader: round trip of a hand-recorded trace keeps nanoseconds") {
  const HandTrace h = hand_trace();
  const ChromeTrace t = read_text(h.text);
  CHECK(t.process_names == std::map<int, std::string>{{0, "rank 0 (cp=0)"}, {1, "rank 1 (cp=1)"}});
  REQUIRE(t.spans.size() == 6);
  std::vector<bool> seen(6, false);
  for (const auto& span : t.spans) {
    const auto op = span.args.at("op").get<std::size_t>();
    REQUIRE(op < 6);
    CAPTURE(op);
    seen[op] = true;
    const Op& o = h.program.ops[op];
    CHECK(span.rank == o.rank);
    CHECK(span.stream == h.program.streams[static_cast<std::size_t>(o.stream)]);
    CHECK(span.name == o.name);
    CHECK(span.start == h.timings[op].start);
    CHECK(span.end == h.timings[op].end);
    CHECK(span.args.at("phase") == "fwd");
  }
  CHECK(std::count(seen.begin(), seen.end(), true) == 6);

  REQUIRE(t.flows.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const TraceFlow& f = t.flows[i];
    const MatchedTransfer& mt = h.plan.transfers[i];
    CHECK(f.id == static_cast<std::int64_t>(i));
    CHECK(f.src_rank == mt.src);
    CHECK(f.dst_rank == mt.dst);
    const Nanos send_start = h.timings[static_cast<std::size_t>(mt.send_op)].start;
    const Nanos recv_start = h.timings[static_cast<std::size_t>(mt.recv_op)].start;
    // s = max(send op start, transfer start); f = max(transfer end - 1, recv op start, s).
    CHECK(f.send_ts == std::max(send_start, h.windows[i].start));
    CHECK(f.recv_ts == std::max(h.windows[i].end - 1, recv_start));
  }
  CHECK(t.metadata.at("schema_version") == 1);
  CHECK(t.metadata.at("source") == "measured");
  CHECK(t.metadata.at("meshsim_version") == "9.9");
  CHECK(t.metadata.at("description") == "reader round trip");
}

TEST_CASE("chrome trace reader: round trip of a simulated trace gives the timeline") {
  const Program p = exchange_program();
  const CommPlan plan = match_communication(p);
  Durations d;
  d.ops = {1001, 0, 333, 1503, 0, 7};
  d.transfers.assign(plan.transfers.size(), 499);
  ChromeTraceRecorder recorder(p, plan, TraceMetadata{});
  const Timeline tl = simulate(p, plan, d, recorder.signals());
  const ChromeTrace t = read_text(write_trace(recorder));
  REQUIRE(t.spans.size() == p.ops.size());
  for (const auto& span : t.spans) {
    const auto op = span.args.at("op").get<std::size_t>();
    REQUIRE(op < p.ops.size());
    CHECK(span.start == tl.ops[op].start);
    CHECK(span.end == tl.ops[op].end);
  }
  REQUIRE(t.flows.size() == plan.transfers.size());
  for (const auto& f : t.flows) {
    const auto& w = tl.transfers[static_cast<std::size_t>(f.id)];
    CHECK(f.send_ts == w.start);    // rendezvous at 1503: both exchanges have been dispatched
    CHECK(f.recv_ts == w.end - 1);  // 1503 + 499 - 1
    CHECK(f.send_ts <= f.recv_ts);
  }
}

TEST_CASE("chrome trace reader: malformed input names the field") {
  const std::string x_ok = R"({"ph":"X","name":"a","pid":0,"tid":1,"ts":1.5,"dur":2})";
  auto one = [](const std::string& event) { return R"({"traceEvents":[)" + event + "]}"; };
  // A valid event first, so indices in the messages are checked too.
  auto second = [&](const std::string& event) {
    return R"({"traceEvents":[)" + x_ok + "," + event + "]}";
  };

  CHECK(error_of(second(R"({"ph":"X","name":"b","pid":0,"tid":1,"ts":1,"dur":-1})")) ==
        "test.json: traceEvents[1].dur: expected a non-negative number");

  struct Case {
    std::string text;
    std::string expected;  // substring of the message
  };
  const Case cases[] = {
      {"", "test.json: not valid JSON"},
      {"not json", "test.json: not valid JSON"},
      {R"({"traceEvents":[)", "test.json: not valid JSON"},
      {"[]", "test.json: expected a JSON object with a traceEvents array"},
      {"{}", "test.json: traceEvents: expected an array"},
      {R"({"traceEvents":{}})", "test.json: traceEvents: expected an array"},
      {R"({"traceEvents":[],"otherData":3})", "test.json: otherData: expected an object"},
      {one("1"), "traceEvents[0]: expected an object"},
      {second("null"), "traceEvents[1]: expected an object"},
      {one(R"({"name":"a","pid":0,"tid":1,"ts":1,"dur":1})"),
       "traceEvents[0].ph: expected a string"},
      {one(R"({"ph":5,"pid":0,"tid":1,"ts":1,"dur":1})"), "traceEvents[0].ph: expected a string"},
      {second(R"({"ph":"X","pid":0,"tid":1,"dur":1})"), "traceEvents[1].ts: expected a number"},
      {second(R"({"ph":"X","pid":0,"tid":1,"ts":"1","dur":1})"), "traceEvents[1].ts"},
      {second(R"({"ph":"X","pid":0,"tid":1,"ts":1e300,"dur":1})"), "traceEvents[1].ts"},
      {second(R"({"ph":"X","pid":0,"tid":1,"ts":1})"), "traceEvents[1].dur: expected a"},
      {second(R"({"ph":"X","pid":0,"tid":1,"ts":1,"dur":null})"), "traceEvents[1].dur"},
      {second(R"({"ph":"X","pid":0,"tid":1,"ts":1,"dur":1e20})"), "traceEvents[1].dur"},
      {second(R"({"ph":"X","tid":1,"ts":1,"dur":1})"), "traceEvents[1].pid"},
      {second(R"({"ph":"X","pid":"0","tid":1,"ts":1,"dur":1})"), "traceEvents[1].pid"},
      {second(R"({"ph":"X","pid":1.5,"tid":1,"ts":1,"dur":1})"), "traceEvents[1].pid"},
      {second(R"({"ph":"X","pid":-1,"tid":1,"ts":1,"dur":1})"), "traceEvents[1].pid"},
      {second(R"({"ph":"X","pid":99999999999,"tid":1,"ts":1,"dur":1})"), "traceEvents[1].pid"},
      {second(R"({"ph":"X","pid":0,"ts":1,"dur":1})"), "traceEvents[1].tid"},
      {second(R"({"ph":"X","pid":0,"tid":[],"ts":1,"dur":1})"), "traceEvents[1].tid"},
      {second(R"({"ph":"X","pid":0,"tid":1,"ts":1,"dur":1,"name":3})"), "traceEvents[1].name"},
      {second(R"({"ph":"X","pid":0,"tid":1,"ts":1,"dur":1,"args":[]})"), "traceEvents[1].args"},
      {second(R"({"ph":"M","name":"process_name","pid":0,"tid":0})"), "traceEvents[1].args"},
      {second(R"({"ph":"M","name":"thread_name","pid":0,"tid":1,"args":{"name":1}})"),
       "traceEvents[1].args.name"},
      {second(R"({"ph":"M","pid":0,"tid":0,"args":{"name":"x"}})"), "traceEvents[1].name"},
      {second(R"({"ph":"f","bp":"e","id":3,"pid":0,"tid":1,"ts":1})"),
       "traceEvents[1].id: flow 3 ends without a start"},
      {second(R"({"ph":"s","id":"3","pid":0,"tid":1,"ts":1})"), "traceEvents[1].id"},
      {second(R"({"ph":"s","id":3,"pid":0,"tid":1})"), "traceEvents[1].ts"},
      {R"({"traceEvents":[{"ph":"s","id":3,"pid":0,"tid":1,"ts":1},)"
       R"({"ph":"s","id":3,"pid":1,"tid":1,"ts":2}]})",
       "traceEvents[1].id: flow 3 starts twice"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    const std::string message = error_of(c.text);
    CHECK(message.find(c.expected) != std::string::npos);
    CHECK(message.rfind("test.json: ", 0) == 0);
    CHECK(message.find('\n') == std::string::npos);
  }

  // Reading a minimal valid trace (no metadata, a span on an unnamed thread) works.
  const ChromeTrace t = read_text(one(x_ok));
  REQUIRE(t.spans.size() == 1);
  CHECK(t.spans[0].start == 1500);  // 1.5 us
  CHECK(t.spans[0].end == 3500);    // + 2 us
  CHECK(t.spans[0].stream == "tid 1");
  CHECK(t.metadata == json::object());
}

// Mutations of a valid trace's text: byte flips, truncation, insertions, deletions (text level)
// and deleted keys / changed value types (JSON level). The reader must either succeed or throw
// InputError, never anything else, and never crash.
TEST_CASE("chrome trace reader: mutation fuzz only succeeds or throws InputError") {
  const std::string base = hand_trace().text;
  const json base_json = json::parse(base);
  std::mt19937_64 rng(20240611);
  auto pick = [&](std::size_t n) {
    return static_cast<std::size_t>(std::uniform_int_distribution<std::size_t>(0, n - 1)(rng));
  };
  const std::vector<json> replacements = {
      json(nullptr), json(true),   json("text"),  json(-1),       json(-0.5),
      json(1e300),   json(0),      json::array(), json::object(), json(18446744073709551615ULL),
      json(3.25),    json("0x1f"), json("X"),     json("f"),      json(-9223372036854775807LL),
  };
  const char* junk = "{}[]\",:0123456789.-eE\\ntfu \xff\x80\xc3";

  int succeeded = 0, rejected = 0;
  constexpr int kMutations = 2000;
  for (int i = 0; i < kMutations; ++i) {
    std::string text;
    const std::size_t kind = pick(7);
    if (kind <= 3) {
      text = base;
      const std::size_t edits = 1 + pick(4);
      for (std::size_t e = 0; e < edits && !text.empty(); ++e) {
        const std::size_t at = pick(text.size());
        switch (kind) {
          case 0:  // flip a byte
            text[at] = static_cast<char>(text[at] ^ static_cast<char>(1 << pick(8)));
            break;
          case 1:  // truncate
            text.resize(at);
            break;
          case 2:  // insert a structural character
            text.insert(at, 1, junk[pick(std::char_traits<char>::length(junk))]);
            break;
          default:  // delete a run of bytes
            text.erase(at, 1 + pick(16));
            break;
        }
      }
    } else {
      json doc = base_json;
      json& events = doc["traceEvents"];
      const std::size_t edits = 1 + pick(3);
      for (std::size_t e = 0; e < edits; ++e) {
        if (kind == 6) {  // change a top-level value's type
          const char* keys[] = {"traceEvents", "otherData", "displayTimeUnit"};
          doc[keys[pick(3)]] = replacements[pick(replacements.size())];
          break;
        }
        if (!events.is_array() || events.empty()) break;
        json& event = events[pick(events.size())];
        if (!event.is_object() || event.empty()) continue;
        auto it = event.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(pick(event.size())));
        if (kind == 4) {  // delete a key
          const std::string key = it.key();
          event.erase(key);
        } else {  // change a value's type (or an args member's)
          if (it->is_object() && !it->empty() && pick(2) == 0) {
            auto inner = it->begin();
            std::advance(inner, static_cast<std::ptrdiff_t>(pick(it->size())));
            *inner = replacements[pick(replacements.size())];
          } else {
            *it = replacements[pick(replacements.size())];
          }
        }
      }
      text = doc.dump();
    }
    try {
      const ChromeTrace t = read_text(text, "fuzz.json");
      ++succeeded;
      for (const auto& span : t.spans) CHECK(span.start <= span.end);
    } catch (const InputError& e) {
      ++rejected;
      const std::string message = e.what();
      CHECK(message.rfind("fuzz.json: ", 0) == 0);
      CHECK(message.find('\n') == std::string::npos);
    } catch (const std::exception& e) {
      FAIL("mutation " << i << " threw a non-InputError: " << e.what());
    }
  }
  CHECK(succeeded + rejected == kMutations);
  // Both outcomes occur, so the fuzz exercises the reader rather than only the JSON parser.
  CHECK(succeeded > 100);
  CHECK(rejected > 100);
}

}  // namespace
}  // namespace meshsim
