#pragma once
// The memory part of `meshsim step`'s text output: the peak against the GPU's memory, the table
// per pipeline rank (weights, gradients, optimizer state, activations, recompute, CP buffers,
// total), what the totals include beyond the columns, and an uneven layer split.
#include <string>

#include "schedules/memory_model.hpp"

namespace meshsim {

std::string memory_text(const MemoryEstimate& mem);

}  // namespace meshsim
