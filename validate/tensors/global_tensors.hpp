#pragma once
// The unsharded tensors of a run, put together on one rank from every rank's slots through the
// workload's tensor layout: what --dump writes and what the numerics compare. A rank packs the
// bytes of its mapped slots (slot id order); rank 0 unpacks every rank's package into the global
// tensors (values widened to double; a replicated tensor is taken from the last rank holding it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/dtype.hpp"
#include "sim/program.hpp"
#include "validate/tensors/tensor_layout.hpp"
#include "validate/tensors/tensor_store.hpp"

namespace meshsim {

struct GlobalTensorData {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::fp32;          // storage type of the slots it came from
  std::vector<double> values;         // row-major
  std::int64_t elements_written = 0;  // how many elements some rank provided (with repeats)
};

std::vector<std::byte> pack_shards(const Program& program, const TensorLayout& layout,
                                   const TensorStore& store);

// per_rank[r] is rank r's pack_shards().
std::vector<GlobalTensorData> assemble_global_tensors(
    const Program& program, const TensorLayout& layout,
    const std::vector<std::vector<std::byte>>& per_rank);

// The tensors as --dump names them: a tensor with `parts` becomes one tensor per first-axis index.
std::vector<GlobalTensorData> dump_tensors(const TensorLayout& layout,
                                           std::vector<GlobalTensorData> tensors);

}  // namespace meshsim
