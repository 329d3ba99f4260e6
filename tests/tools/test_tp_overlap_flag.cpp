#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/error.hpp"
#include "tools/tp_overlap_flag.hpp"

using namespace meshsim;

namespace {

StepPlan read(const std::vector<std::string>& argv, const std::string& hardware = "h100-sxm") {
  const Args args("step", {tp_comm_overlap_option(), tp_overlap_rs_option()}, argv);
  StepPlan p;
  read_tp_comm_overlap(args, load_hardware(hardware), p);
  return p;
}

}  // namespace

TEST_CASE("--tp-comm-overlap: off by default; on with the GPU's SM count") {
  CHECK_FALSE(read({}).tp_comm_overlap);
  CHECK(read({}).gpu_sms == 0);
  const StepPlan h100 = read({"--tp-comm-overlap"});
  CHECK(h100.tp_comm_overlap);
  CHECK(h100.gpu_sms == 132);  // H100 SXM5 (NVIDIA's H100 whitepaper)
  CHECK(read({"--tp-comm-overlap"}, "a100-sxm").gpu_sms == 108);
  CHECK(tp_comm_overlap_option().value_name.empty());  // a switch
}

TEST_CASE("--tp-comm-overlap: a GPU without a known SM count names the flag") {
  CHECK_THROWS_WITH_AS(read({"--tp-comm-overlap"}, "mi300x"),
                       doctest::Contains("--tp-comm-overlap: hardware profile 'mi300x' gives no "
                                         "SM count above 16 (its sm_count field, absent"),
                       InputError);
  // A profile whose sm_count leaves no SM for the GEMMs beside TE's 16 communication SMs.
  const std::vector<std::string> argv = {"--tp-comm-overlap"};
  const Args args("step", {tp_comm_overlap_option()}, argv);
  HardwareProfile small = load_hardware("h100-sxm");
  small.sm_count = 16;
  StepPlan p;
  CHECK_THROWS_WITH_AS(read_tp_comm_overlap(args, small, p),
                       doctest::Contains("gives no SM count above 16 (its sm_count field, too "
                                         "small"),
                       InputError);
}

TEST_CASE("--tp-comm-overlap-rs: pipeline by default, ring-exchange named, only with the overlap") {
  CHECK(read({"--tp-comm-overlap"}).tp_overlap_rs == TpOverlapRs::pipeline);
  CHECK(read({"--tp-comm-overlap", "--tp-comm-overlap-rs", "ring-exchange"}).tp_overlap_rs ==
        TpOverlapRs::ring_exchange);
  CHECK(read({"--tp-comm-overlap", "--tp-comm-overlap-rs", "pipeline"}).tp_overlap_rs ==
        TpOverlapRs::pipeline);
  CHECK_THROWS_WITH_AS(read({"--tp-comm-overlap-rs", "ring-exchange"}),
                       doctest::Contains("--tp-comm-overlap-rs needs --tp-comm-overlap"),
                       InputError);
  CHECK_THROWS_WITH_AS(read({"--tp-comm-overlap", "--tp-comm-overlap-rs", "ring"}),
                       doctest::Contains("--tp-comm-overlap-rs expects one of "
                                         "pipeline|ring-exchange, got 'ring'"),
                       InputError);
  CHECK(to_string(TpOverlapRs::ring_exchange) == "ring-exchange");
  CHECK_FALSE(parse_tp_overlap_rs("ring_exchange").has_value());
}
