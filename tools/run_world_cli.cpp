#include "tools/run_world_cli.hpp"

#include <ostream>

#include "sim/error.hpp"
#include "validate/cuda/cuda_availability.hpp"
#include "validate/cuda/cuda_plugin_loader.hpp"
#include "validate/mpi/mpi_world.hpp"
#include "validate/run/executor.hpp"
#include "validate/run/solo_world.hpp"
#include "validate/run/validate_driver.hpp"

namespace meshsim {

std::unique_ptr<RunWorld> make_run_world(const LaunchEnv& env) {
  if (env.under_launcher) return std::make_unique<MpiWorld>();
  return std::make_unique<SoloWorld>();
}

OptionSpec timeout_option() {
  return {"--timeout", "SECONDS",
          "abort the job when no op is dispatched or completed for this long; 0: never [300]"};
}

std::chrono::milliseconds parse_timeout(const Args& args) {
  return std::chrono::milliseconds(
      static_cast<std::int64_t>(args.get_number("--timeout", 300, 1e7) * 1000.0));
}

std::optional<int> run_collectively(const CommandContext& ctx, const std::function<void()>& body) {
  try {
    body();
  } catch (const SetupError& e) {
    if (e.report()) ctx.err << "meshsim: error: " << e.what() << "\n";
    return 2;
  } catch (const ExecutionError& e) {
    ctx.err << "meshsim: error: " << e.what() << "\n";
    return 1;
  }
  return std::nullopt;
}

std::optional<std::string> cuda_backend_unavailable() {
  const CudaProbe probe = probe_cuda();
  auto why = cuda_unavailable_message(probe);
  if (why && probe.built_with_cuda) *why = "--backend cuda: " + *why;
  return why;
}

const CudaPlugin& cuda_backend() {
  const LoadedCudaPlugin& loaded = cuda_plugin();
  if (loaded.plugin == nullptr) {
    const auto why = cuda_backend_unavailable();
    throw InputError(why ? *why : loaded.error);
  }
  return *loaded.plugin;
}

}  // namespace meshsim
