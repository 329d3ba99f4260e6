#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "schedules/tp_linear.hpp"
#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/metrics.hpp"

using namespace meshsim;

namespace {

// T = 16 tokens, D_in = 8, D_out = 12, t = 4: every split divides.
TpLinearConfig small(TpLinearKind kind, TpMode mode, TpOverlap overlap = TpOverlap::async,
                     TpPass pass = TpPass::fwd_bwd, bool single_queue = true) {
  TpLinearConfig c;
  c.tp = 4;
  c.tokens = 16;
  c.in_features = 8;
  c.out_features = 12;
  c.kind = kind;
  c.mode = mode;
  c.overlap = overlap;
  c.pass = pass;
  c.single_queue = single_queue;
  return c;
}

std::vector<const Op*> rank_ops(const Program& p, int rank) {
  std::vector<const Op*> ops;
  for (const auto& op : p.ops) {
    if (op.rank == rank) ops.push_back(&op);
  }
  return ops;
}

std::vector<std::string> names(const Program& p, int rank) {
  std::vector<std::string> out;
  for (const Op* op : rank_ops(p, rank)) out.push_back(op->name.str());
  return out;
}

const Op& find(const Program& p, int rank, std::string_view name) {
  for (const auto& op : p.ops) {
    if (op.rank == rank && op.name == name) return op;
  }
  FAIL("no op named ", std::string(name), " on rank ", rank);
  return p.ops.front();
}

bool depends_on(const Program& p, const Op& op, const Op& on) {
  const auto deps = p.deps(op.id);
  return std::find(deps.begin(), deps.end(), on.id) != deps.end();
}

std::int64_t elements(const Program& p, SlotId s) {
  std::int64_t n = 1;
  for (std::int64_t d : p.slots[static_cast<std::size_t>(s)].shape) n *= d;
  return n;
}

struct Run {
  Program program;
  CommPlan plan;
  Timeline timeline;
  RunMetrics metrics;
};

// Every compute kernel takes `gemm` ns, every collective `coll` ns.
Run run_uniform(const TpLinearConfig& c, Nanos gemm, Nanos coll) {
  Run r{build_tp_linear(c), {}, {}, {}};
  r.plan = validate_program(r.program);
  Durations d;
  d.ops.assign(r.program.ops.size(), gemm);
  d.collectives.assign(r.plan.collectives.size(), coll);
  r.timeline = simulate(r.program, r.plan, d);
  r.metrics = compute_metrics(r.program, r.plan, r.timeline);
  return r;
}

std::string config_error(const TpLinearConfig& c) {
  try {
    check_config(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const std::vector<TpLinearKind> kKinds = {TpLinearKind::column, TpLinearKind::row};
const std::vector<TpMode> kModes = {TpMode::all_reduce, TpMode::reduce_scatter};
const std::vector<TpOverlap> kOverlaps = {TpOverlap::async, TpOverlap::sync};
const std::vector<TpPass> kPasses = {TpPass::fwd, TpPass::bwd, TpPass::fwd_bwd};

}  // namespace

TEST_CASE("column allreduce: no forward comm; dX all-reduced while dW computes") {
  const Program p = build_tp_linear(small(TpLinearKind::column, TpMode::all_reduce));
  CHECK(p.streams == std::vector<std::string>{"compute", "tp_comm"});
  CHECK(p.single_queue);
  for (int r = 0; r < 4; ++r) {
    CHECK(names(p, r) ==
          std::vector<std::string>{"fwd gemm", "dgrad gemm", "dx all-reduce", "wgrad gemm"});
  }
  // Y [T, D_out/t] = X [T, D_in] W_r^T: m = 16, n = 12/4 = 3, k = 8, W transposed
  const auto& fwd = std::get<KernelCall>(find(p, 0, "fwd gemm").body);
  CHECK(fwd.kind == KernelKind::gemm);
  CHECK(std::get<GemmShape>(fwd.shape) == GemmShape{16, 3, 8, false, true, false});
  // dX [T, D_in] = dY [T, D_out/t] W_r [D_out/t, D_in]: m = 16, n = 8, k = 3
  const Op& dgrad = find(p, 0, "dgrad gemm");
  CHECK(std::get<GemmShape>(std::get<KernelCall>(dgrad.body).shape) ==
        GemmShape{16, 8, 3, false, false, false});
  // dW [D_out/t, D_in] += dY^T X: m = 3, n = 8, k = T = 16, dY transposed, accumulated
  const Op& wgrad = find(p, 0, "wgrad gemm");
  const auto& wk = std::get<KernelCall>(wgrad.body);
  CHECK(std::get<GemmShape>(wk.shape) == GemmShape{3, 8, 16, true, false, true});
  CHECK(wk.outputs.size() == 1);
  CHECK(std::find(wk.inputs.begin(), wk.inputs.end(), wk.outputs[0]) != wk.inputs.end());
  CHECK(p.slots[static_cast<std::size_t>(wk.outputs[0])].dtype == DType::fp32);
  // all-reduce of dX, in place: M = T x D_in x e = 16 x 8 x 2 = 256 bytes
  const Op& ar = find(p, 0, "dx all-reduce");
  const auto& call = std::get<CollectiveCall>(ar.body);
  CHECK(call.kind == CollectiveKind::all_reduce);
  CHECK(call.bytes == 16 * 8 * 2);
  CHECK(call.input == call.output);
  CHECK(p.streams[static_cast<std::size_t>(ar.stream)] == "tp_comm");
  // async: the all-reduce waits for dX; dW does not wait for the all-reduce
  CHECK(depends_on(p, ar, dgrad));
  CHECK_FALSE(depends_on(p, wgrad, ar));
  // sync: dW waits for it
  const Program s =
      build_tp_linear(small(TpLinearKind::column, TpMode::all_reduce, TpOverlap::sync));
  CHECK(depends_on(s, find(s, 0, "wgrad gemm"), find(s, 0, "dx all-reduce")));
}

TEST_CASE("column reducescatter: all-gather X; backward regathers X and reduce-scatters dX") {
  const Program p = build_tp_linear(small(TpLinearKind::column, TpMode::reduce_scatter));
  for (int r = 0; r < 4; ++r) {
    CHECK(names(p, r) == std::vector<std::string>{"x all-gather", "fwd gemm",
                                                  "x all-gather (recompute)", "dgrad gemm",
                                                  "dx reduce-scatter", "wgrad gemm"});
  }
  // every collective moves the gathered X or dX: M_total = T x D_in x e = 256 bytes
  for (const char* name : {"x all-gather", "x all-gather (recompute)", "dx reduce-scatter"}) {
    CHECK(std::get<CollectiveCall>(find(p, 0, name).body).bytes == 16 * 8 * 2);
  }
  const Op& ag_fwd = find(p, 0, "x all-gather");
  const Op& fwd = find(p, 0, "fwd gemm");
  const Op& ag = find(p, 0, "x all-gather (recompute)");
  const Op& dgrad = find(p, 0, "dgrad gemm");
  const Op& rs = find(p, 0, "dx reduce-scatter");
  const Op& wgrad = find(p, 0, "wgrad gemm");
  // X shard [T/t, D_in] = [4, 8] gathers to [16, 8]; dX [16, 8] scatters to [4, 8]
  const auto& agc = std::get<CollectiveCall>(ag.body);
  CHECK(elements(p, agc.input) == 4 * 8);
  CHECK(elements(p, agc.output) == 16 * 8);
  const auto& rsc = std::get<CollectiveCall>(rs.body);
  CHECK(elements(p, rsc.input) == 16 * 8);
  CHECK(elements(p, rsc.output) == 4 * 8);
  CHECK(depends_on(p, fwd, ag_fwd));
  // the backward's gather starts after the forward's output exists, dX does not wait for it,
  // dW does; the reduce-scatter waits for dX
  CHECK(depends_on(p, ag, fwd));
  CHECK_FALSE(depends_on(p, dgrad, ag));
  CHECK(depends_on(p, wgrad, ag));
  CHECK(depends_on(p, rs, dgrad));
  CHECK_FALSE(depends_on(p, wgrad, rs));
  // dW reads the gathered X
  CHECK(std::get<KernelCall>(wgrad.body).inputs[1] == agc.output);

  const Program s =
      build_tp_linear(small(TpLinearKind::column, TpMode::reduce_scatter, TpOverlap::sync));
  CHECK(depends_on(s, find(s, 0, "dgrad gemm"), find(s, 0, "x all-gather (recompute)")));
  CHECK(depends_on(s, find(s, 0, "wgrad gemm"), find(s, 0, "dx reduce-scatter")));
}

TEST_CASE("row layers: all-reduce or reduce-scatter Y; with SP the backward gathers dY first") {
  const Program ar = build_tp_linear(small(TpLinearKind::row, TpMode::all_reduce));
  CHECK(names(ar, 2) ==
        std::vector<std::string>{"fwd gemm", "y all-reduce", "dgrad gemm", "wgrad gemm"});
  // Y [T, D_out] = X_r [T, D_in/t] W_r^T: m = 16, n = 12, k = 8/4 = 2
  CHECK(std::get<GemmShape>(std::get<KernelCall>(find(ar, 2, "fwd gemm").body).shape) ==
        GemmShape{16, 12, 2, false, true, false});
  // all-reduce of Y: M = T x D_out x e = 16 x 12 x 2 = 384 bytes
  CHECK(std::get<CollectiveCall>(find(ar, 2, "y all-reduce").body).bytes == 16 * 12 * 2);
  CHECK(depends_on(ar, find(ar, 2, "dgrad gemm"), find(ar, 2, "y all-reduce")));

  const Program rs = build_tp_linear(small(TpLinearKind::row, TpMode::reduce_scatter));
  CHECK(names(rs, 1) == std::vector<std::string>{"fwd gemm", "y reduce-scatter", "dy all-gather",
                                                 "dgrad gemm", "wgrad gemm"});
  // reduce-scatter of Y and all-gather of dY: M_total = T x D_out x e = 384 bytes
  const auto& y_rs = std::get<CollectiveCall>(find(rs, 1, "y reduce-scatter").body);
  const auto& dy_ag = std::get<CollectiveCall>(find(rs, 1, "dy all-gather").body);
  CHECK(y_rs.bytes == 16 * 12 * 2);
  CHECK(dy_ag.bytes == 16 * 12 * 2);
  CHECK(elements(rs, y_rs.output) == 4 * 12);  // Y shard [T/t, D_out]
  CHECK(elements(rs, dy_ag.input) == 4 * 12);
  CHECK(depends_on(rs, find(rs, 1, "dgrad gemm"), find(rs, 1, "dy all-gather")));
  // dX [T, D_in/t] = dY [T, D_out] W_r: m = 16, n = 2, k = 12; dW [D_out, D_in/t]: 12 x 2 x 16
  CHECK(std::get<GemmShape>(std::get<KernelCall>(find(rs, 1, "dgrad gemm").body).shape) ==
        GemmShape{16, 2, 12, false, false, false});
  CHECK(std::get<GemmShape>(std::get<KernelCall>(find(rs, 1, "wgrad gemm").body).shape) ==
        GemmShape{12, 2, 16, true, false, true});
}

TEST_CASE("collective sizes agree with their slots in every mode") {
  // all-reduce: in == out, bytes = elements x e; all-gather: out = t x in, bytes = out x e;
  // reduce-scatter: in = t x out, bytes = in x e.
  for (TpLinearKind kind : kKinds) {
    for (TpMode mode : kModes) {
      const Program p = build_tp_linear(small(kind, mode));
      int collectives = 0;
      for (const auto& op : p.ops) {
        const auto* c = std::get_if<CollectiveCall>(&op.body);
        if (c == nullptr) continue;
        ++collectives;
        const std::int64_t in = elements(p, c->input), out = elements(p, c->output);
        switch (c->kind) {
          case CollectiveKind::all_reduce:
            CHECK(in == out);
            CHECK(c->bytes == in * 2);
            break;
          case CollectiveKind::all_gather:
            CHECK(out == 4 * in);
            CHECK(c->bytes == out * 2);
            break;
          case CollectiveKind::reduce_scatter:
            CHECK(in == 4 * out);
            CHECK(c->bytes == in * 2);
            break;
          default:
            FAIL("unexpected collective");
        }
        CHECK(c->bytes == tp_collective_bytes(small(kind, mode)));
      }
      // per rank: column AR 1, column SP 3, row AR 1, row SP 2
      const int expected = kind == TpLinearKind::column ? (mode == TpMode::all_reduce ? 1 : 3)
                                                        : (mode == TpMode::all_reduce ? 1 : 2);
      CHECK(collectives == 4 * expected);
    }
  }
}

TEST_CASE("bias: a bias add in the forward, its gradient sums dY over the tokens") {
  TpLinearConfig c = small(TpLinearKind::column, TpMode::reduce_scatter);
  c.bias = true;
  const Program col = build_tp_linear(c);
  CHECK(names(col, 0) == std::vector<std::string>{"x all-gather", "fwd gemm", "bias add",
                                                  "x all-gather (recompute)", "dgrad gemm",
                                                  "dx reduce-scatter", "bias grad", "wgrad gemm"});
  // column: Y and dY are [T, D_out/t] = 16 x 3
  const auto& add = std::get<KernelCall>(find(col, 0, "bias add").body);
  CHECK(add.kind == KernelKind::elementwise);
  CHECK(std::get<VectorShape>(add.shape).elements == 16 * 3);
  const auto& grad = std::get<KernelCall>(find(col, 0, "bias grad").body);
  CHECK(std::get<VectorShape>(grad.shape).elements == 16 * 3);
  CHECK(elements(col, grad.outputs[0]) == 3);
  // the backward's gather follows the bias add (the forward's last kernel)
  CHECK(depends_on(col, find(col, 0, "x all-gather (recompute)"), find(col, 0, "bias add")));

  c.kind = TpLinearKind::row;
  const Program row = build_tp_linear(c);
  // row SP: the bias is added to the Y shard [T/t, D_out] = 4 x 12 after the reduce-scatter; its
  // gradient sums the gathered dY [T, D_out] = 16 x 12 into all D_out = 12 entries
  const Op& radd = find(row, 0, "bias add");
  CHECK(std::get<VectorShape>(std::get<KernelCall>(radd.body).shape).elements == 4 * 12);
  CHECK(depends_on(row, radd, find(row, 0, "y reduce-scatter")));
  const auto& rgrad = std::get<KernelCall>(find(row, 0, "bias grad").body);
  CHECK(std::get<VectorShape>(rgrad.shape).elements == 16 * 12);
  CHECK(elements(row, rgrad.outputs[0]) == 12);
}

TEST_CASE("one rank needs no communication") {
  for (TpLinearKind kind : kKinds) {
    for (TpMode mode : kModes) {
      TpLinearConfig c = small(kind, mode);
      c.tp = 1;
      const Program p = build_tp_linear(c);
      for (const auto& op : p.ops) CHECK(op.is_compute());
      CHECK(p.ops.size() == 3);  // fwd, dgrad, wgrad
    }
  }
}

TEST_CASE("every combination is deadlock-free with one or several queues") {
  for (int t : {1, 2, 3, 4, 8}) {
    for (TpLinearKind kind : kKinds) {
      for (TpMode mode : kModes) {
        for (TpOverlap overlap : kOverlaps) {
          for (TpPass pass : kPasses) {
            for (bool single : {true, false}) {
              for (bool bias : {false, true}) {
                TpLinearConfig c = small(kind, mode, overlap, pass, single);
                c.tp = t;
                c.tokens = 48;  // divisible by 1, 2, 3, 4, 8
                c.in_features = 24;
                c.out_features = 48;
                c.bias = bias;
                CAPTURE(t);
                CAPTURE(to_string(kind));
                CAPTURE(to_string(mode));
                CAPTURE(to_string(overlap));
                CAPTURE(to_string(pass));
                CHECK_NOTHROW(run_uniform(c, 10, 7));
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("exact backward times: async overlap hides the collective, sync exposes it") {
  // Every kernel takes G, every collective C <= G; backward only, no bias.
  const Nanos g = 100, c = 60;
  struct Case {
    TpLinearKind kind;
    TpMode mode;
    TpOverlap overlap;
    Nanos makespan, exposed;
  };
  const std::vector<Case> cases = {
      // column AR async: dX [0, G], then all-reduce [G, G+C] under dW [G, 2G] -> 2G, none exposed
      {TpLinearKind::column, TpMode::all_reduce, TpOverlap::async, 2 * g, 0},
      // column AR sync: dX, all-reduce, dW in a row -> 2G + C, C exposed
      {TpLinearKind::column, TpMode::all_reduce, TpOverlap::sync, 2 * g + c, c},
      // column SP async: all-gather [0, C] under dX [0, G], reduce-scatter [G, G+C] under dW
      // [G, 2G] -> 2G, none exposed
      {TpLinearKind::column, TpMode::reduce_scatter, TpOverlap::async, 2 * g, 0},
      // column SP sync: all-gather, dX, reduce-scatter, dW in a row -> 2G + 2C, 2C exposed
      {TpLinearKind::column, TpMode::reduce_scatter, TpOverlap::sync, 2 * g + 2 * c, 2 * c},
      // row AR: dX, dW, no comm -> 2G
      {TpLinearKind::row, TpMode::all_reduce, TpOverlap::async, 2 * g, 0},
      // row SP: all-gather of dY, then dX, dW -> C + 2G, C exposed (nothing to overlap)
      {TpLinearKind::row, TpMode::reduce_scatter, TpOverlap::async, c + 2 * g, c},
      {TpLinearKind::row, TpMode::reduce_scatter, TpOverlap::sync, c + 2 * g, c},
  };
  for (const auto& k : cases) {
    CAPTURE(to_string(k.kind));
    CAPTURE(to_string(k.mode));
    CAPTURE(to_string(k.overlap));
    const Run r = run_uniform(small(k.kind, k.mode, k.overlap, TpPass::bwd), g, c);
    CHECK(r.timeline.makespan == k.makespan);
    for (const auto& m : r.metrics.ranks) CHECK(m.exposed_comm == k.exposed);
  }
}

TEST_CASE("async all-reduce longer than dW: exposed max(0, C - G)") {
  // dX [0, G], all-reduce [G, G+C], dW [G, 2G]: makespan G + max(G, C), exposed C - G when C > G
  const Nanos g = 100, c = 150;
  const Run r = run_uniform(
      small(TpLinearKind::column, TpMode::all_reduce, TpOverlap::async, TpPass::bwd), g, c);
  CHECK(r.timeline.makespan == g + c);
  CHECK(r.metrics.ranks[0].exposed_comm == c - g);
}

TEST_CASE("exact forward and forward+backward times") {
  const Nanos g = 100, c = 60;
  // forward: column AR one GEMM (G); every other mode one GEMM and one collective in a row (G+C)
  CHECK(run_uniform(small(TpLinearKind::column, TpMode::all_reduce, TpOverlap::async, TpPass::fwd),
                    g, c)
            .timeline.makespan == g);
  for (TpLinearKind kind : kKinds) {
    for (TpMode mode : kModes) {
      if (kind == TpLinearKind::column && mode == TpMode::all_reduce) continue;
      const Run r = run_uniform(small(kind, mode, TpOverlap::async, TpPass::fwd), g, c);
      CHECK(r.timeline.makespan == g + c);
      CHECK(r.metrics.ranks[0].exposed_comm == c);
    }
  }
  // column SP fwd+bwd async: forward C + G; the backward's all-gather starts when the forward
  // GEMM ends and hides under dX, the reduce-scatter under dW: C + 3G, only the forward's C
  // exposed
  const Run col = run_uniform(small(TpLinearKind::column, TpMode::reduce_scatter), g, c);
  CHECK(col.timeline.makespan == c + 3 * g);
  CHECK(col.metrics.ranks[0].exposed_comm == c);
  // row AR fwd+bwd: GEMM, all-reduce, then dX (waits for Y) and dW: 3G + C
  const Run row = run_uniform(small(TpLinearKind::row, TpMode::all_reduce), g, c);
  CHECK(row.timeline.makespan == 3 * g + c);
  CHECK(row.metrics.ranks[0].exposed_comm == c);
}

TEST_CASE("several hardware queues: a GEMM issued later starts first and the overlap is lost") {
  // Design §2 rule (4): with several queues the all-reduce, ready when dX ends at G together with
  // dW, cannot start while dW fills the device, so it runs after it: [2G, 2G + C].
  const Nanos g = 100, c = 60;
  const Run r = run_uniform(small(TpLinearKind::column, TpMode::all_reduce, TpOverlap::async,
                                  TpPass::bwd, /*single_queue=*/false),
                            g, c);
  CHECK_FALSE(r.program.single_queue);
  const Op& ar = find(r.program, 0, "dx all-reduce");
  const Op& wgrad = find(r.program, 0, "wgrad gemm");
  CHECK(ar.id < wgrad.id);                                               // launched first ...
  CHECK(r.timeline.ops[static_cast<std::size_t>(wgrad.id)].start == g);  // ... but dW starts first
  CHECK(r.timeline.ops[static_cast<std::size_t>(ar.id)].start == 2 * g);
  // makespan 2G + C and exposed C, the same as --overlap sync
  CHECK(r.timeline.makespan == 2 * g + c);
  for (const auto& m : r.metrics.ranks) CHECK(m.exposed_comm == c);

  // column SP: the all-gather waits for dX [0, G], runs [G, G+C]; then dW [G+C, 2G+C] goes
  // before the reduce-scatter [2G+C, 2G+2C]: 2G + 2C, 2C exposed (sync's figures)
  const Run sp = run_uniform(
      small(TpLinearKind::column, TpMode::reduce_scatter, TpOverlap::async, TpPass::bwd, false), g,
      c);
  CHECK(sp.timeline.makespan == 2 * g + 2 * c);
  CHECK(sp.metrics.ranks[0].exposed_comm == 2 * c);
  const Run sync = run_uniform(
      small(TpLinearKind::column, TpMode::reduce_scatter, TpOverlap::sync, TpPass::bwd, true), g,
      c);
  CHECK(sp.timeline.makespan == sync.timeline.makespan);
  CHECK(sp.metrics.ranks[0].exposed_comm == sync.metrics.ranks[0].exposed_comm);
}

TEST_CASE("cost model, the CLI defaults: async exposes only the forward all-gather") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  auto exposed = [&](TpOverlap overlap, bool single) {
    TpLinearConfig c;  // tp 8, 8192 tokens, 8192 -> 28672, column, reducescatter
    c.overlap = overlap;
    c.single_queue = single;
    const Program p = build_tp_linear(c);
    const CommPlan plan = validate_program(p);
    const Durations d = estimate_durations(p, plan, hw);
    const Timeline t = simulate(p, plan, d);
    const Nanos forward_gather = d.collectives[0];  // the first instance: the forward all-gather
    return std::pair{compute_metrics(p, plan, t).ranks[0].exposed_comm, forward_gather};
  };
  const auto [async_exposed, gather] = exposed(TpOverlap::async, true);
  const auto [sync_exposed, gather2] = exposed(TpOverlap::sync, true);
  const auto [multi_exposed, gather3] = exposed(TpOverlap::async, false);
  CHECK(async_exposed == gather);  // the backward's collectives hide under its GEMMs
  // sync: all three collectives (forward all-gather, backward all-gather, reduce-scatter)
  CHECK(sync_exposed > 2 * async_exposed);
  CHECK(multi_exposed == sync_exposed);
}

TEST_CASE("impossible configurations are rejected naming the flag") {
  auto c = small(TpLinearKind::column, TpMode::reduce_scatter);
  CHECK(config_error(c).empty());
  c.out_features = 10;  // column splits D_out
  CHECK(config_error(c).find("`out` 10 must be divisible by `tp` 4") != std::string::npos);
  c = small(TpLinearKind::row, TpMode::all_reduce);
  c.in_features = 6;  // row splits D_in
  CHECK(config_error(c).find("`in` 6 must be divisible by `tp` 4") != std::string::npos);
  c.in_features = 8;
  c.out_features = 10;  // fine for a row layer
  CHECK(config_error(c).empty());
  c.tokens = 18;  // fine without sequence parallelism ...
  CHECK(config_error(c).empty());
  c.mode = TpMode::reduce_scatter;  // ... not with it
  CHECK(config_error(c).find("`tokens` 18 must be divisible by `tp` 4") != std::string::npos);
  c = small(TpLinearKind::column, TpMode::all_reduce);
  c.tokens = 0;
  CHECK(config_error(c).find("`tokens`") != std::string::npos);
  c = small(TpLinearKind::column, TpMode::all_reduce);
  c.tp = 2048;
  CHECK(config_error(c).find("`tp` must be at most") != std::string::npos);
  c = small(TpLinearKind::column, TpMode::all_reduce);
  c.tokens = std::int64_t{1} << 30;
  c.in_features = std::int64_t{1} << 20;
  CHECK(config_error(c).find("2^40") != std::string::npos);
}
