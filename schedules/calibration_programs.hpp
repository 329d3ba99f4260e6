#pragma once
// The calibration microbenchmarks as Programs (ARCHITECTURE.md §5): what `meshsim calibrate` runs
// on the backend, through the same executor as any validation, so the timings include what a real
// run pays (stream threads, dispatch, the backend's communication calls). One Program per category;
// every benchmark point is repeated (runs + 1 times, the first a warm-up) in rounds that run every
// point of the category once, rotating which comes first: the repetitions of a point are
// interleaved with the others', not back to back, so a slow moment of the machine spreads over
// many points instead of biasing one.
//
//   compute       every rank, stream "compute": GEMMs over a grid of shapes (calibration dtype,
//                 plus one shape per other dtype for its peak), attention blocks forward and
//                 backward over block sizes (no mask and causal), and the memory-bound kernels
//                 (copy, accumulate, elementwise, loss, optimizer update, log-sum-exp merge) over
//                 sizes; all ranks at once, as in a real step
//   p2p           ping-pong between ranks 2j and 2j+1 over sizes (one way = round trip / 2)
//   collective    all-reduce, all-gather, reduce-scatter, all-to-all over sizes, for each group
//                 size g >= 2 dividing the world (groups of g consecutive ranks, all at once)
//   interference  a GEMM on stream "compute" while stream "comm" exchanges with the partner rank:
//                 the GEMMs that ran entirely under communication, against the same GEMM alone
#include <cstdint>
#include <string>
#include <vector>

#include "sim/program.hpp"

namespace meshsim {

enum class BenchCategory : std::uint8_t { compute, p2p, collective, interference };
std::string_view to_string(BenchCategory c);

struct BenchPoint {
  std::string name;  // "gemm bf16 m512 n512 k512", "all_reduce g2 1048576 B", ...
  BenchCategory category = BenchCategory::compute;
  OpBody body;            // what one repetition runs (rank 0's op of it for comm points)
  int group_size = 1;     // collectives: ranks per group; p2p: 2
  std::vector<OpId> ops;  // every repetition on every rank, in round order (warm-up first)
};

struct CalibrationProgram {
  BenchCategory category = BenchCategory::compute;
  Program program;
  std::vector<BenchPoint> points;
};

struct CalibrationOptions {
  int world_size = 1;
  int ranks_per_node = 1;
  DType dtype = DType::bf16;  // the compute grid's dtype (the validations' default)
  bool quick = false;         // a smaller grid, for tests and smoke runs
  int runs = 5;               // timed repetitions per point (after one warm-up)
};

// The categories that apply to the world (no p2p, collective or interference on one rank).
std::vector<CalibrationProgram> calibration_programs(const CalibrationOptions& options);

}  // namespace meshsim
