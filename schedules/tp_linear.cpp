#include "schedules/tp_linear.hpp"
#include "sim/enum_names.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

constexpr std::array<std::string_view, 2> kKindNames = {"column", "row"};
constexpr std::array<std::string_view, 2> kModeNames = {"allreduce", "reducescatter"};
constexpr std::array<std::string_view, 2> kOverlapNames = {"async", "sync"};
constexpr std::array<std::string_view, 3> kPassNames = {"fwd", "bwd", "fwd+bwd"};
constexpr int kMaxTp = 1024;

// The tensors one rank touches. Unused slots stay -1; when t = 1 (no communication) the
// gathered/partial slots alias the local ones.
struct RankSlots {
  SlotId x = -1, x_total = -1, w = -1, b = -1, y_partial = -1, y = -1;
  SlotId dy = -1, dy_total = -1, dx_partial = -1, dx = -1, dw = -1, db = -1;
};

class TpLinearBuilder {
 public:
  explicit TpLinearBuilder(const TpLinearConfig& cfg)
      : cfg_(cfg),
        t_(cfg.tp),
        column_(cfg.kind == TpLinearKind::column),
        sp_(cfg.mode == TpMode::reducescatter),
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

  RankSlots make_slots(int r) {
    const DType e = cfg_.dtype;
    const std::int64_t all = tokens();
    RankSlots s;
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

  void emit_rank(int r) {
    waits_.clear();
    last_compute_ = -1;
    const RankSlots s = make_slots(r);
    if (cfg_.pass != TpPass::bwd) {
      if (column_) {
        column_forward(r, s);
      } else {
        row_forward(r, s);
      }
    }
    if (cfg_.pass != TpPass::fwd) {
      if (column_) {
        column_backward(r, s);
      } else {
        row_backward(r, s);
      }
    }
  }

  // --- ops --------------------------------------------------------------------------------------

  std::vector<OpId> take_waits() {
    std::vector<OpId> w;
    w.swap(waits_);
    return w;
  }

  // A kernel on the compute stream; it consumes the waits recorded since the last one.
  OpId kernel(int r, std::string name, Phase phase, KernelKind kind, KernelShape shape,
              std::vector<SlotId> in, std::vector<SlotId> out,
              ElementwiseFn fn = ElementwiseFn::none) {
    KernelCall call{kind, cfg_.dtype, std::move(shape), std::move(in), std::move(out), fn};
    last_compute_ = builder_.add(r, compute_, std::move(name), OpLabels{phase, -1, -1, -1, -1},
                                 std::move(call), take_waits());
    return last_compute_;
  }

  // A collective on tp_comm. As with PyTorch's ProcessGroupNCCL, the communication stream first
  // waits for the work launched so far on the compute stream (here: the last compute kernel).
  OpId collective(int r, std::string name, Phase phase, CollectiveKind kind, SlotId in,
                  SlotId out) {
    std::vector<OpId> deps;
    if (last_compute_ >= 0) deps.push_back(last_compute_);
    const CollectiveCall call{kind, group_, activation_bytes(), cfg_.dtype, 0, in, out};
    return builder_.add(r, comm_, std::move(name), OpLabels{phase, -1, -1, -1, -1}, call,
                        std::move(deps));
  }

  // handle.wait(): the next compute kernel depends on `op`.
  void wait(OpId op) {
    if (op >= 0) waits_.push_back(op);
  }
  // Under --overlap sync the host waits right after launching.
  void wait_if_sync(OpId op) {
    if (cfg_.overlap == TpOverlap::sync) wait(op);
  }
  void wait_if_async(OpId op) {
    if (cfg_.overlap == TpOverlap::async) wait(op);
  }

  // Y (+)= A B^T-style GEMMs of the layer, C [m, n] (+)= op(A) [m, k] op(B) [k, n].
  OpId forward_gemm(int r, SlotId x, SlotId w, SlotId y) {
    // Y [T, n] = X [T, k] W^T, W stored [n, k].
    return kernel(r, "fwd gemm", Phase::fwd, KernelKind::gemm,
                  GemmShape{tokens(), n_, k_, false, true, false}, {x, w}, {y});
  }
  OpId dgrad_gemm(int r, SlotId dy, SlotId w, SlotId dx) {
    // dX [T, k] = dY [T, n] W [n, k].
    return kernel(r, "dgrad gemm", Phase::bwd, KernelKind::gemm,
                  GemmShape{tokens(), k_, n_, false, false, false}, {dy, w}, {dx});
  }
  OpId wgrad_gemm(int r, SlotId dy, SlotId x, SlotId dw) {
    // dW [n, k] += dY^T [n, T] X [T, k], accumulated into the fp32 main grad.
    return kernel(r, "wgrad gemm", Phase::wgrad, KernelKind::gemm,
                  GemmShape{n_, k_, tokens(), true, false, true}, {dy, x, dw}, {dw});
  }
  void bias_add(int r, SlotId y, SlotId b, std::int64_t rows) {
    if (!cfg_.bias) return;
    // Y[i, :] += b over rows x n elements.
    kernel(r, "bias add", Phase::fwd, KernelKind::elementwise, VectorShape{rows * n_}, {y, b}, {y},
           ElementwiseFn::bias_add);
  }
  void bias_grad(int r, SlotId dy_total, SlotId db) {
    if (!cfg_.bias) return;
    // db += sum over the T rows of dY: a reduction reading T x n elements.
    kernel(r, "bias grad", Phase::wgrad, KernelKind::elementwise, VectorShape{tokens() * n_},
           {dy_total, db}, {db}, ElementwiseFn::bias_grad);
  }

  // --- the four layer halves (design §4.3, seed 002) ---------------------------------------------

  void column_forward(int r, const RankSlots& s) {
    if (sp_ && comm_needed_) {
      // The forward needs all of X: gather the T/t-row shards, then wait.
      wait(collective(r, "x all-gather", Phase::fwd, CollectiveKind::all_gather, s.x, s.x_total));
    }
    forward_gemm(r, s.x_total, s.w, s.y);
    bias_add(r, s.y, s.b, tokens());
  }

  void column_backward(int r, const RankSlots& s) {
    // Seed 002's order: the input all-gather (recomputed, not stored) is launched before the dX
    // GEMM, which does not need it; the dX collective is launched before dW, which runs while it
    // transfers. Both overlaps rely on the single hardware queue.
    OpId gather = -1;
    if (sp_ && comm_needed_) {
      gather = collective(r, "x all-gather (recompute)", Phase::bwd, CollectiveKind::all_gather,
                          s.x, s.x_total);
      wait_if_sync(gather);
    }
    dgrad_gemm(r, s.dy, s.w, s.dx_partial);
    OpId reduce = -1;
    if (comm_needed_) {
      reduce = sp_ ? collective(r, "dx reduce-scatter", Phase::bwd, CollectiveKind::reduce_scatter,
                                s.dx_partial, s.dx)
                   : collective(r, "dx all-reduce", Phase::bwd, CollectiveKind::all_reduce,
                                s.dx_partial, s.dx);
      wait_if_sync(reduce);
    }
    bias_grad(r, s.dy_total, s.db);
    wait_if_async(gather);  // dW needs the gathered X
    wgrad_gemm(r, s.dy_total, s.x_total, s.dw);
    wait_if_async(reduce);  // dX is complete for whatever runs next
  }

  void row_forward(int r, const RankSlots& s) {
    forward_gemm(r, s.x, s.w, s.y_partial);
    if (comm_needed_) {
      // Sum the partial products: on the critical path, the host waits.
      wait(sp_ ? collective(r, "y reduce-scatter", Phase::fwd, CollectiveKind::reduce_scatter,
                            s.y_partial, s.y)
               : collective(r, "y all-reduce", Phase::fwd, CollectiveKind::all_reduce, s.y_partial,
                            s.y));
    }
    bias_add(r, s.y, s.b, local_tokens());
  }

  void row_backward(int r, const RankSlots& s) {
    if (sp_ && comm_needed_) {
      // The backward of the reduce-scatter: gather dY's T/t-row shards before anything uses it.
      wait(
          collective(r, "dy all-gather", Phase::bwd, CollectiveKind::all_gather, s.dy, s.dy_total));
    }
    dgrad_gemm(r, s.dy_total, s.w, s.dx);
    wgrad_gemm(r, s.dy_total, s.x, s.dw);
    bias_grad(r, s.dy_total, s.db);
  }

  // Every collective moves one whole [T, D] activation: D_in for the column layer (X, dX), D_out
  // for the row layer (Y, dY).
  std::int64_t activation_bytes() const { return tp_collective_bytes(cfg_); }

  const TpLinearConfig& cfg_;
  int t_;
  bool column_, sp_, comm_needed_;
  ProgramBuilder builder_;
  StreamId compute_ = 0, comm_ = 0;
  GroupId group_ = 0;
  std::int64_t n_ = 0, k_ = 0;
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
  require_positive(c.tp, "--tp");
  require_positive(c.tokens, "--tokens");
  require_positive(c.in_features, "--in");
  require_positive(c.out_features, "--out");
  require_positive(c.gpus_per_node, "--gpus-per-node");
  if (c.tp > kMaxTp) {
    throw InputError(fmt::format("--tp must be at most {}, got {}", kMaxTp, c.tp));
  }
  if (c.kind == TpLinearKind::column && c.out_features % c.tp != 0) {
    throw InputError(fmt::format(
        "--out {} must be divisible by --tp {} (a column-parallel layer splits its outputs)",
        c.out_features, c.tp));
  }
  if (c.kind == TpLinearKind::row && c.in_features % c.tp != 0) {
    throw InputError(
        fmt::format("--in {} must be divisible by --tp {} (a row-parallel layer splits its inputs)",
                    c.in_features, c.tp));
  }
  if (c.mode == TpMode::reducescatter && c.tokens % c.tp != 0) {
    throw InputError(fmt::format(
        "--tokens {} must be divisible by --tp {} in reducescatter mode (sequence parallelism "
        "splits the tokens)",
        c.tokens, c.tp));
  }
  // Keep every tensor (and its byte count) far from int64 overflow.
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
  const std::int64_t widest = std::max(c.in_features, c.out_features);
  if (c.tokens > kMaxElements / widest) {
    throw InputError("--tokens x max(--in, --out) exceeds 2^40 elements");
  }
  if (c.in_features > kMaxElements / c.out_features) {
    throw InputError("--in x --out exceeds 2^40 elements");
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
