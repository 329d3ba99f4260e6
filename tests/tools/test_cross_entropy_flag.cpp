#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/error.hpp"
#include "tools/cross_entropy_flag.hpp"

using namespace meshsim;

namespace {

StepPlan read(const std::vector<std::string>& argv, Recompute recompute = Recompute::none) {
  const Args args("step", {cross_entropy_option()}, argv);
  StepPlan p;
  p.recompute = recompute;
  read_cross_entropy(args, p);
  return p;
}

}  // namespace

TEST_CASE("--cross-entropy: Megatron's vocab-parallel loss by default, torch-fp32 on request") {
  CHECK(read({}).cross_entropy == CrossEntropy::vocab_parallel);
  CHECK(read({"--cross-entropy", "torch-fp32"}).cross_entropy == CrossEntropy::torch_fp32);
  CHECK(read({"--cross-entropy", "vocab-parallel"}).cross_entropy == CrossEntropy::vocab_parallel);
}

TEST_CASE("--cross-entropy: torchtitan's loss by default with its selective-op recompute") {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    CHECK(read({}, r).cross_entropy == CrossEntropy::vocab_parallel);
  }
  CHECK(read({}, Recompute::selective_op).cross_entropy == CrossEntropy::torch_fp32);
  CHECK(read({"--cross-entropy", "vocab-parallel"}, Recompute::selective_op).cross_entropy ==
        CrossEntropy::vocab_parallel);
  CHECK_FALSE(given_cross_entropy(Args("step", {cross_entropy_option()}, {})).has_value());
}

TEST_CASE("--cross-entropy: another name is refused naming the flag") {
  CHECK_THROWS_WITH_AS(read({"--cross-entropy", "fused"}), doctest::Contains("--cross-entropy"),
                       InputError);
}
