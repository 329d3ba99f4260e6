#include "validate/mpi/launch_env.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

namespace meshsim {
namespace {

// The integer value of the first of `names` set in the environment.
bool env_int(std::initializer_list<const char*> names, int& value) {
  for (const char* name : names) {
    const char* s = std::getenv(name);
    if (s == nullptr || *s == '\0') continue;
    const std::string_view v(s);
    int parsed = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
    if (ec == std::errc() && end == v.data() + v.size()) {
      value = parsed;
      return true;
    }
  }
  return false;
}

}  // namespace

LaunchEnv detect_launch_env() {
  LaunchEnv env;
  int size = 1;
  const bool has_size =
      env_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE"}, size);
  int rank = 0;
  const bool has_rank =
      env_int({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK"}, rank);
  env.under_launcher = has_size || has_rank;
  env.size = size;
  env.rank = rank;
  int local = size;
  env_int({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE",
           "SLURM_NTASKS_PER_NODE"},
          local);
  env.local_size = local > 0 ? local : size;
  return env;
}

std::string mpirun_command(int ranks, std::string_view command) {
  std::string out = fmt::format("mpirun -np {}", ranks);
  if (::geteuid() == 0) out += " --allow-run-as-root";
  // Open MPI counts one slot per core and a rank runs a thread per stream: allow more ranks
  // than cores (harmless when there are enough).
  return out + " --oversubscribe " + std::string(command);
}

}  // namespace meshsim
