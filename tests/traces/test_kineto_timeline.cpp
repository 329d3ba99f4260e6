#include "traces/kineto_timeline.hpp"

#include <doctest/doctest.h>

#include "tests/traces/kineto_fixture.hpp"

using namespace meshsim;
using meshsim::test::KinetoFixture;
using meshsim::test::shapes;

TEST_CASE("the measured timeline: times from the first kernel, a thread per stream, sums") {
  KinetoFixture f;
  f.op("aten::mm", 0, 10, shapes({{64, 64}, {64, 64}}, {"float", "float"}));
  f.kernel("gemm_k", 1, 1000, 4);
  f.op("aten::add", 20, 10, shapes({{64}, {64}}, {"float", "float"}));
  f.kernel("elementwise_k", 21, 1010, 1.5, 9);
  f.kernel("mystery", 25, 1020, 2);
  const KinetoTimeline t = kineto_timeline(f.read(), "t.json");
  CHECK(t.seconds[0] == doctest::Approx(4e-6));    // gemm
  CHECK(t.seconds[2] == doctest::Approx(1.5e-6));  // memory
  CHECK(t.seconds[4] == doctest::Approx(2e-6));    // other
  CHECK(t.span_s == doctest::Approx(22e-6));       // 1000 .. 1022 µs
  int threads = 0, spans = 0;
  double first = 1e9;
  for (const auto& e : t.trace["traceEvents"]) {
    if (e["name"] == "thread_name") ++threads;
    if (e["ph"] == "X") {
      ++spans;
      first = std::min(first, e["ts"].get<double>());
    }
  }
  CHECK(threads == 2);
  CHECK(spans == 3);
  CHECK(first == 0.0);
  CHECK(t.trace["otherData"]["source"] == "t.json");
}
