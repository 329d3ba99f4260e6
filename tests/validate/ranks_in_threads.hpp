#pragma once
// Test helper: every rank of a Program in one process, each rank's executor (a thread per stream)
// on its own thread, connected by the in-process communication backend and aligned by a barrier.
#include <barrier>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "sim/comm_plan.hpp"
#include "sim/program.hpp"
#include "validate/run/executor.hpp"
#include "validate/run/inproc_comm.hpp"
#include "validate/run/kernel_runner.hpp"
#include "validate/run/rank_setup.hpp"
#include "validate/tensors/tensor_layout.hpp"

namespace meshsim::testing {

struct ThreadedRun {
  CommPlan plan;
  std::vector<std::unique_ptr<RankSetup>> ranks;
  std::vector<RankRun> runs;
};

// Runs every rank; kernels: one runner shared by all ranks (NullKernelRunner if null); `prepare`
// may change a rank's tensors after the fills.
inline ThreadedRun run_ranks_in_threads(const Program& program, const TensorLayout& layout = {},
                                        std::uint64_t seed = 1, KernelRunner* kernels = nullptr,
                                        const std::function<void(int, RankSetup&)>& prepare = {}) {
  ThreadedRun out;
  out.plan = validate_program(program);
  const int n = program.world_size();
  for (int r = 0; r < n; ++r) {
    out.ranks.push_back(std::make_unique<RankSetup>(program, out.plan, r, layout, seed));
    if (prepare) prepare(r, *out.ranks.back());
  }
  InProcessHub hub(out.plan);
  NullKernelRunner null_kernels;
  KernelRunner& runner = kernels != nullptr ? *kernels : null_kernels;
  std::barrier align(n);
  out.runs.resize(static_cast<std::size_t>(n));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      const auto u = static_cast<std::size_t>(r);
      try {
        InProcessCommBackend comm(hub, out.ranks[u]->comm);
        Executor executor(program, out.ranks[u]->schedule, runner, comm,
                          ExecutorOptions{std::chrono::milliseconds(20000), {}});
        out.runs[u] = executor.run([&] { align.arrive_and_wait(); });
      } catch (...) {
        errors[u] = std::current_exception();
        hub.abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

}  // namespace meshsim::testing
