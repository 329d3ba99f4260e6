#include "validate/run/rank_setup.hpp"

namespace meshsim {

RankSetup::RankSetup(const Program& program, const CommPlan& plan, int rank,
                     const TensorLayout& layout, std::uint64_t seed)
    : schedule(program, rank),
      store(program, rank, comm_scratch_bytes(program, plan, rank)),
      fill(fill_inputs(store, program, layout, seed)),
      comm(program, plan, store) {}

}  // namespace meshsim
