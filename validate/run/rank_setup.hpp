#pragma once
// What a rank prepares before its run, whatever the backend: its schedule, its memory (every
// tensor slot of the rank plus the communication scratch), deterministic inputs from the seed, and
// the resolved arguments of its communication calls. Nothing here is timed.
#include <cstdint>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"
#include "validate/run/comm_args.hpp"
#include "validate/run/rank_schedule.hpp"
#include "validate/tensors/input_fill.hpp"
#include "validate/tensors/tensor_layout.hpp"
#include "validate/tensors/tensor_store.hpp"

namespace meshsim {

struct RankSetup {
  RankSetup(const Program& program, const CommPlan& plan, int rank, const TensorLayout& layout,
            std::uint64_t seed);

  std::int64_t memory_bytes() const {
    return store.total_slot_bytes() + store.total_scratch_bytes();
  }

  RankSchedule schedule;
  TensorStore store;
  FillSummary fill;
  CommArgs comm;
};

}  // namespace meshsim
