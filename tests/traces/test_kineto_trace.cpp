#include "traces/kineto_trace.hpp"

#include <sstream>

#include <doctest/doctest.h>

#include "sim/error.hpp"
#include "tests/traces/kineto_fixture.hpp"

using namespace meshsim;
using meshsim::test::KinetoFixture;

namespace {
KinetoTrace parse(const std::string& text) {
  std::istringstream in(text);
  return read_kineto_trace(in, "t.json");
}
}  // namespace

TEST_CASE("a kernel's stack is the operators enclosing its launch, outermost first") {
  KinetoFixture f;
  f.op("aten::linear", 10, 20);  // [10, 30]
  f.op("aten::addmm", 12, 10);   // [12, 22], inside linear
  f.kernel("gemm_a", 15, 100, 5);
  f.op("aten::add", 40, 5);  // after linear closed
  f.kernel("add_k", 41, 110, 2);
  const KinetoTrace t = f.read();
  REQUIRE(t.kernels.size() == 2);
  REQUIRE(t.kernels[0].stack.size() == 2);
  CHECK(t.cpu_ops[t.kernels[0].stack[0]].name == "aten::linear");
  CHECK(t.cpu_ops[t.kernels[0].stack[1]].name == "aten::addmm");
  REQUIRE(t.kernels[1].stack.size() == 1);
  CHECK(t.cpu_ops[t.kernels[1].stack[0]].name == "aten::add");
  CHECK(t.kernels[0].stream == 7);
  CHECK(t.kernels[0].dur_us == 5);
  CHECK(t.rank == 0);
  CHECK(t.world_size == 8);
}

TEST_CASE("kernels are ordered by device, stream and start whatever the file order") {
  KinetoFixture f;
  f.kernel("late", 1, 200, 1);
  f.kernel("other_stream", 2, 50, 1, 3);
  f.kernel("early", 3, 100, 1);
  const KinetoTrace t = f.read();
  CHECK(t.kernels[0].name == "other_stream");
  CHECK(t.kernels[1].name == "early");
  CHECK(t.kernels[2].name == "late");
}

TEST_CASE("without a launch event the kernel's External id names its operator") {
  const KinetoTrace t = parse(R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5,
     "args": {"External id": 42}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 3,
     "args": {"External id": 42, "device": 0, "stream": 7}}]})J");
  REQUIRE(t.kernels.size() == 1);
  REQUIRE(t.kernels[0].stack.size() == 1);
  CHECK(t.cpu_ops[t.kernels[0].stack[0]].name == "aten::mm");
}

TEST_CASE("events other than complete CPU, runtime and GPU events are skipped") {
  const KinetoTrace t = parse(R"J({"traceEvents": [
    {"ph": "i", "name": "marker", "ts": 1},
    {"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
    {"ph": "f", "id": 3, "pid": 1, "tid": 1, "ts": 2},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 1,
     "dur": 1, "args": {"stream": 7}}]})J");
  CHECK(t.cpu_ops.empty());
  REQUIRE(t.kernels.size() == 1);
  CHECK(t.kernels[0].category == "gpu_memset");
}

TEST_CASE("malformed traces are refused naming the event and the field") {
  CHECK_THROWS_WITH_AS(parse("[1, 2"), doctest::Contains("t.json: not a JSON trace"), InputError);
  CHECK_THROWS_WITH_AS(parse("{}"), "t.json: traceEvents: expected an array of trace events",
                       InputError);
  CHECK_THROWS_WITH_AS(parse(R"J({"traceEvents": [3]})J"),
                       "t.json: traceEvents[0]: expected an object", InputError);
  CHECK_THROWS_WITH_AS(
      parse(R"J({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}]})J"),
      "t.json: traceEvents[0].dur: expected a number of microseconds", InputError);
  CHECK_THROWS_WITH_AS(
      parse(
          R"J({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -2}]})J"),
      doctest::Contains("traceEvents[0].dur: expected a number of microseconds in [0"), InputError);
  CHECK_THROWS_WITH_AS(parse(R"J({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k",
                                 "ts": 1, "dur": 2, "args": {"stream": "seven"}}]})J"),
                       "t.json: traceEvents[0].args.stream: expected an integer", InputError);
}

TEST_CASE("a number beyond a double is bad input, not an internal error") {
  // Found by the fuzz driver: nlohmann::json reports it as out_of_range, not parse_error.
  CHECK_THROWS_WITH_AS(parse(R"J({"traceEvents": [{"ph": "X", "ts": 1e999}]})J"),
                       doctest::Contains("t.json: not a JSON trace ("), InputError);
}
