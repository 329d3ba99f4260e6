#include <doctest/doctest.h>

#include <string>

#include "schedules/training_step.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/run.hpp"
#include "tests/schedules/tiny_moe.hpp"

using namespace meshsim;
using meshsim::test::plan;
using meshsim::test::tiny_moe;

TEST_CASE("step moe: --overlap-moe-comm runs each all-to-all beside the other part's compute") {
  // dualpipev on 2 pipeline ranks, 8 microbatches: its overlapped pairs interleave at the EP
  // collectives. The same ops are emitted (another order); an all-to-all of one (microbatch,
  // chunk) now runs while a compute kernel of the other part runs, and the step is not slower.
  const HardwareProfile hw = *builtin_hardware("h100-sxm");
  TransformerModel m = tiny_moe(5, 1);
  m.moe->expert_ffn = 1024;
  StepPlan p = plan(1, 2, 8, 8, 64);
  p.schedule = PipelineSchedule::dualpipev;
  const auto plain = run_simulation(build_training_step(m, p, hw.gpus_per_node), hw);
  p.moe.overlap_comm = true;
  const auto overlapped = run_simulation(build_training_step(m, p, hw.gpus_per_node), hw);
  CHECK(overlapped.program.ops.size() == plain.program.ops.size());
  CHECK(overlapped.metrics.makespan <= plain.metrics.makespan);
  const auto beside_other_compute = [](const SimulationResult& r) {
    int n = 0;
    const Program& prog = r.program;
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      const Op& a = prog.ops[i];
      if (a.name.find("all-to-all") == std::string::npos) continue;
      const OpTiming& ta = r.timeline.ops[i];
      for (std::size_t j = 0; j < prog.ops.size(); ++j) {
        const Op& k = prog.ops[j];
        const bool same_part =
            k.labels.microbatch == a.labels.microbatch && k.labels.chunk == a.labels.chunk;
        if (k.rank != a.rank || !k.is_compute() || same_part) {
          continue;
        }
        const OpTiming& tk = r.timeline.ops[j];
        if (tk.start < ta.end && ta.comm_start < tk.end) {
          ++n;
          break;
        }
      }
    }
    return n;
  };
  CHECK(beside_other_compute(plain) == 0);
  CHECK(beside_other_compute(overlapped) > 0);
  // Only dualpipev's pairs can overlap; a dense model has no all-to-all.
  p.schedule = PipelineSchedule::one_f_one_b;
  CHECK_THROWS_AS(check_step_plan(m, p), InputError);
}
