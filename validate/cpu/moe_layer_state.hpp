#pragma once
// The state of one rank's MoE layer between its phases (validate/cpu/moe_runner.cpp: setup and
// forward; moe_runner_backward.cpp: backward). Internal to the runner.
#include <chrono>
#include <functional>
#include <span>
#include <vector>

#include "kernels/cpu/gemm.hpp"
#include "validate/cpu/moe_runner.hpp"

namespace meshsim::moe_detail {

inline std::size_t at(std::int64_t i) {
  return static_cast<std::size_t>(i);
}

template <class T>
struct LayerState {
  LayerState(const MoeLayerConfig& config, MoeComm& communication, MoeFault injected,
             std::chrono::steady_clock::time_point start, int rank);

  const MoeLayerConfig& c;
  MoeComm& comm;
  MoeFault fault;
  std::chrono::steady_clock::time_point origin;
  MoeRankCoords me;
  std::int64_t tl, h, fl;
  int e, el, k, ep, etp;
  std::vector<T> x, w_router, bias, w_up, w_down, dy;
  // Forward.
  std::vector<std::int32_t> routed;        // [tl·k]: the expert the router chose for t·k + s
  std::vector<std::int32_t> expert;        // [tl·k]: the expert it goes to (-1: dropped)
  std::vector<T> weight;                   // [tl·k]: its router weight
  std::vector<std::int64_t> order;         // permuted position -> copy
  std::vector<std::int64_t> token_of;      // permuted position -> token row
  std::vector<T> weight_of;                // permuted position -> router weight
  std::vector<std::int64_t> send_elems;    // [ep]: elements sent to each EP member
  std::vector<std::int64_t> recv_elems;    // [ep]: elements received from each
  std::vector<std::int64_t> member_elems;  // [etp]: each ETP member's received elements
  std::vector<std::int64_t> sorted_rows;   // expert-major row -> row of the gathered buffer
  std::vector<std::int64_t> expert_rows;   // [el]: rows per local expert (after the all-gather)
  std::int64_t gathered_rows = 0;
  std::vector<T> xe, hid, act;  // expert inputs, up-projections, SwiGLU outputs
  std::vector<T> oc;            // combined expert outputs, permuted order
  // Results.
  MoeRankResult result;

  // Runs `body` and records it as phase `name`.
  void phase(const char* name, const std::function<void()>& body);
  static DType dtype();
};

template <class T>
std::vector<double> widen(const std::vector<T>& v) {
  return {v.begin(), v.end()};
}

template <class T>
void run_forward(LayerState<T>& s);
template <class T>
void run_backward(LayerState<T>& s);

// C = op(A) op(B) (+ C with accumulate) on contiguous row-major arrays, skipped when empty.
template <class T>
void gemm(const T* a, bool ta, std::int64_t a_rows, std::int64_t a_cols, const T* b, bool tb,
          std::int64_t b_rows, std::int64_t b_cols, T* c, bool accumulate);

// Expert-major order of the rows an ETP all-gather assembled: member i, source p, local expert j
// holds counts[(i·ep + p)·el + j] rows; expert j's rows (over i, then p) first for j = 0, ....
std::vector<std::int64_t> expert_major_rows(std::span<const std::int64_t> counts, int etp, int ep,
                                            int el, std::vector<std::int64_t>& per_expert);

}  // namespace meshsim::moe_detail
