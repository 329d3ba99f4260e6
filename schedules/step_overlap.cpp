// DualPipe's overlap of the expert all-to-all with another microbatch's compute
// (StepPlan::moe.overlap_comm; DeepSeek-V3 report §3.2.1): an overlapped pair of the dualpipev
// schedule — the forward of one chunk and the backward of the other — is emitted interleaved.
// The forward part emits until its first EP collective (attention, router, permute, the
// dispatch all-to-all), then the backward part until its first (its combine's gradient), then
// the forward resumes (experts, the combine), and so on: each all-to-all is launched right before
// the other part's compute, which runs beside it on the compute stream. Each part keeps its own
// waits and last compute op, so neither waits for the other's collectives. The two parts are
// emitted by two threads that hand a baton back and forth: only one runs at a time, in a fixed
// order, so the Program is the same on every build.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "schedules/step_builder.hpp"

namespace meshsim::step_detail {

struct StepBuilder::PairBaton {
  std::mutex m;
  std::condition_variable cv;
  int turn = 0;  // the part allowed to emit
  bool done[2] = {false, false};
  int side = 0;                // the part emitting now
  std::vector<OpId> waits[2];  // each part's own waits_ and last_compute_ while the other emits
  OpId last[2] = {-1, -1};
};

void StepBuilder::yield_to_pair() {
  if (baton_ == nullptr) return;
  PairBaton& b = *baton_;
  std::unique_lock lock(b.m);
  const int me = b.side, other = 1 - me;
  if (b.done[other]) return;  // the other part has finished: go on alone
  b.waits[me] = std::move(waits_);
  b.last[me] = last_compute_;
  b.turn = other;
  b.cv.notify_all();
  b.cv.wait(lock, [&] { return b.turn == me; });
  b.side = me;
  waits_ = std::move(b.waits[me]);
  last_compute_ = b.last[me];
}

OpId StepBuilder::emit_pair(int pr, Part first, Part second) {
  if (!p_.moe.overlap_comm || !m_.moe) {
    return PipelineEmitHost::emit_pair(pr, std::move(first), std::move(second));
  }
  PairBaton b;
  b.waits[1] = {};
  b.last[1] = last_compute_;
  OpId out[2] = {-1, -1};
  std::exception_ptr error[2];
  baton_ = &b;
  const auto run = [&](int side, Part part) {
    {
      std::unique_lock lock(b.m);
      b.cv.wait(lock, [&] { return b.turn == side; });
      b.side = side;
      if (side == 1) {
        waits_ = std::move(b.waits[1]);
        last_compute_ = b.last[1];
      }
    }
    try {
      out[side] = emit_compute(pr, part.work, part.microbatch, part.chunk, std::move(part.deps));
    } catch (...) {
      error[side] = std::current_exception();
    }
    std::unique_lock lock(b.m);
    b.done[side] = true;
    b.waits[side] = std::move(waits_);
    b.last[side] = last_compute_;
    b.turn = 1 - side;
    b.cv.notify_all();
  };
  std::thread backward(run, 1, std::move(second));
  run(0, std::move(first));
  backward.join();
  baton_ = nullptr;
  for (const auto& e : error) {
    if (e) std::rethrow_exception(e);
  }
  // Afterwards: both parts' pending waits, the later of their last compute ops.
  waits_ = std::move(b.waits[0]);
  waits_.insert(waits_.end(), b.waits[1].begin(), b.waits[1].end());
  last_compute_ = std::max(b.last[0], b.last[1]);
  return std::max(out[0], out[1]);
}

}  // namespace meshsim::step_detail
