#pragma once
// What the commands that run Programs for real (validate, validate suite, calibrate) share: the
// world they run on (one MPI process per rank under a launcher, this process alone otherwise),
// the --timeout flag, and how a failed run becomes an exit code.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tools/cli_args.hpp"
#include "tools/commands.hpp"
#include "validate/cuda/cuda_plugin.hpp"
#include "validate/mpi/launch_env.hpp"
#include "validate/run/run_world.hpp"

namespace meshsim {

std::unique_ptr<RunWorld> make_run_world(const LaunchEnv& env);

OptionSpec timeout_option();
std::chrono::milliseconds parse_timeout(const Args& args);  // --timeout SECONDS [300]

// Runs `body` (collective over the world's ranks). A setup failure (SetupError: bad input found
// by the ranks) prints its line where it should and gives exit code 2; a failed run
// (ExecutionError) prints it and gives 1; nullopt when `body` returned.
std::optional<int> run_collectively(const CommandContext& ctx, const std::function<void()>& body);

// Why `--backend cuda` cannot run here (validate/cuda's answer, naming the flag when the build has
// the backend and the plugin or the GPU is missing); empty when it can.
std::optional<std::string> cuda_backend_unavailable();

// The CUDA backend plugin, once cuda_backend_unavailable() said it can run (otherwise an
// InputError with its answer).
const CudaPlugin& cuda_backend();

}  // namespace meshsim
