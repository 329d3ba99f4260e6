#pragma once
// Deterministic input contents for one rank's tensor slots (see value_generator.hpp). A slot is
// filled when the workload layout marks its global tensor as an input — then it holds exactly the
// elements of the unsharded tensor at its global positions — or when the Program reads it and
// never writes it (a pure input the layout does not know, keyed by rank and slot name so that a
// Program loaded from JSON still runs on non-trivial data). Every other slot stays zero.
#include <cstdint>
#include <vector>

#include "sim/program.hpp"
#include "validate/tensors/tensor_layout.hpp"
#include "validate/tensors/tensor_store.hpp"

namespace meshsim {

// Slots of `rank` that an op reads (kernel input, send buffer, collective input) and no op of the
// rank writes (kernel output, receive buffer, collective output), in slot id order.
std::vector<SlotId> read_only_slots(const Program& program, int rank);

struct FillSummary {
  int from_layout = 0;  // slots filled as shards of global tensors
  int by_name = 0;      // read-only slots the layout does not know
  std::int64_t elements = 0;
};

FillSummary fill_inputs(TensorStore& store, const Program& program, const TensorLayout& layout,
                        std::uint64_t seed);

}  // namespace meshsim
