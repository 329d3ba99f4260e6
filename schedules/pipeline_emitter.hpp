#pragma once
// The pipeline exchanges between a schedule's actions, shared by build_pipeline (pipeline.cpp)
// and build_training_step (training_step.cpp). For every pipeline rank of pipeline_orders():
// - the messages of each compute part: a forward receives its input activation from the previous
//   global stage and sends its output to the next; a backward (or B) receives the output gradient
//   from the next stage and sends the input gradient to the previous; stages on the same rank
//   exchange nothing;
// - steps: the actions between two p2p groups, as the frameworks issue them. A weight gradient
//   joins the step after it (the exchange that follows a B goes out before the deferred W runs);
//   in interleaved 1F1B a forward joins the backward that follows it (Megatron exchanges once per
//   forward-backward pair, in both directions at once);
// - before each step one batched exchange per peer: send what the previous step produced and
//   receive what this step needs. Receives from a peer are posted in the order that peer sends
//   (p2p matches in posting order), so a message the peer sends earlier than this rank needs it is
//   received early. Interleaved 1F1B also receives, at each boundary, whatever the peer sends no
//   later than that boundary on a unit clock (every step one tick): Megatron's calls receive what
//   the peer's matching call sends and queue it per chunk, which keeps microbatch groups larger
//   than the pipeline deadlock-free. Each compute part waits only for the exchanges that delivered
//   its inputs; sends do not hold compute back; each exchange follows the last compute part;
// - orders that place their own communication (post_* / commit / commit_async): post_* queue
//   transfers, a commit issues them (one batched exchange per peer) and the host waits for all of
//   them before its next compute; an async commit's receives are waited for by the parts that need
//   them.
// The builder supplies the ops: each compute part and each exchange (PipelineEmitHost).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "schedules/pipeline_orders.hpp"
#include "sim/program.hpp"

namespace meshsim {

// A message between two actions: which global stage it feeds and whether it is a gradient.
struct PipeMessage {
  int peer = 0;  // pipeline index of the other rank
  bool gradient = false;
  int stage = 0;  // the receiving global stage
  int microbatch = 0;
};

// What a builder supplies, for the pipeline rank being emitted.
class PipelineEmitHost {
 public:
  // One compute part; deps: the exchanges that delivered its inputs (and, with explicit
  // communication, the committed exchanges). Returns the op after which its output (activation or
  // input gradient sent to a neighbour stage) is ready.
  virtual OpId emit_compute(int pr, PipeWork work, int microbatch, int chunk,
                            std::vector<OpId> deps) = 0;
  // An overlapped pair (PipeWork::forward_backward): its forward part, then its backward part,
  // each with the deps emit_compute would get. Returns the op after which both outputs are
  // ready. A builder may interleave the two (the step's --overlap-moe-comm).
  struct Part {
    PipeWork work = PipeWork::forward;
    int microbatch = 0, chunk = 0;
    std::vector<OpId> deps;
  };
  virtual OpId emit_pair(int pr, Part first, Part second) {
    emit_compute(pr, first.work, first.microbatch, first.chunk, std::move(first.deps));
    return emit_compute(pr, second.work, second.microbatch, second.chunk, std::move(second.deps));
  }
  // The transfer of message `m` (tag: PipelineEmitter::tag_of) as seen from rank `pr`.
  virtual Transfer emit_transfer(int pr, const PipeMessage& m, int tag, bool send) const = 0;
  // The batched exchange of rank `pr` with pipeline rank `peer`: the op, after op `after` (-1:
  // none), labelled with `boundary`.
  virtual OpId emit_exchange(int pr, int peer, std::string name, P2PCall call, int boundary,
                             OpId after) = 0;

 protected:
  PipelineEmitHost() = default;
  PipelineEmitHost(const PipelineEmitHost&) = default;
  PipelineEmitHost& operator=(const PipelineEmitHost&) = default;
  ~PipelineEmitHost() = default;
};

class PipelineEmitter {
 public:
  // Plans every pipeline rank's steps and messages (no ops yet).
  explicit PipelineEmitter(const PipelineShape& shape);

  // Emits the actions of pipeline rank `pr` through `host`.
  void emit(int pr, PipelineEmitHost& host) const;

  // pipeline_orders() of the shape, per pipeline rank.
  const std::vector<std::vector<PipeAction>>& orders() const { return orders_; }
  int stage_rank(int stage) const { return rank_of_stage_[static_cast<std::size_t>(stage)]; }
  int stage_chunk(int stage) const { return chunk_of_stage_[static_cast<std::size_t>(stage)]; }
  // (microbatch x stages + stage) x 2 + (1 for a gradient)
  int tag_of(const PipeMessage& m) const {
    return (m.microbatch * stages_ + m.stage) * 2 + (m.gradient ? 1 : 0);
  }
  // The messages compute part (work, mb, chunk) of rank `pr` receives (in) and sends (out).
  void messages(int pr, PipeWork work, int mb, int chunk, std::vector<PipeMessage>& in,
                std::vector<PipeMessage>& out) const;

 private:
  using Part = std::pair<PipeWork, std::pair<int, int>>;  // work, (microbatch, chunk)
  struct RankPlan {
    std::vector<std::vector<Part>> steps;
    // Per step: the index of the part that opens an overlapped pair (a forward_backward action
    // of the combined 1F1B: that part and the next go to emit_pair), or -1.
    std::vector<int> pair_at;
    std::vector<std::vector<PipeMessage>> needs;
    std::vector<std::vector<PipeMessage>> makes;
    // Per boundary (steps.size() + 1 of them): when its exchange is posted on the nominal clock
    // (nominal_clock()); a message is received at the first boundary posted no earlier than the
    // peer's exchange that sends it, and at the latest before the step that needs it.
    std::vector<int> posted_at;
  };

  std::vector<std::vector<Part>> steps_of(int pr, const std::vector<PipeAction>& actions,
                                          std::vector<int>* pair_at = nullptr) const;
  RankPlan plan_rank(int pr, const std::vector<PipeAction>& actions) const;
  std::vector<OpId> exchange(int pr, PipelineEmitHost& host, const std::vector<PipeMessage>& sends,
                             const std::vector<PipeMessage>& recvs, OpId after, int boundary,
                             std::vector<OpId>* created = nullptr) const;
  // Runs the planned steps on a unit clock (every step one tick, started once the previous step
  // is done and every message it needs has been sent) and fills each plan's posted_at and
  // sent_at_. Boundaries of a rank that cannot run on that clock stay at kNever.
  void nominal_clock();
  void emit_steps(int pr, PipelineEmitHost& host) const;
  // The compute parts of step k of rank pr, each waiting for the exchanges that delivered its
  // inputs; returns the op after which the step's outputs are ready.
  OpId emit_step_parts(int pr, PipelineEmitHost& host, std::size_t k,
                       const std::map<std::pair<int, int>, OpId>& received_by) const;
  void emit_explicit(int pr, PipelineEmitHost& host) const;

  PipelineShape shape_;
  int p_, v_, stages_;
  std::vector<int> rank_of_stage_, chunk_of_stage_;
  std::vector<std::vector<PipeAction>> orders_;
  std::vector<RankPlan> plans_;
  // sent_to_[src][dst]: the messages src sends to dst, in src's order (peer = dst).
  std::vector<std::vector<std::vector<PipeMessage>>> sent_to_;
  // sent_at_[src][dst][i]: when src posts the exchange carrying sent_to_[src][dst][i].
  std::vector<std::vector<std::vector<int>>> sent_at_;
};

}  // namespace meshsim
