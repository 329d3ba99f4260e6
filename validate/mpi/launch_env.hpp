#pragma once
// Whether this process was started by an MPI launcher (mpirun/mpiexec, srun with PMI/PMIx), read
// from the environment before MPI is initialized, and the command line that launches a Program
// of N ranks.
#include <string>
#include <string_view>

namespace meshsim {

struct LaunchEnv {
  bool under_launcher = false;
  int rank = 0;  // this process's world rank as the launcher announced it (0 if unknown)
  int size = 1;  // processes the launcher started (1 if unknown)
  // Processes on this node (Open MPI, MPICH, MVAPICH, Slurm announce it; `size` if unknown).
  int local_size = 1;
};

LaunchEnv detect_launch_env();

// "mpirun -np N [--allow-run-as-root] --oversubscribe <command>" (the root flag when running as
// root: Open MPI refuses root otherwise).
std::string mpirun_command(int ranks, std::string_view command);

}  // namespace meshsim
