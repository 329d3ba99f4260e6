#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "validate/mpi/launch_env.hpp"

using namespace meshsim;

TEST_CASE("a launcher is recognized from Open MPI's or PMI's environment") {
  const char* saved_size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (saved_size != nullptr) return;  // running under mpirun: leave the environment alone
  ::unsetenv("PMI_SIZE");
  ::unsetenv("PMIX_RANK");
  ::unsetenv("PMI_RANK");
  CHECK_FALSE(detect_launch_env().under_launcher);
  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  const LaunchEnv env = detect_launch_env();
  CHECK(env.under_launcher);
  CHECK(env.size == 4);
  CHECK(env.rank == 3);
  CHECK(env.local_size == 4);  // no local size announced: every process counts as local
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  CHECK(detect_launch_env().local_size == 2);
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::setenv("PMI_SIZE", "2", 1);
  CHECK(detect_launch_env().size == 2);
  ::unsetenv("PMI_SIZE");
}

TEST_CASE("the launch command names the process count and oversubscribes") {
  const std::string cmd = mpirun_command(4, "meshsim validate ring-attention --cp 4");
  CHECK(cmd.starts_with("mpirun -np 4 "));
  CHECK(cmd.find(" --oversubscribe meshsim validate ring-attention --cp 4") != std::string::npos);
}
