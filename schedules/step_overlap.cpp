// The overlap of the expert all-to-all with another microbatch's compute
// (StepPlan::moe.overlap_comm): an overlapped pair — the forward of one microbatch (or chunk) and
// the backward of another — is emitted interleaved, switching parts at every EP collective, so
// each all-to-all is launched right before the other part's compute, which runs beside it on the
// compute stream. Each part keeps its own waits and last compute op, so neither waits for the
// other's collectives. The two parts are emitted by two threads that hand a baton back and
// forth: only one runs at a time, in a fixed order, so the Program is the same on every build.
// - dualpipev (DeepSeek-V3 report §3.2.1, DualPipe): the forward leads — attention, router,
//   permute, its dispatch; then the backward until its first collective (its combine's
//   gradient); then the forward's experts and combine, and so on.
// - 1f1b (pp 1) and interleaved: Megatron-Core's combined 1F1B. Per layer its
//   TransformerLayerSchedulePlan.run (megatron/core/models/common/model_chunk_schedule_plan.py)
//   issues b.moe_combine.backward, f.attn.forward, b.mlp.backward, f.moe_dispatch.forward,
//   b.mlp.backward_dw, b.moe_dispatch.backward, f.mlp.forward, f.moe_combine.forward,
//   b.attn.backward ("comm_stream: combine_bwd | dispatch_fwd->dispatch_bwd | combine_fwd;
//   comp_stream: attn_fwd | mlp_bwd->mlp_bwd_dw->mlp_fwd | attn_bwd"): the backward leads, and
//   the same baton gives that order. Megatron pairs forward layer i with backward layer L-1-i;
//   here the parts switch at their EP collectives, so a chunk's dense layers (DeepSeek-V3's
//   first three) run in whichever part reaches them, beside the other part's all-to-all.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

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
  if (p_.schedule != PipelineSchedule::dualpipev) std::swap(first, second);  // backward leads
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
