#include "validate/run/validate_driver.hpp"

#include <optional>

#include <fmt/format.h>

#include "validate/run/measured_timeline.hpp"
#include "validate/run/rank_setup.hpp"

namespace meshsim {

std::string on_rank(int rank, std::string_view what) {
  const std::string prefix = fmt::format("rank {}: ", rank);
  return what.starts_with(prefix) ? std::string(what) : prefix + std::string(what);
}

ValidateResult run_validation(const Program& program, const CommPlan& plan,
                              const TensorLayout& layout, RunWorld& world,
                              const ValidateOptions& options) {
  MESHSIM_CHECK(
      world.size() == program.world_size(),
      fmt::format("a Program of {} ranks on a world of {}", program.world_size(), world.size()));
  const int rank = world.rank();
  std::optional<RankSetup> setup;
  std::unique_ptr<KernelRunner> kernels;
  std::string failure;
  try {
    setup.emplace(program, plan, rank, layout, options.seed);
    kernels = options.make_kernels ? options.make_kernels(setup->store)
                                   : std::make_unique<NullKernelRunner>();
  } catch (const std::exception& e) {
    failure = on_rank(rank, e.what());
  }
  const bool all_ok = world.all_true(failure.empty());
  const bool root_ok = world.all_true(rank != 0 || failure.empty());
  if (!all_ok) {
    if (failure.empty()) throw SetupError("another rank failed to set up", false);
    throw SetupError(failure, rank == 0 || root_ok);
  }

  ValidateResult result;
  if (options.run_rank) {
    result.local = options.run_rank(*setup, [&] { world.barrier(); });
  } else {
    std::unique_ptr<CommBackend> comm = world.make_comm(program, plan, setup->comm);
    ExecutorOptions exec_options;
    exec_options.stall_timeout = options.stall_timeout;
    if (!world.can_unwind()) {
      exec_options.on_failure = [&](const std::string& what) {
        if (options.report_failure) options.report_failure(what);
        world.abort(1);
      };
    }
    Executor executor(program, setup->schedule, *kernels, *comm, exec_options);
    result.local = executor.run([&] { world.barrier(); });
  }
  result.fill = setup->fill;

  const auto records = world.gather(encode_rank_run(result.local));
  const auto memory = world.gather({setup->memory_bytes()});
  std::vector<std::vector<std::byte>> packages;
  if (options.gather_tensors) {
    packages = world.gather_bytes(pack_shards(program, layout, setup->store));
  }
  result.root = rank == 0;
  if (!result.root) return result;
  std::vector<RankRun> runs;
  runs.reserve(records.size());
  for (const auto& r : records) runs.push_back(decode_rank_run(r));
  result.timeline = measured_timeline(program, plan, runs);
  for (const auto& m : memory) result.memory_bytes.push_back(m.empty() ? 0 : m.front());
  if (options.gather_tensors) {
    result.tensors = assemble_global_tensors(program, layout, packages);
  }
  return result;
}

}  // namespace meshsim
