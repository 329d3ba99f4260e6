#include "schedules/tp_linear.hpp"
#include "sim/enum_names.hpp"
#include "sim/size_math.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "schedules/tp_emitter.hpp"
#include "sim/error.hpp"

namespace meshsim {
namespace {

constexpr std::array<std::string_view, 2> kKindNames = {"column", "row"};
constexpr std::array<std::string_view, 2> kModeNames = {"allreduce", "reducescatter"};
constexpr std::array<std::string_view, 2> kOverlapNames = {"async", "sync"};
constexpr std::array<std::string_view, 3> kPassNames = {"fwd", "bwd", "fwd+bwd"};
constexpr int kMaxTp = 1024;

class TpLinearBuilder final : private TpEmitHost {
 public:
  explicit TpLinearBuilder(const TpLinearConfig& cfg)
      : cfg_(cfg),
        t_(cfg.tp),
        column_(cfg.kind == TpLinearKind::column),
        sp_(cfg.mode == TpMode::reduce_scatter),
        comm_needed_(cfg.tp > 1),
        builder_(Mesh({{"tp", cfg.tp}}, cfg.gpus_per_node), cfg.single_queue, describe(cfg)) {
    compute_ = builder_.stream("compute");
    comm_ = builder_.stream("tp_comm");
    std::vector<int> ranks(static_cast<std::size_t>(t_));
    for (int r = 0; r < t_; ++r) ranks[static_cast<std::size_t>(r)] = r;
    group_ = builder_.group("tp", std::move(ranks));
    // The GEMM dimensions of one rank: Y_local [T, n] = X_local [T, k] W_local^T, W_local [n, k].
    n_ = column_ ? cfg.out_features / t_ : cfg.out_features;
    k_ = column_ ? cfg.in_features : cfg.in_features / t_;
  }

  Program build() && {
    for (int r = 0; r < t_; ++r) emit_rank(r);
    return std::move(builder_).finish();
  }

  static std::string describe(const TpLinearConfig& c) {
    return fmt::format(
        "tp linear: tp={} tokens={} in={} out={} kind={} mode={} overlap={} dtype={} bias={} "
        "pass={}",
        c.tp, c.tokens, c.in_features, c.out_features, to_string(c.kind), to_string(c.mode),
        to_string(c.overlap), to_string(c.dtype), c.bias ? "yes" : "no", to_string(c.pass));
  }

 private:
  std::int64_t tokens() const { return cfg_.tokens; }
  std::int64_t local_tokens() const { return sp_ ? cfg_.tokens / t_ : cfg_.tokens; }

  TpTensors make_slots(int r) {
    const DType e = cfg_.dtype;
    const std::int64_t all = tokens();
    TpTensors s;
    const bool fwd = cfg_.pass != TpPass::bwd;
    const bool bwd = cfg_.pass != TpPass::fwd;
    if (column_) {
      // Column: X [T/t or T, D_in] -> X_total [T, D_in]; Y [T, D_out/t].
      s.x = builder_.slot(r, "x", e, {local_tokens(), k_});
      s.x_total = sp_ && comm_needed_ ? builder_.slot(r, "x_gathered", e, {all, k_}) : s.x;
      s.w = builder_.slot(r, "w", e, {n_, k_});
      if (cfg_.bias) s.b = builder_.slot(r, "b", e, {n_});
      if (fwd) {
        s.y = builder_.slot(r, "y", e, {all, n_});
        s.y_partial = s.y;
      }
      if (bwd) {
        s.dy = builder_.slot(r, "dy", e, {all, n_});
        s.dy_total = s.dy;
        // dX = dY W_r is this rank's partial sum over the output shards: all-reduced in place,
        // or reduce-scattered to the rank's T/t rows.
        s.dx_partial = builder_.slot(r, sp_ && comm_needed_ ? "dx_partial" : "dx", e, {all, k_});
        s.dx = sp_ && comm_needed_ ? builder_.slot(r, "dx", e, {local_tokens(), k_}) : s.dx_partial;
      }
    } else {
      // Row: X [T, D_in/t]; partial Y [T, D_out] -> Y [T or T/t, D_out].
      s.x = builder_.slot(r, "x", e, {all, k_});
      s.x_total = s.x;
      s.w = builder_.slot(r, "w", e, {n_, k_});
      if (cfg_.bias) s.b = builder_.slot(r, "b", e, {n_});
      if (fwd) {
        s.y_partial = builder_.slot(r, sp_ && comm_needed_ ? "y_partial" : "y", e, {all, n_});
        s.y = sp_ && comm_needed_ ? builder_.slot(r, "y", e, {local_tokens(), n_}) : s.y_partial;
      }
      if (bwd) {
        s.dy = builder_.slot(r, "dy", e, {local_tokens(), n_});
        s.dy_total = sp_ && comm_needed_ ? builder_.slot(r, "dy_gathered", e, {all, n_}) : s.dy;
        s.dx = builder_.slot(r, "dx", e, {all, k_});
        s.dx_partial = s.dx;
      }
    }
    if (bwd) {
      s.dw = builder_.slot(r, "dw", accumulator_dtype(e), {n_, k_});
      if (cfg_.bias) s.db = builder_.slot(r, "db", accumulator_dtype(e), {n_});
    }
    return s;
  }

  // The op names of the layer (ARCHITECTURE.md §4.3).
  static inline const TpNames kNames{"fwd gemm",
                                     "dgrad gemm",
                                     "wgrad gemm",
                                     "bias add",
                                     "bias grad",
                                     "x all-gather",
                                     "x all-gather (recompute)",
                                     "x all-gather (wgrad)",
                                     "dy all-gather",
                                     "y reduce-scatter",
                                     "y all-reduce",
                                     "dx reduce-scatter",
                                     "dx all-reduce"};

  TpLayerSpec layer_spec() const {
    TpLayerSpec spec;
    spec.column = column_;
    spec.tokens = tokens();
    spec.local_tokens = local_tokens();
    spec.n = n_;
    spec.k = k_;
    spec.sequence_parallel = sp_;
    spec.comm = comm_needed_;
    spec.bias = cfg_.bias;
    spec.sync = cfg_.overlap == TpOverlap::sync;
    spec.dtype = cfg_.dtype;
    return spec;
  }

  void emit_rank(int r) {
    r_ = r;
    waits_.clear();
    last_compute_ = -1;
    const TpTensors s = make_slots(r);
    const TpLayerEmitter emitter(layer_spec());
    if (cfg_.pass != TpPass::bwd) emitter.forward(*this, s, kNames, Phase::fwd);
    if (cfg_.pass != TpPass::fwd) emitter.backward(*this, s, kNames, true);
  }

  // ---- TpEmitHost: one rank of a layer of its own, with tensor slots ----------------------------

  // A kernel on the compute stream; it consumes the waits recorded since the last one.
  OpId tp_kernel(std::string name, Phase phase, KernelCall call) override {
    std::vector<OpId> deps;
    deps.swap(waits_);
    last_compute_ = builder_.add(r_, compute_, std::move(name), OpLabels{phase, -1, -1, -1, -1},
                                 std::move(call), std::move(deps));
    return last_compute_;
  }

  // A collective on tp_comm. As with PyTorch's ProcessGroupNCCL, the communication stream first
  // waits for the work launched so far on the compute stream (here: the last compute kernel).
  OpId tp_collective(std::string name, Phase phase, CollectiveKind kind, std::int64_t bytes,
                     SlotId in, SlotId out) override {
    std::vector<OpId> deps;
    if (last_compute_ >= 0) deps.push_back(last_compute_);
    const CollectiveCall call{kind, group_, bytes, cfg_.dtype, 0, in, out};
    return builder_.add(r_, comm_, std::move(name), OpLabels{phase, -1, -1, -1, -1}, call,
                        std::move(deps));
  }

  // handle.wait(): the next compute kernel depends on `op`.
  void tp_wait(OpId op) override {
    if (op >= 0) waits_.push_back(op);
  }

  const TpLinearConfig& cfg_;
  int t_;
  bool column_, sp_, comm_needed_;
  ProgramBuilder builder_;
  StreamId compute_ = 0, comm_ = 0;
  GroupId group_ = 0;
  std::int64_t n_ = 0, k_ = 0;
  int r_ = 0;                // the rank being emitted
  std::vector<OpId> waits_;  // event waits recorded on the compute stream, not yet consumed
  OpId last_compute_ = -1;   // the compute kernel launched last on this rank
};

}  // namespace

std::string_view to_string(TpLinearKind k) {
  return kKindNames[static_cast<std::size_t>(k)];
}
std::string_view to_string(TpMode m) {
  return kModeNames[static_cast<std::size_t>(m)];
}
std::string_view to_string(TpOverlap o) {
  return kOverlapNames[static_cast<std::size_t>(o)];
}
std::string_view to_string(TpPass p) {
  return kPassNames[static_cast<std::size_t>(p)];
}
std::optional<TpLinearKind> parse_tp_linear_kind(std::string_view s) {
  return parse_enum_name<TpLinearKind>(kKindNames, s);
}
std::optional<TpMode> parse_tp_mode(std::string_view s) {
  return parse_enum_name<TpMode>(kModeNames, s);
}
std::optional<TpOverlap> parse_tp_overlap(std::string_view s) {
  return parse_enum_name<TpOverlap>(kOverlapNames, s);
}
std::optional<TpPass> parse_tp_pass(std::string_view s) {
  return parse_enum_name<TpPass>(kPassNames, s);
}

void check_config(const TpLinearConfig& c) {
  require_positive(c.tp, "tp");
  require_positive(c.tokens, "tokens");
  require_positive(c.in_features, "in");
  require_positive(c.out_features, "out");
  require_positive(c.gpus_per_node, "gpus_per_node");
  if (c.tp > kMaxTp) {
    throw InputError(fmt::format("`tp` must be at most {}, got {}", kMaxTp, c.tp));
  }
  if (c.kind == TpLinearKind::column && c.out_features % c.tp != 0) {
    throw InputError(fmt::format(
        "`out` {} must be divisible by `tp` {} (a column-parallel layer splits its outputs)",
        c.out_features, c.tp));
  }
  if (c.kind == TpLinearKind::row && c.in_features % c.tp != 0) {
    throw InputError(
        fmt::format("`in` {} must be divisible by `tp` {} (a row-parallel layer splits its inputs)",
                    c.in_features, c.tp));
  }
  if (c.mode == TpMode::reduce_scatter && c.tokens % c.tp != 0) {
    throw InputError(fmt::format(
        "`tokens` {} must be divisible by `tp` {} in reducescatter mode (sequence parallelism "
        "splits the tokens)",
        c.tokens, c.tp));
  }
  // Keep every tensor (and its byte count) far from int64 overflow.
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
  if (product_exceeds({c.tokens, std::max(c.in_features, c.out_features)}, kMaxElements)) {
    throw InputError("`tokens` x max(`in`, `out`) exceeds 2^40 elements");
  }
  if (product_exceeds({c.in_features, c.out_features}, kMaxElements)) {
    throw InputError("`in` x `out` exceeds 2^40 elements");
  }
}

std::int64_t tp_collective_bytes(const TpLinearConfig& c) {
  const std::int64_t features = c.kind == TpLinearKind::column ? c.in_features : c.out_features;
  return c.tokens * features * dtype_bytes(c.dtype);
}

Program build_tp_linear(const TpLinearConfig& config) {
  check_config(config);
  return TpLinearBuilder(config).build();
}

}  // namespace meshsim
