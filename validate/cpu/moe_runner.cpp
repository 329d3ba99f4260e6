#include "validate/cpu/moe_runner.hpp"

#include "kernels/cpu/moe.hpp"
#include "sim/error.hpp"
#include "validate/cpu/moe_layer_state.hpp"

namespace meshsim {

namespace moe_detail {

template <class T>
LayerState<T>::LayerState(const MoeLayerConfig& config, MoeComm& communication, MoeFault injected,
                          std::chrono::steady_clock::time_point start, int rank)
    : c(config),
      comm(communication),
      fault(injected),
      origin(start),
      me(moe_rank_coords(config, rank)),
      tl(config.local_tokens()),
      h(config.hidden),
      fl(config.local_ffn()),
      e(config.experts),
      el(config.local_experts()),
      k(config.top_k),
      ep(config.ep),
      etp(config.etp) {}

template <class T>
void LayerState<T>::phase(const char* name, const std::function<void()>& body) {
  const auto ns = [&] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                origin)
        .count();
  };
  const std::int64_t start = ns();
  body();
  result.phases.push_back({name, start, ns()});
}

template <class T>
DType LayerState<T>::dtype() {
  return sizeof(T) == 8 ? DType::fp64 : DType::fp32;
}

template <class T>
void gemm(const T* a, bool ta, std::int64_t a_rows, std::int64_t a_cols, const T* b, bool tb,
          std::int64_t b_rows, std::int64_t b_cols, T* c, bool accumulate) {
  const std::int64_t m = ta ? a_cols : a_rows, n = tb ? b_rows : b_cols;
  const std::int64_t kk = ta ? a_rows : a_cols;
  if (m == 0 || n == 0) return;
  const auto type = sizeof(T) == 8 ? kernels::ScalarType::fp64 : kernels::ScalarType::fp32;
  const auto view = [&](const T* p, std::int64_t r, std::int64_t cols) {
    return kernels::matrix_view(const_cast<T*>(p), type, r, cols);
  };
  if (kk == 0) {
    if (!accumulate) std::fill(c, c + m * n, T(0));
    return;
  }
  using kernels::cpu::Transpose;
  kernels::cpu::gemm(view(a, a_rows, a_cols), ta ? Transpose::yes : Transpose::no,
                     view(b, b_rows, b_cols), tb ? Transpose::yes : Transpose::no, view(c, m, n),
                     1.0, accumulate ? 1.0 : 0.0);
}

std::vector<std::int64_t> expert_major_rows(std::span<const std::int64_t> counts, int etp, int ep,
                                            int el, std::vector<std::int64_t>& per_expert) {
  MESHSIM_CHECK(counts.size() == static_cast<std::size_t>(etp * ep * el),
                "counts are not [etp, ep, el]");
  std::vector<std::int64_t> first(counts.size(), 0);  // first row of each chunk
  std::int64_t row = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    first[i] = row;
    row += counts[i];
  }
  std::vector<std::int64_t> out;
  per_expert.assign(static_cast<std::size_t>(el), 0);
  for (int j = 0; j < el; ++j) {
    for (int i = 0; i < etp; ++i) {
      for (int p = 0; p < ep; ++p) {
        const std::size_t chunk = static_cast<std::size_t>((i * ep + p) * el + j);
        for (std::int64_t r = 0; r < counts[chunk]; ++r) out.push_back(first[chunk] + r);
        per_expert[static_cast<std::size_t>(j)] += counts[chunk];
      }
    }
  }
  return out;
}

template void gemm<float>(const float*, bool, std::int64_t, std::int64_t, const float*, bool,
                          std::int64_t, std::int64_t, float*, bool);
template void gemm<double>(const double*, bool, std::int64_t, std::int64_t, const double*, bool,
                           std::int64_t, std::int64_t, double*, bool);
template struct LayerState<float>;
template struct LayerState<double>;

}  // namespace moe_detail

std::optional<MoeFault> parse_moe_fault(std::string_view s) {
  if (s == "none") return MoeFault::none;
  if (s == "combine-weights") return MoeFault::combine_weights;
  return std::nullopt;
}

namespace {

using moe_detail::LayerState;

template <class T>
std::vector<T> shard(const MoeLayerConfig& c, std::uint64_t seed, std::string_view name, int rank) {
  std::vector<T> out;
  for (const std::int64_t i : moe_shard_indices(c, name, rank)) {
    out.push_back(static_cast<T>(moe_input_value(c, seed, name, i)));
  }
  return out;
}

template <class T>
MoeRankResult run_typed(const MoeLayerConfig& c, std::uint64_t seed, int rank, MoeComm& comm,
                        MoeFault fault, std::chrono::steady_clock::time_point origin) {
  LayerState<T> s(c, comm, fault, origin, rank);
  MESHSIM_CHECK(comm.group_size(MoeGroup::ep) == c.ep && comm.group_size(MoeGroup::etp) == c.etp,
                "the MoE groups do not match ep and etp");
  s.x = shard<T>(c, seed, "x", rank);
  s.w_router = shard<T>(c, seed, "w_router", rank);
  for (const double b : routing_bias(c)) s.bias.push_back(static_cast<T>(b));
  s.w_up = shard<T>(c, seed, "w_up", rank);
  s.w_down = shard<T>(c, seed, "w_down", rank);
  if (c.backward) s.dy = shard<T>(c, seed, "dy", rank);
  moe_detail::run_forward(s);
  if (c.backward) moe_detail::run_backward(s);
  return std::move(s.result);
}

}  // namespace

MoeRankResult run_moe_layer(const MoeLayerConfig& config, std::uint64_t seed, int rank,
                            MoeComm& comm, MoeFault fault,
                            std::chrono::steady_clock::time_point origin) {
  check_moe_layer_config(config);
  // Several ranks share the machine's cores: one BLAS thread per call, as the CPU kernel runner.
  kernels::cpu::set_blas_threads(1);
  return config.dtype == DType::fp64 ? run_typed<double>(config, seed, rank, comm, fault, origin)
                                     : run_typed<float>(config, seed, rank, comm, fault, origin);
}

}  // namespace meshsim
