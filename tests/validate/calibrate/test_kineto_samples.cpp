#include "validate/calibrate/kineto_samples.hpp"

#include <doctest/doctest.h>

#include "tests/traces/kineto_fixture.hpp"

using namespace meshsim;
using meshsim::test::KinetoFixture;
using meshsim::test::shapes;

namespace {
void all_reduce(KinetoFixture& f, double cpu, double gpu, nlohmann::json ranks) {
  nlohmann::json args = {{"Collective name", "allreduce"},
                         {"In msg nelems", 1024},
                         {"Out msg nelems", 1024},
                         {"Group size", 4},
                         {"dtype", "Float"}};
  if (!ranks.is_null()) args["Process Group Ranks"] = ranks;
  f.op("record_param_comms", cpu, 5, args);
  f.kernel("ncclDevKernel_AllReduce", cpu + 1, gpu, 10);
}
}  // namespace

TEST_CASE("samples: compute kernels with shapes, collectives placed, the rest counted") {
  KinetoFixture f;
  f.op("aten::mm", 0, 5, shapes({{64, 64}, {64, 64}}, {"float", "float"}));
  f.kernel("gemm_k", 1, 100, 4);  // gap to the next: 3 µs
  f.op("aten::mm", 10, 5, shapes({{64, 64}, {64, 64}}, {"float", "float"}));
  f.kernel("gemm_k", 11, 107, 4);   // gap 5 µs
  f.kernel("mystery", 20, 116, 2);  // gap 500 µs after it: not a launch gap
  f.kernel("mystery", 21, 618, 2);
  all_reduce(f, 30, 700, "[0, 1, 2, 3]");
  const KinetoSamples s = kineto_calibration_samples(f.read(), 8);
  CHECK(s.kernels == 5);
  CHECK(s.kernel_seconds == doctest::Approx(22e-6));
  REQUIRE(s.samples.compute.size() == 2);
  CHECK(s.samples.compute[0].seconds == doctest::Approx(4e-6));
  REQUIRE(s.samples.comm.size() == 1);
  CHECK(s.samples.comm[0].placement.ranks == 4);
  CHECK(s.samples.comm[0].placement.nodes == 1);
  // gaps under 100 µs on stream 7: 3, 5 and 80 (107+4 .. 116 = 5; 100+4 .. 107 = 3; 618+2 .. 700
  // = 80); the 500 µs gap is left out; median of {3, 5, 80} = 5 µs
  REQUIRE(s.samples.launch_gap_s);
  CHECK(*s.samples.launch_gap_s == doctest::Approx(5e-6));
  REQUIRE(s.unmatched.size() == 1);
  CHECK(s.unmatched[0].kernels == 2);
  CHECK(s.unmatched[0].seconds == doctest::Approx(4e-6));
  CHECK(s.unmatched[0].reason == "kernel name not recognized");
}

TEST_CASE("collective placement: ranks across nodes, or refused when unknown") {
  KinetoFixture f;
  all_reduce(f, 0, 100, "[0, 8, 16, 24]");  // one GPU on each of 4 nodes of 8
  all_reduce(f, 10, 200, nullptr);          // a group of 4 in a world of 16: unknown
  const KinetoSamples s = kineto_calibration_samples(f.read(16), 8);
  REQUIRE(s.samples.comm.size() == 1);
  CHECK(s.samples.comm[0].placement.nodes == 4);
  CHECK(s.samples.comm[0].placement.min_per_node == 1);
  REQUIRE(s.unmatched.size() == 1);
  CHECK(s.unmatched[0].category == "communication");
  CHECK(s.unmatched[0].reason.find("placement unknown") != std::string::npos);
}
