#pragma once
// Which GPU a rank uses: one MPI process per GPU, the process's rank among those of its node
// (the "local rank") picks the device. The launchers announce it in the environment — Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK, Slurm's SLURM_LOCALID (srun), MPICH/Hydra's MPI_LOCALRANKID,
// MVAPICH's MV2_COMM_WORLD_LOCAL_RANK, checked in that order; without any of them the backend asks
// MPI (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED). When the job gives each process only its
// own GPU (CUDA_VISIBLE_DEVICES set per task, e.g. srun --gpus-per-task=1), device 0 is it.
#include <functional>
#include <optional>

namespace meshsim {

// `getenv` returns the variable's value or nullptr. Values that are not a non-negative integer
// are ignored.
std::optional<int> local_rank_from_env(const std::function<const char*(const char*)>& getenv);

// The device of the process with this local rank among `devices` visible ones: local_rank mod
// devices (devices >= 1).
int device_for_local_rank(int local_rank, int devices);

}  // namespace meshsim
