#include <doctest/doctest.h>

#include <map>
#include <string>

#include "sim/error.hpp"
#include "validate/cuda/gpu_binding.hpp"

using namespace meshsim;

namespace {

std::optional<int> local_rank(const std::map<std::string, std::string>& env) {
  return local_rank_from_env([&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("gpu binding: the local rank comes from the launcher's environment") {
  CHECK_FALSE(local_rank({}));
  CHECK(local_rank({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}}) == 3);
  CHECK(local_rank({{"SLURM_LOCALID", "5"}}) == 5);
  CHECK(local_rank({{"MPI_LOCALRANKID", "1"}}) == 1);
  CHECK(local_rank({{"MV2_COMM_WORLD_LOCAL_RANK", "2"}}) == 2);
  // Open MPI's variable first (mpirun inside a Slurm allocation sets both).
  CHECK(local_rank({{"SLURM_LOCALID", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "6"}}) == 6);
  // Values that are not a non-negative integer are skipped.
  CHECK(local_rank({{"OMPI_COMM_WORLD_LOCAL_RANK", "x1"}, {"SLURM_LOCALID", "4"}}) == 4);
  CHECK_FALSE(local_rank({{"SLURM_LOCALID", "-1"}}));
}

TEST_CASE("gpu binding: local rank modulo the visible devices") {
  CHECK(device_for_local_rank(3, 8) == 3);
  CHECK(device_for_local_rank(9, 8) == 1);  // 9 mod 8
  CHECK(device_for_local_rank(5, 1) == 0);  // one visible device per process (CUDA_VISIBLE_DEVICES)
  CHECK_THROWS_AS(device_for_local_rank(0, 0), InvariantError);
}
