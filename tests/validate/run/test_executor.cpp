#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "sim/program.hpp"
#include "validate/run/executor.hpp"

using namespace meshsim;
using namespace std::chrono_literals;

namespace {

KernelCall k() {
  return KernelCall{KernelKind::elementwise, DType::fp32, VectorShape{1}, {}, {}};
}

// Sleeps per op name (0 unless listed); throws for ops named "bad".
class ScriptedKernels final : public KernelRunner {
 public:
  explicit ScriptedKernels(std::map<std::string, std::chrono::milliseconds> sleeps)
      : sleeps_(std::move(sleeps)) {}
  void run(const Op& op, const KernelCall& /*call*/) override {
    if (op.name == "bad") throw std::runtime_error("injected kernel failure");
    const auto it = sleeps_.find(op.name.str());
    if (it != sleeps_.end()) std::this_thread::sleep_for(it->second);
  }

 private:
  std::map<std::string, std::chrono::milliseconds> sleeps_;
};

// A comm backend whose ops never complete until aborted (a peer that never shows up).
class HangingComm final : public CommBackend {
 public:
  void run(const Op& /*op*/, const RunClock& /*clock*/,
           std::vector<TransferEnd>& /*ends*/) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return aborted_; });
    throw ExecutionError("aborted");
  }
  void abort() override {
    {
      const std::lock_guard lock(mu_);
      aborted_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool aborted_ = false;
};

class NoComm final : public CommBackend {
 public:
  void run(const Op&, const RunClock&, std::vector<TransferEnd>&) override {
    throw std::logic_error("no comm expected");
  }
};

// One rank, launch order: "slow" (compute, 60 ms), "after slow" (side stream, dep on slow),
// "free" (third stream, no deps), "tail" (compute).
Program three_streams(bool single_queue) {
  ProgramBuilder b(Mesh({{"cp", 1}}, 8), single_queue, "executor");
  const StreamId compute = b.stream("compute");
  const StreamId side = b.stream("side");
  const StreamId third = b.stream("third");
  const OpId slow = b.add(0, compute, "slow", {}, k());
  b.add(0, side, "after slow", {}, k(), {slow});
  b.add(0, third, "free", {}, k());
  b.add(0, compute, "tail", {}, k());
  return std::move(b).finish();
}

RankRun run_one(const Program& p, KernelRunner& kernels, CommBackend& comm,
                ExecutorOptions options = {}) {
  const RankSchedule schedule(p, 0);
  Executor executor(p, schedule, kernels, comm, std::move(options));
  return executor.run();
}

}  // namespace

TEST_CASE("stream order and deps: an op starts after its stream predecessor and deps completed") {
  const Program p = three_streams(true);
  ScriptedKernels kernels({{"slow", 60ms}});
  NoComm comm;
  const RankRun run = run_one(p, kernels, comm);
  REQUIRE(run.ops.size() == 4);
  const auto& slow = run.ops[0];
  CHECK(slow.end - slow.start >= 60'000'000);
  CHECK(run.ops[1].start >= slow.end);  // dep
  CHECK(run.ops[3].start >= slow.end);  // stream order
  for (const auto& r : run.ops) CHECK(r.end >= r.start);
  CHECK(run.wall >= slow.end);
}

TEST_CASE("single queue: dispatch follows launch order even when a later op is ready first") {
  const Program p = three_streams(true);
  ScriptedKernels kernels({{"slow", 60ms}});
  NoComm comm;
  const RankRun run = run_one(p, kernels, comm);
  // "free" is ready at once but was launched after "after slow", which waits for "slow".
  for (int i = 0; i < 4; ++i) CHECK(run.ops[static_cast<std::size_t>(i)].dispatch_seq == i);
  CHECK(run.ops[2].start >= run.ops[0].end);
}

TEST_CASE("several queues: the ready op goes first") {
  const Program p = three_streams(false);
  ScriptedKernels kernels({{"slow", 60ms}});
  NoComm comm;
  const RankRun run = run_one(p, kernels, comm);
  CHECK(run.ops[2].start < run.ops[0].end);  // "free" ran while "slow" ran
  CHECK(run.ops[2].dispatch_seq < run.ops[1].dispatch_seq);
}

TEST_CASE("a failing kernel stops the run with the op's name") {
  ProgramBuilder b(Mesh({{"cp", 1}}, 8), true, "failure");
  const StreamId s = b.stream("compute");
  b.add(0, s, "fine", {}, k());
  b.add(0, s, "bad", {}, k());
  b.add(0, s, "never", {}, k());
  const Program p = std::move(b).finish();
  ScriptedKernels kernels({});
  NoComm comm;
  std::string reported;
  ExecutorOptions options;
  options.on_failure = [&](const std::string& what) { reported = what; };
  CHECK_THROWS_WITH_AS(run_one(p, kernels, comm, options),
                       doctest::Contains("rank 0 compute 'bad' failed: injected kernel failure"),
                       ExecutionError);
  CHECK(reported.find("'bad'") != std::string::npos);
}

TEST_CASE("a stall is reported with what each stream waits for, and the backend is aborted") {
  ProgramBuilder b(Mesh({{"cp", 1}}, 8), true, "stall");
  const StreamId compute = b.stream("compute");
  const StreamId comm_stream = b.stream("comm");
  const OpId hang = b.add(0, comm_stream, "hang", {}, P2PCall{});
  b.add(0, compute, "waits", {}, k(), {hang});
  const Program p = std::move(b).finish();
  ScriptedKernels kernels({});
  HangingComm comm;
  ExecutorOptions options;
  options.stall_timeout = 200ms;
  CHECK_THROWS_WITH_AS(
      run_one(p, kernels, comm, options),
      doctest::Contains("rank 0 compute 'waits': waits for dep rank 0 comm 'hang'; rank 0 comm "
                        "'hang': running (dispatched, not completed)"),
      ExecutionError);
}

TEST_CASE("the alignment step runs before the clock starts") {
  const Program p = three_streams(true);
  ScriptedKernels kernels({});
  NoComm comm;
  const RankSchedule schedule(p, 0);
  Executor executor(p, schedule, kernels, comm);
  const RankRun run = executor.run([] { std::this_thread::sleep_for(50ms); });
  CHECK(run.ops[0].start < 50'000'000);  // the 50 ms before the origin do not count
}
