#include "validate/cuda/cuda_calibration.hpp"

#include <fmt/format.h>

#include "sim/network_analytical.hpp"
#include "validate/cuda/cuda_backend.hpp"
#include "validate/cuda/cuda_microbench.hpp"

namespace meshsim {

void run_cuda_calibration(const CalibrationOptions& o, CalibrationRun& run) {
  bind_cuda_device();
  MicrobenchOptions mb;
  mb.runs = o.runs;
  const std::string dt(to_string(o.dtype));
  // GEMMs: a cube of sizes in the calibration dtype, and one large GEMM per other dtype (peaks).
  const std::vector<std::int64_t> dims = o.quick ? std::vector<std::int64_t>{512, 2048}
                                                 : std::vector<std::int64_t>{256, 1024, 4096, 8192};
  std::vector<GemmBenchShape> shapes;
  for (auto m : dims) {
    for (auto n : dims) {
      for (auto k : dims) shapes.push_back({m, n, k, o.dtype});
    }
  }
  for (DType d : {DType::bf16, DType::fp16, DType::fp32}) {
    if (d != o.dtype) shapes.push_back({4096, 4096, 4096, d});
  }
  for (const auto& g : cuda_gemm_sweep(shapes, mb)) {
    const std::string name = fmt::format("gemm {} m{} n{} k{}", to_string(g.shape.dtype), g.shape.m,
                                         g.shape.n, g.shape.k);
    run.points.push_back({name, BenchCategory::compute, {g.seconds}, g.seconds});
    run.samples.compute.push_back({name,
                                   KernelCall{KernelKind::gemm,
                                              g.shape.dtype,
                                              GemmShape{g.shape.m, g.shape.n, g.shape.k},
                                              {},
                                              {},
                                              ElementwiseFn::none},
                                   g.seconds});
  }
  if (o.world_size < 2) return;
  // Collectives over the whole world (nccl-tests' sizes convention).
  std::vector<std::int64_t> sizes;
  for (std::int64_t b = o.quick ? (1 << 20) : (1 << 10); b <= (o.quick ? (16 << 20) : (1 << 28));
       b *= (o.quick ? 16 : 4)) {
    sizes.push_back(b);
  }
  const Mesh mesh({{"world", o.world_size}}, o.ranks_per_node);
  std::vector<int> members(static_cast<std::size_t>(o.world_size));
  for (int r = 0; r < o.world_size; ++r) members[static_cast<std::size_t>(r)] = r;
  const GroupPlacement placement = placement_of(mesh, members);
  for (const auto& c :
       nccl_collective_sweep({CollectiveKind::all_reduce, CollectiveKind::all_gather,
                              CollectiveKind::reduce_scatter, CollectiveKind::all_to_all},
                             sizes, o.dtype, mb)) {
    const std::string name =
        fmt::format("{} g{} {} B (algbw {:.1f} GB/s, busbw {:.1f} GB/s)", to_string(c.kind),
                    c.ranks, c.bytes, c.algbw / 1e9, c.busbw / 1e9);
    run.points.push_back({name, BenchCategory::collective, {c.seconds}, c.seconds});
    run.samples.comm.push_back(
        {name, CollectiveCall{c.kind, 0, c.bytes, c.dtype, 0, -1, -1, CollectiveAlgo::automatic},
         placement, c.seconds});
  }
}

}  // namespace meshsim
