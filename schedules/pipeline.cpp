#include "schedules/pipeline.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "schedules/pipeline_emitter.hpp"
#include "sim/error.hpp"
#include "sim/size_math.hpp"
#include "sim/time.hpp"

namespace meshsim {
namespace {

class PipelineBuilder final : private PipelineEmitHost {
 public:
  explicit PipelineBuilder(const PipelineConfig& c)
      : cfg_(c),
        p_(c.shape.stages),
        v_(chunks_of(c.shape)),
        stages_(p_ * v_),
        builder_(Mesh({{"pp", c.shape.stages}}, c.gpus_per_node), c.single_queue, describe(c)),
        emitter_(c.shape) {
    compute_ = builder_.stream("compute");
    bytes_ = pipeline_message_bytes(c);
  }

  Program build() && {
    for (int r = 0; r < p_; ++r) {
      make_slots(r, splits_backward(emitter_.orders()[static_cast<std::size_t>(r)]));
    }
    for (int r = 0; r < p_; ++r) emitter_.emit(r, *this);
    return std::move(builder_).finish();
  }

  static std::string describe(const PipelineConfig& c) {
    return fmt::format(
        "pipeline: schedule={} stages={} microbatches={} chunks={}{}", to_string(c.shape.schedule),
        c.shape.stages, c.shape.microbatches, chunks_of(c.shape),
        c.time_f >= 0
            ? fmt::format(" F={}s B={}s W={}s", c.time_f, c.time_b, c.time_w)
            : fmt::format(" tokens={} hidden={} dtype={}", c.tokens, c.hidden, to_string(c.dtype)));
  }

 private:
  // The tensor slots of one chunk of one rank (pipeline.hpp); per-microbatch vectors.
  struct ChunkSlots {
    SlotId w = -1, dw = -1;
    std::vector<SlotId> x, pre, y, dy, dx, dh;
  };

  static bool splits_backward(const std::vector<PipeAction>& actions) {
    return std::any_of(actions.begin(), actions.end(), [](const PipeAction& a) {
      return a.work == PipeWork::input_grad ||
             (a.work == PipeWork::forward_backward && a.pair_split);
    });
  }

  int stage_rank(int stage) const { return emitter_.stage_rank(stage); }
  int stage_chunk(int stage) const { return emitter_.stage_chunk(stage); }

  const ChunkSlots& chunk_slots(int rank, int chunk) const {
    return slots_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(chunk)];
  }
  static SlotId at(const std::vector<SlotId>& per_mb, int mb) {
    return per_mb[static_cast<std::size_t>(mb)];
  }

  // Weights first, then microbatch by microbatch, chunk by chunk; a stage's input is the previous
  // stage's output slot when both are on this rank, and likewise for the gradients.
  void make_slots(int rank, bool split) {
    const std::vector<std::int64_t> act{cfg_.tokens, cfg_.hidden};
    const std::vector<std::int64_t> weight{cfg_.hidden, cfg_.hidden};
    const int m = cfg_.shape.microbatches;
    auto& mine = slots_.emplace_back(static_cast<std::size_t>(v_));
    for (int ch = 0; ch < v_; ++ch) {
      ChunkSlots& cs = mine[static_cast<std::size_t>(ch)];
      cs.w = builder_.slot(rank, pipeline_slot_name("w", ch), cfg_.dtype, weight);
      cs.dw =
          builder_.slot(rank, pipeline_slot_name("dw", ch), accumulator_dtype(cfg_.dtype), weight);
      for (auto* v : {&cs.x, &cs.pre, &cs.y, &cs.dy, &cs.dx, &cs.dh}) {
        v->assign(static_cast<std::size_t>(m), -1);
      }
    }
    for (int mb = 0; mb < m; ++mb) {
      for (int ch = 0; ch < v_; ++ch) {
        ChunkSlots& cs = mine[static_cast<std::size_t>(ch)];
        const int s = global_stage(cfg_.shape, rank, ch);
        const auto idx = static_cast<std::size_t>(mb);
        auto add = [&](std::string_view what) {
          return builder_.slot(rank, pipeline_slot_name(what, ch, mb), cfg_.dtype, act);
        };
        if (s == 0 || stage_rank(s - 1) != rank) cs.x[idx] = add("x");
        cs.pre[idx] = add("pre");
        cs.y[idx] = add("y");
        if (s + 1 == stages_ || stage_rank(s + 1) != rank) cs.dy[idx] = add("dy");
        cs.dx[idx] = add("dx");
        if (split) cs.dh[idx] = add("dh");
      }
    }
    for (int ch = 0; ch < v_; ++ch) {
      ChunkSlots& cs = mine[static_cast<std::size_t>(ch)];
      const int s = global_stage(cfg_.shape, rank, ch);
      for (std::size_t mb = 0; mb < static_cast<std::size_t>(m); ++mb) {
        if (cs.x[mb] < 0) cs.x[mb] = mine[static_cast<std::size_t>(stage_chunk(s - 1))].y[mb];
        if (cs.dy[mb] < 0) cs.dy[mb] = mine[static_cast<std::size_t>(stage_chunk(s + 1))].dx[mb];
      }
    }
  }

  // The slot a transfer of message `m` uses on `rank`: a send reads the producing stage's y (or
  // dx), a receive writes the consuming stage's x (or dy).
  SlotId send_slot(int rank, const PipeMessage& m) const {
    const int from = m.gradient ? m.stage + 1 : m.stage - 1;
    const ChunkSlots& cs = chunk_slots(rank, stage_chunk(from));
    return at(m.gradient ? cs.dx : cs.y, m.microbatch);
  }
  SlotId recv_slot(int rank, const PipeMessage& m) const {
    const ChunkSlots& cs = chunk_slots(rank, stage_chunk(m.stage));
    return at(m.gradient ? cs.dy : cs.x, m.microbatch);
  }

  Nanos fixed(double per_rank_seconds, std::string_view field) const {
    if (per_rank_seconds < 0) return -1;
    return seconds_to_ns(per_rank_seconds / v_, [&] { return std::string(field); });
  }

  OpId emit_compute(int rank, PipeWork work, int mb, int chunk, std::vector<OpId> deps) override {
    const GemmShape fwd{cfg_.tokens, cfg_.hidden, cfg_.hidden, false, false, false};
    const ChunkSlots& cs = chunk_slots(rank, chunk);
    const SlotId x = at(cs.x, mb), pre = at(cs.pre, mb), y = at(cs.y, mb), dy = at(cs.dy, mb),
                 dx = at(cs.dx, mb), dh = at(cs.dh, mb);
    KernelCall call{KernelKind::gemm, cfg_.dtype, fwd, {x, cs.w}, {y, pre}, kPipelineActivation};
    Phase phase = Phase::fwd;
    Nanos ns = fixed(cfg_.time_f, "`time_f`");
    std::string_view letter = "F";
    switch (work) {
      case PipeWork::forward:
        break;
      case PipeWork::backward:  // dX and dW together
        call.kind = KernelKind::linear_bwd;
        call.inputs = {x, cs.w, dy, pre};
        call.outputs = {dx, cs.dw};
        phase = Phase::bwd;
        ns = cfg_.time_b < 0 ? -1 : fixed(cfg_.time_b + cfg_.time_w, "`time_b` + `time_w`");
        letter = "BW";
        break;
      case PipeWork::input_grad:  // dX = dY W^T
        call.shape = GemmShape{cfg_.tokens, cfg_.hidden, cfg_.hidden, false, true, false};
        call.inputs = {dy, cs.w, pre};
        call.outputs = {dx, dh};
        phase = Phase::bwd;
        ns = fixed(cfg_.time_b, "`time_b`");
        letter = "B";
        break;
      case PipeWork::weight_grad:  // dW += X^T dY
        call.shape = GemmShape{cfg_.hidden, cfg_.hidden, cfg_.tokens, true, false, true};
        call.inputs = {x, dh, cs.dw};
        call.outputs = {cs.dw};
        call.fn = ElementwiseFn::none;
        phase = Phase::wgrad;
        ns = fixed(cfg_.time_w, "`time_w`");
        letter = "W";
        break;
      default:
        MESHSIM_CHECK(false, "pairs and communication items are not compute parts");
    }
    const OpId op =
        builder_.add(rank, compute_, fmt::format("{}{} c{}", letter, mb, chunk),
                     OpLabels{phase, -1, mb, -1, chunk}, std::move(call), std::move(deps));
    if (ns >= 0) builder_.set_fixed_time(op, ns);
    return op;
  }

  // The stream of the p2p communicator between two ranks (one per pair, as ProcessGroupNCCL
  // creates for send/recv).
  StreamId pair_stream(int a, int b) {
    return builder_.stream(fmt::format("pp_comm {}-{}", std::min(a, b), std::max(a, b)));
  }

  Transfer emit_transfer(int rank, const PipeMessage& m, int tag, bool send) const override {
    return Transfer{m.peer, bytes_, tag, send ? send_slot(rank, m) : recv_slot(rank, m)};
  }

  OpId emit_exchange(int rank, int peer, std::string name, P2PCall call, int boundary,
                     OpId after) override {
    const OpId op = builder_.add(rank, pair_stream(rank, peer), std::move(name),
                                 OpLabels{Phase::none, -1, -1, boundary, -1}, std::move(call),
                                 after >= 0 ? std::vector<OpId>{after} : std::vector<OpId>{});
    if (cfg_.p2p_time >= 0)
      builder_.set_fixed_time(op, seconds_to_ns(cfg_.p2p_time, [] { return "`p2p_time`"; }));
    return op;
  }

  const PipelineConfig& cfg_;
  int p_, v_, stages_;
  ProgramBuilder builder_;
  StreamId compute_ = 0;
  std::int64_t bytes_ = 0;
  std::vector<std::vector<ChunkSlots>> slots_;  // [rank][chunk]
  PipelineEmitter emitter_;
};

}  // namespace

std::string pipeline_slot_name(std::string_view tensor, int chunk, int microbatch) {
  return microbatch < 0 ? fmt::format("{} c{}", tensor, chunk)
                        : fmt::format("{} mb{} c{}", tensor, microbatch, chunk);
}

std::int64_t pipeline_message_bytes(const PipelineConfig& c) {
  return c.activation_bytes > 0 ? c.activation_bytes : c.tokens * c.hidden * dtype_bytes(c.dtype);
}

void check_pipeline_config(const PipelineConfig& c) {
  check_pipeline_shape(c.shape);
  if (c.tokens <= 0) throw InputError(fmt::format("`tokens` must be positive, got {}", c.tokens));
  if (c.hidden <= 0) throw InputError(fmt::format("`hidden` must be positive, got {}", c.hidden));
  if (c.gpus_per_node <= 0) throw InputError("`gpus_per_node` must be positive");
  const bool any_time = c.time_f >= 0 || c.time_b >= 0 || c.time_w >= 0;
  if (any_time && (c.time_f < 0 || c.time_b < 0 || c.time_w < 0)) {
    throw InputError("`time_f`, `time_b` and `time_w` go together: give all three (seconds)");
  }
  if (c.activation_bytes < 0) throw InputError("`activation_bytes` must not be negative");
  constexpr std::int64_t kMaxActions = std::int64_t{1} << 24;
  if (product_exceeds({c.shape.stages, c.shape.microbatches, chunks_of(c.shape)}, kMaxActions)) {
    throw InputError("`stages` x `microbatches` x chunks exceeds 16 million forward actions");
  }
}

std::vector<int> peak_inflight(const PipelineShape& shape) {
  return peak_inflight(pipeline_orders(shape));
}

std::vector<int> peak_inflight(const std::vector<std::vector<PipeAction>>& orders) {
  std::vector<int> peaks;
  for (const auto& actions : orders) {
    int held = 0, peak = 0;
    for (const auto& a : actions) {
      if (a.work == PipeWork::forward || a.work == PipeWork::forward_backward) {
        peak = std::max(peak, ++held);
      }
      if (a.work == PipeWork::backward || a.work == PipeWork::input_grad ||
          a.work == PipeWork::forward_backward) {
        --held;
      }
    }
    peaks.push_back(peak);
  }
  return peaks;
}

Program build_pipeline(const PipelineConfig& config) {
  check_pipeline_config(config);
  return PipelineBuilder(config).build();
}

}  // namespace meshsim
