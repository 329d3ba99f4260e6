#include "validate/run/executor.hpp"

#include <thread>

#include <fmt/format.h>

#include "sim/comm_plan.hpp"

namespace meshsim {

Executor::Executor(const Program& program, const RankSchedule& schedule, KernelRunner& kernels,
                   CommBackend& comm, ExecutorOptions options)
    : program_(program),
      schedule_(schedule),
      kernels_(kernels),
      comm_(comm),
      options_(std::move(options)),
      stream_cv_(static_cast<std::size_t>(schedule.stream_count())),
      tracker_(schedule),
      records_(static_cast<std::size_t>(schedule.size())) {
  for (int i = 0; i < schedule.size(); ++i) {
    records_[static_cast<std::size_t>(i)].op = schedule.op(i).op;
  }
}

void Executor::wake(const std::vector<int>& ops) {
  for (int j : ops) stream_cv_[static_cast<std::size_t>(schedule_.op(j).stream)].notify_all();
}

void Executor::fail(const std::string& what) {
  {
    const std::lock_guard lock(mu_);
    if (aborted_) return;
    aborted_ = true;
    error_ = what;
    for (auto& cv : stream_cv_) cv.notify_all();
  }
  done_cv_.notify_all();
}

void Executor::execute(const Op& op, std::vector<TransferEnd>& recv_ends) {
  if (const auto* k = std::get_if<KernelCall>(&op.body)) {
    kernels_.run(op, *k);
  } else {
    comm_.run(op, clock_, recv_ends);
  }
}

void Executor::stream_loop(StreamId stream) {
  std::vector<TransferEnd> ends;
  std::vector<int> woken;
  for (int i : schedule_.stream(stream)) {
    const Op& op = program_.ops[static_cast<std::size_t>(schedule_.op(i).op)];
    OpRecord& rec = records_[static_cast<std::size_t>(i)];
    {
      std::unique_lock lock(mu_);
      stream_cv_[static_cast<std::size_t>(stream)].wait(
          lock, [&] { return aborted_ || (started_ && tracker_.ready(i)); });
      if (aborted_) return;
      woken.clear();
      tracker_.dispatch(i, woken);
      rec.start = clock_.now();
      rec.dispatch_seq = next_seq_++;
      ++progress_;
      wake(woken);
    }
    try {
      execute(op, ends);
    } catch (const std::exception& e) {
      fail(fmt::format("{} failed: {}", describe_op(program_, op.id), e.what()));
      return;
    }
    const Nanos end = clock_.now();
    bool all_done = false;
    {
      const std::lock_guard lock(mu_);
      rec.end = end;
      woken.clear();
      tracker_.complete(i, woken);
      ++progress_;
      wake(woken);
      all_done = tracker_.all_completed();
    }
    if (all_done) done_cv_.notify_all();
  }
  const std::lock_guard lock(mu_);
  recv_ends_.insert(recv_ends_.end(), ends.begin(), ends.end());
}

std::string Executor::stall_report() const {
  std::string out =
      fmt::format("rank {}: no op dispatched or completed for {} s;", schedule_.rank(),
                  static_cast<double>(options_.stall_timeout.count()) / 1000.0);
  for (StreamId s = 0; s < schedule_.stream_count(); ++s) {
    for (int i : schedule_.stream(s)) {
      if (tracker_.completed(i)) continue;
      out += " " + tracker_.describe_state(program_, i) + ";";
      break;
    }
  }
  out.pop_back();
  return out;
}

RankRun Executor::run(const std::function<void()>& align) {
  std::vector<std::thread> threads;
  for (StreamId s = 0; s < schedule_.stream_count(); ++s) {
    if (!schedule_.stream(s).empty()) threads.emplace_back([this, s] { stream_loop(s); });
  }
  try {
    if (align) align();
  } catch (...) {
    fail("the alignment barrier failed");
    for (auto& t : threads) t.join();
    throw;
  }
  clock_.reset();
  {
    const std::lock_guard lock(mu_);
    started_ = true;
    for (auto& cv : stream_cv_) cv.notify_all();
  }
  std::string failure;
  {
    std::unique_lock lock(mu_);
    while (!aborted_ && !tracker_.all_completed()) {
      const std::uint64_t seen = progress_;
      auto changed = [&] { return aborted_ || tracker_.all_completed() || progress_ != seen; };
      if (options_.stall_timeout.count() <= 0) {
        done_cv_.wait(lock, [&] { return aborted_ || tracker_.all_completed(); });
      } else if (!done_cv_.wait_for(lock, options_.stall_timeout, changed)) {
        aborted_ = true;
        error_ = "stalled: " + stall_report();
        for (auto& cv : stream_cv_) cv.notify_all();
      }
    }
    if (aborted_) failure = error_;
  }
  if (!failure.empty()) {
    if (options_.on_failure) options_.on_failure(failure);
    comm_.abort();
  }
  for (auto& t : threads) t.join();
  if (!failure.empty()) throw ExecutionError(failure);
  RankRun run;
  run.rank = schedule_.rank();
  run.ops = records_;
  run.recv_ends = recv_ends_;
  for (const auto& r : records_) run.wall = std::max(run.wall, r.end);
  return run;
}

}  // namespace meshsim
