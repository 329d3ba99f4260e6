#include "schedules/calibration_programs.hpp"

#include <array>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

constexpr std::array<std::string_view, 4> kCategoryNames = {"compute", "p2p", "collective",
                                                            "interference"};

// The point of round `round`'s i-th slot among `points`: every round runs each point once,
// starting at point (round mod points), so that no point is always first and the repetitions of a
// point are spread over the whole Program instead of back to back (validate/run/robust_stats.hpp
// interleaved_order, which schedules/ cannot include).
std::size_t rotated(int round, std::size_t i, std::size_t points) {
  return (static_cast<std::size_t>(round) + i) % points;
}

// Collects points, then adds `runs + 1` rounds (the first the warm-up), each running every point
// once on every listed rank's stream (rotated).
class PointWriter {
 public:
  PointWriter(ProgramBuilder& builder, std::vector<BenchPoint>& points, int runs)
      : builder_(builder), points_(points), runs_(runs) {}

  // The same op on each rank of `ranks` (compute: independent; comm: matched per position).
  void add(BenchPoint point, const std::vector<int>& ranks, StreamId stream) {
    pending_.push_back({std::move(point), ranks, stream});
  }

  // Emits the rounds; the points, in the order added, get their ops (warm-up first per rank).
  void flush() {
    const std::size_t n = pending_.size();
    for (int rep = 0; rep <= runs_ && n > 0; ++rep) {
      for (std::size_t i = 0; i < n; ++i) {
        Pending& p = pending_[rotated(rep, i, n)];
        for (int r : p.ranks) {
          p.point.ops.push_back(builder_.add(r, p.stream, fmt::format("{} #{}", p.point.name, rep),
                                             OpLabels{}, p.point.body));
        }
      }
    }
    for (auto& p : pending_) points_.push_back(std::move(p.point));
    pending_.clear();
  }

 private:
  struct Pending {
    BenchPoint point;
    std::vector<int> ranks;
    StreamId stream;
  };
  ProgramBuilder& builder_;
  std::vector<BenchPoint>& points_;
  int runs_;
  std::vector<Pending> pending_;
};

std::vector<int> all_ranks(int n) {
  std::vector<int> r(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}

Mesh mesh_of(const CalibrationOptions& o) {
  return Mesh({{"world", o.world_size}}, o.ranks_per_node);
}

KernelCall gemm_call(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
  return KernelCall{KernelKind::gemm, dtype, GemmShape{m, n, k}, {}, {}, ElementwiseFn::none};
}

// The three GEMMs of a linear layer: forward (nn), input gradient (nt) and weight gradient (tn,
// accumulating), as the builders emit them.
struct GemmVariant {
  const char* name;
  bool trans_a, trans_b, accumulate;
};
constexpr GemmVariant kGemmVariants[] = {
    {"nn", false, false, false}, {"nt", false, true, false}, {"tn", true, false, true}};

KernelCall attention_call(KernelKind kind, DType dtype, std::int64_t tokens, MaskMode mask) {
  // Four query heads sharing two K/V heads, head_dim 64: the ring benchmarks' block shape.
  AttentionShape s{1, 4, 2, 64, mask, {{0, tokens}}, {{0, tokens}}};
  if (kind == KernelKind::lse_merge) s.k.clear();
  return KernelCall{kind, dtype, s, {}, {}, ElementwiseFn::none};
}

KernelCall vector_call(KernelKind kind, DType dtype, std::int64_t elements,
                       ElementwiseFn fn = ElementwiseFn::none) {
  return KernelCall{kind, dtype, VectorShape{elements}, {}, {}, fn};
}

// Adds compute points: one kernel on every rank's stream "compute", runs + 1 times.
class ComputePoints {
 public:
  ComputePoints(PointWriter& writer, std::vector<int> ranks, StreamId stream)
      : writer_(writer), ranks_(std::move(ranks)), stream_(stream) {}

  void add(std::string name, KernelCall call) {
    writer_.add(BenchPoint{std::move(name), BenchCategory::compute, std::move(call), 1, {}}, ranks_,
                stream_);
  }

 private:
  PointWriter& writer_;
  std::vector<int> ranks_;
  StreamId stream_;
};

// The GEMM variants (nn and nt only when quick) over every m x n x k of the grid.
void add_gemm_grid(ComputePoints& points, const CalibrationOptions& o) {
  const std::string dt(to_string(o.dtype));
  const std::vector<std::int64_t> dims =
      o.quick ? std::vector<std::int64_t>{64, 512} : std::vector<std::int64_t>{64, 256, 1024};
  for (const auto& v : kGemmVariants) {
    if (o.quick && v.trans_a) continue;
    for (auto m : dims) {
      for (auto n : dims) {
        for (auto k : dims) {
          KernelCall c = gemm_call(o.dtype, m, n, k);
          auto& g = std::get<GemmShape>(c.shape);
          g.trans_a = v.trans_a;
          g.trans_b = v.trans_b;
          g.accumulate = v.accumulate;
          points.add(fmt::format("gemm {} {} m{} n{} k{}", v.name, dt, m, n, k), c);
        }
      }
    }
  }
}

// Fused activations (forward GEMM with the activation epilogue; the whole linear backward with
// its derivative) over the larger shapes.
void add_fused_activations(ComputePoints& points, const CalibrationOptions& o) {
  const std::string dt(to_string(o.dtype));
  const std::vector<std::int64_t> big =
      o.quick ? std::vector<std::int64_t>{512} : std::vector<std::int64_t>{256, 1024};
  for (ElementwiseFn fn : {ElementwiseFn::none, ElementwiseFn::gelu, ElementwiseFn::relu}) {
    for (auto m : big) {
      for (auto n : big) {
        for (auto k : big) {
          KernelCall bwd = gemm_call(o.dtype, m, n, k);
          bwd.kind = KernelKind::linear_bwd;
          bwd.fn = fn;
          points.add(fmt::format("linear_bwd {} {} m{} n{} k{}", to_string(fn), dt, m, n, k), bwd);
          if (fn == ElementwiseFn::none) continue;
          KernelCall fwd = gemm_call(o.dtype, m, n, k);
          fwd.fn = fn;
          points.add(fmt::format("gemm {} {} m{} n{} k{}", to_string(fn), dt, m, n, k), fwd);
        }
      }
    }
  }
}

// One 512^3 GEMM in each dtype other than the grid's, for its peak.
void add_dtype_peaks(ComputePoints& points, const CalibrationOptions& o) {
  for (DType d : {DType::bf16, DType::fp16, DType::fp32, DType::fp64}) {
    if (d == o.dtype) continue;
    points.add(fmt::format("gemm {} m512 n512 k512", to_string(d)), gemm_call(d, 512, 512, 512));
  }
}

// Attention blocks forward and backward (no mask and causal), then the fp32 log-sum-exp merge,
// over the block sizes.
void add_attention_blocks(ComputePoints& points, const CalibrationOptions& o) {
  const std::string dt(to_string(o.dtype));
  const std::vector<std::int64_t> blocks =
      o.quick ? std::vector<std::int64_t>{128, 512}
              : std::vector<std::int64_t>{64, 128, 256, 512, 1024, 2048};
  for (KernelKind kind : {KernelKind::attention_fwd, KernelKind::attention_bwd}) {
    for (MaskMode mask : {MaskMode::none, MaskMode::causal}) {
      for (auto t : blocks) {
        points.add(fmt::format("{} {} {} t{}", to_string(kind), dt, to_string(mask), t),
                   attention_call(kind, o.dtype, t, mask));
      }
    }
  }
  for (auto t : blocks) {
    points.add(fmt::format("lse_merge t{}", t),
               attention_call(KernelKind::lse_merge, DType::fp32, t, MaskMode::none));
  }
}

// The memory-bound kernels (copy, accumulate, GELU, loss, optimizer update) over the sizes. The
// largest (4 Mi elements: 8-16 MB per operand) is past a CPU's last-level cache, as a training
// step's gradient buffers and optimizer are; without it --quick fitted the bandwidth of the
// cache alone and priced the step's whole-gradient passes 5-10x too fast.
void add_vector_kernels(ComputePoints& points, const CalibrationOptions& o) {
  const std::string dt(to_string(o.dtype));
  const std::vector<std::int64_t> sizes =
      o.quick ? std::vector<std::int64_t>{1 << 12, 1 << 18, 1 << 22}
              : std::vector<std::int64_t>{1 << 10, 1 << 13, 1 << 16, 1 << 19, 1 << 22};
  struct VectorKernel {
    KernelKind kind;
    ElementwiseFn fn;
  };
  for (const VectorKernel v : {VectorKernel{KernelKind::copy, ElementwiseFn::none},
                               VectorKernel{KernelKind::accumulate, ElementwiseFn::none},
                               VectorKernel{KernelKind::elementwise, ElementwiseFn::gelu},
                               VectorKernel{KernelKind::loss, ElementwiseFn::none},
                               VectorKernel{KernelKind::optimizer_update, ElementwiseFn::none}}) {
    for (auto n : sizes) {
      const std::string fn = v.fn == ElementwiseFn::none ? "" : fmt::format(" {}", to_string(v.fn));
      points.add(fmt::format("{}{} {} n{}", to_string(v.kind), fn, dt, n),
                 vector_call(v.kind, o.dtype, n, v.fn));
    }
  }
}

CalibrationProgram compute_program(const CalibrationOptions& o) {
  ProgramBuilder b(mesh_of(o), false, "calibration: compute kernels");
  const StreamId s = b.stream("compute");
  CalibrationProgram cp{BenchCategory::compute, {}, {}};
  PointWriter w(b, cp.points, o.runs);
  ComputePoints points(w, all_ranks(o.world_size), s);
  add_gemm_grid(points, o);
  add_fused_activations(points, o);
  add_dtype_peaks(points, o);
  add_attention_blocks(points, o);
  add_vector_kernels(points, o);
  w.flush();
  cp.program = std::move(b).finish();
  return cp;
}

std::vector<std::int64_t> comm_sizes(bool quick) {
  if (quick) return {1 << 10, 1 << 20};
  return {1 << 8, 1 << 12, 1 << 16, 1 << 20, 1 << 22, 1 << 24};
}

CalibrationProgram p2p_program(const CalibrationOptions& o) {
  ProgramBuilder b(mesh_of(o), false, "calibration: point-to-point ping-pong");
  const StreamId s = b.stream("comm");
  CalibrationProgram cp{BenchCategory::p2p, {}, {}};
  const std::vector<std::int64_t> sizes = comm_sizes(o.quick);
  for (auto bytes : sizes) {
    cp.points.push_back({fmt::format("p2p {} B", bytes),
                         BenchCategory::p2p,
                         P2PCall{{Transfer{1, bytes, 0, -1}}, {}},
                         2,
                         {}});
  }
  int tag = 0;
  for (int rep = 0; rep <= o.runs; ++rep) {
    for (std::size_t i = 0; i < sizes.size(); ++i, ++tag) {
      BenchPoint& point = cp.points[rotated(rep, i, sizes.size())];
      const std::int64_t bytes = std::get<P2PCall>(point.body).sends.front().bytes;
      for (int a = 0; a + 1 < o.world_size; a += 2) {
        const int z = a + 1;
        const std::string name = fmt::format("{} #{}", point.name, rep);
        // a -> z, then z -> a: rank a's send and receive are one repetition's round trip.
        const OpId ping =
            b.add(a, s, name + " ping", OpLabels{}, P2PCall{{Transfer{z, bytes, 2 * tag, -1}}, {}});
        b.add(z, s, name + " ping", OpLabels{}, P2PCall{{}, {Transfer{a, bytes, 2 * tag, -1}}});
        b.add(z, s, name + " pong", OpLabels{}, P2PCall{{Transfer{a, bytes, 2 * tag + 1, -1}}, {}});
        const OpId pong = b.add(a, s, name + " pong", OpLabels{},
                                P2PCall{{}, {Transfer{z, bytes, 2 * tag + 1, -1}}});
        point.ops.push_back(ping);
        point.ops.push_back(pong);
      }
    }
  }
  cp.program = std::move(b).finish();
  return cp;
}

CalibrationProgram collective_program(const CalibrationOptions& o) {
  ProgramBuilder b(mesh_of(o), false, "calibration: collectives");
  const StreamId s = b.stream("comm");
  CalibrationProgram cp{BenchCategory::collective, {}, {}};
  for (int g = 2; g <= o.world_size; ++g) {
    if (o.world_size % g != 0) continue;
    std::vector<GroupId> groups;
    for (int first = 0; first < o.world_size; first += g) {
      std::vector<int> members;
      for (int r = first; r < first + g; ++r) members.push_back(r);
      groups.push_back(b.group(fmt::format("g{}", g), members));
    }
    const std::size_t first_point = cp.points.size();
    for (CollectiveKind kind : {CollectiveKind::all_reduce, CollectiveKind::all_gather,
                                CollectiveKind::reduce_scatter, CollectiveKind::all_to_all}) {
      for (auto bytes : comm_sizes(o.quick)) {
        // Every group runs the point at once; the ops of group j's ranks name group j.
        cp.points.push_back(
            {fmt::format("{} g{} {} B", to_string(kind), g, bytes),
             BenchCategory::collective,
             CollectiveCall{kind, groups[0], bytes, o.dtype, 0, -1, -1, CollectiveAlgo::automatic},
             g,
             {}});
      }
    }
    const std::size_t n = cp.points.size() - first_point;
    for (int rep = 0; rep <= o.runs; ++rep) {
      for (std::size_t i = 0; i < n; ++i) {
        BenchPoint& point = cp.points[first_point + rotated(rep, i, n)];
        for (int r = 0; r < o.world_size; ++r) {
          CollectiveCall call = std::get<CollectiveCall>(point.body);
          call.group = groups[static_cast<std::size_t>(r / g)];
          point.ops.push_back(
              b.add(r, s, fmt::format("{} #{}", point.name, rep), OpLabels{}, call));
        }
      }
    }
  }
  cp.program = std::move(b).finish();
  return cp;
}

// The GEMM timed under communication (and alone, first, in the same Program).
constexpr std::int64_t kInterferenceGemm = 512;

CalibrationProgram interference_program(const CalibrationOptions& o) {
  ProgramBuilder b(mesh_of(o), false, "calibration: compute under communication");
  const StreamId compute = b.stream("compute");
  const StreamId comm = b.stream("comm");
  CalibrationProgram cp{BenchCategory::interference, {}, {}};
  const int pairs_end = o.world_size - o.world_size % 2;
  const auto ranks = [&] {
    std::vector<int> r;
    for (int i = 0; i < pairs_end; ++i) r.push_back(i);
    return r;
  }();
  const KernelCall gemm =
      gemm_call(o.dtype, kInterferenceGemm, kInterferenceGemm, kInterferenceGemm);
  const std::string dt(to_string(o.dtype));
  BenchPoint alone{
      fmt::format("gemm {} m512 n512 k512 alone", dt), BenchCategory::interference, gemm, 1, {}};
  std::vector<OpId> last_alone(static_cast<std::size_t>(o.world_size), -1);
  for (int rep = 0; rep <= o.runs; ++rep) {
    for (int r : ranks) {
      const OpId op = b.add(r, compute, fmt::format("{} #{}", alone.name, rep), OpLabels{}, gemm);
      alone.ops.push_back(op);
      last_alone[static_cast<std::size_t>(r)] = op;
    }
  }
  // Under communication: each rank exchanges 16 MiB with its partner, back to back, while its
  // compute stream runs the GEMMs (started once the alone runs are over).
  BenchPoint under{fmt::format("gemm {} m512 n512 k512 under comm", dt),
                   BenchCategory::interference,
                   gemm,
                   1,
                   {}};
  constexpr std::int64_t kExchangeBytes = std::int64_t{1} << 24;
  const int exchanges = 24 * (o.runs + 1);
  for (int r : ranks) {
    const int peer = r ^ 1;
    for (int x = 0; x < exchanges; ++x) {
      std::vector<OpId> deps;
      if (x == 0) deps.push_back(last_alone[static_cast<std::size_t>(r)]);
      b.add(
          r, comm, fmt::format("exchange #{}", x), OpLabels{},
          P2PCall{{Transfer{peer, kExchangeBytes, x, -1}}, {Transfer{peer, kExchangeBytes, x, -1}}},
          deps);
    }
  }
  // Three times the repetitions: whether a GEMM shares its core with a spinning or a copying comm
  // thread varies, and the factor is their mean.
  for (int rep = 0; rep <= 3 * o.runs; ++rep) {
    for (int r : ranks) {
      under.ops.push_back(
          b.add(r, compute, fmt::format("{} #{}", under.name, rep), OpLabels{}, gemm));
    }
  }
  cp.points.push_back(std::move(alone));
  cp.points.push_back(std::move(under));
  cp.program = std::move(b).finish();
  return cp;
}

}  // namespace

std::string_view to_string(BenchCategory c) {
  return kCategoryNames[static_cast<std::size_t>(c)];
}

std::vector<CalibrationProgram> calibration_programs(const CalibrationOptions& o) {
  MESHSIM_CHECK(o.world_size >= 1 && o.ranks_per_node >= 1 && o.runs >= 1,
                "calibration options: world size, ranks per node and runs must be >= 1");
  std::vector<CalibrationProgram> out;
  out.push_back(compute_program(o));
  if (o.world_size >= 2) {
    out.push_back(p2p_program(o));
    out.push_back(collective_program(o));
    out.push_back(interference_program(o));
  }
  return out;
}

}  // namespace meshsim
