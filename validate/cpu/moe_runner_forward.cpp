// The forward of validate/cpu/moe_runner: router, permute, dispatch, experts, combine, unpermute.
#include <numeric>

#include "kernels/cpu/moe.hpp"
#include "validate/cpu/moe_layer_state.hpp"

namespace meshsim::moe_detail {

namespace {

namespace kc = kernels::cpu;

template <class T>
void route(LayerState<T>& s) {
  s.phase("router", [&] {
    std::vector<T> logits(at(s.tl * s.e));
    gemm(s.x.data(), false, s.tl, s.h, s.w_router.data(), true, std::int64_t{s.e}, s.h,
         logits.data(), false);
    s.routed.resize(at(s.tl * s.k));
    s.weight.resize(at(s.tl * s.k));
    kc::router_topk<T>(logits, s.bias, s.tl, s.e, s.k, s.routed, s.weight);
    s.result.routed_per_expert.assign(at(s.e), 0);
    for (const std::int32_t e : s.routed) ++s.result.routed_per_expert[at(e)];
    s.expert = s.routed;
    if (const std::int64_t capacity = expert_capacity(s.c); capacity > 0) {
      s.result.dropped = kc::drop_over_capacity<T>(s.expert, s.weight, s.e, capacity);
    }
  });
}

// The copies grouped by expert (so by destination EP rank), the counts per destination.
template <class T>
std::vector<T> permute(LayerState<T>& s, std::vector<std::int64_t>& per_expert) {
  std::vector<T> xp;
  s.phase("permute", [&] {
    s.order.resize(s.expert.size());
    per_expert.resize(at(s.e));
    s.order.resize(at(kc::permutation_by_expert(s.expert, s.e, s.order, per_expert)));
    s.token_of.clear();
    s.weight_of.clear();
    for (const std::int64_t copy : s.order) {
      s.token_of.push_back(copy / s.k);
      s.weight_of.push_back(s.weight[at(copy)]);
    }
    xp.resize(at(std::int64_t(s.order.size()) * s.h));
    kc::gather_rows<T>(s.x, s.h, s.token_of, xp);
  });
  s.result.tokens_per_expert = per_expert;
  return xp;
}

// Dispatch: counts per (destination, local expert) exchanged, the rows by all-to-all-v over EP,
// then (etp > 1) all-gathered over ETP; the gathered rows put in expert-major order.
template <class T>
void dispatch(LayerState<T>& s, const std::vector<T>& xp,
              const std::vector<std::int64_t>& per_expert) {
  std::vector<T> xr, xg;
  std::vector<std::int64_t> recv_counts;
  s.phase("dispatch all-to-all", [&] {
    recv_counts = s.comm.exchange_counts(MoeGroup::ep, per_expert, s.el);
    s.send_elems.assign(at(s.ep), 0);
    s.recv_elems.assign(at(s.ep), 0);
    for (int p = 0; p < s.ep; ++p) {
      for (int j = 0; j < s.el; ++j) {
        s.send_elems[at(p)] += per_expert[at(p * s.el + j)] * s.h;
        s.recv_elems[at(p)] += recv_counts[at(p * s.el + j)] * s.h;
      }
    }
    xr.resize(at(std::accumulate(s.recv_elems.begin(), s.recv_elems.end(), std::int64_t{0})));
    s.comm.all_to_all_v(MoeGroup::ep, xp.data(), s.send_elems, xr.data(), s.recv_elems, s.dtype());
  });
  std::vector<std::int64_t> gathered_counts;
  s.phase("dispatch etp all-gather", [&] {
    gathered_counts = s.comm.gather_counts(MoeGroup::etp, recv_counts);
    s.member_elems.assign(at(s.etp), 0);
    for (std::size_t i = 0; i < gathered_counts.size(); ++i) {
      s.member_elems[i / at(s.ep * s.el)] += gathered_counts[i] * s.h;
    }
    xg.resize(at(std::accumulate(s.member_elems.begin(), s.member_elems.end(), std::int64_t{0})));
    s.comm.all_gather_v(MoeGroup::etp, xr.data(), xg.data(), s.member_elems, s.dtype());
  });
  s.gathered_rows = std::int64_t(xg.size()) / s.h;
  s.sorted_rows = expert_major_rows(gathered_counts, s.etp, s.ep, s.el, s.expert_rows);
  s.xe.resize(xg.size());
  kc::gather_rows<T>(xg, s.h, s.sorted_rows, s.xe);
}

// Each local expert on its rows: h = x W_up^T [n, 2f/etp], a = SwiGLU(h), o = a W_down^T [n, h]
// (with etp > 1 a partial sum over the ETP group); the outputs back in gathered order.
template <class T>
std::vector<T> experts(LayerState<T>& s) {
  std::vector<T> og(s.xe.size());
  s.phase("experts", [&] {
    const std::int64_t rows = s.gathered_rows, u = 2 * s.fl;
    s.hid.assign(at(rows * u), T(0));
    s.act.assign(at(rows * s.fl), T(0));
    std::vector<T> oe(s.xe.size());
    std::int64_t first = 0;
    for (int j = 0; j < s.el; ++j) {
      const std::int64_t n = s.expert_rows[at(j)];
      T* hid = s.hid.data() + first * u;
      gemm(s.xe.data() + first * s.h, false, n, s.h, s.w_up.data() + j * u * s.h, true, u, s.h, hid,
           false);
      kc::swiglu_forward<T>(std::span<const T>(hid, at(n * u)), n, s.fl,
                            std::span<T>(s.act.data() + first * s.fl, at(n * s.fl)));
      gemm(s.act.data() + first * s.fl, false, n, s.fl, s.w_down.data() + j * s.h * s.fl, true, s.h,
           s.fl, oe.data() + first * s.h, false);
      first += n;
    }
    kc::scatter_rows<T>(oe, s.h, s.sorted_rows, og);
  });
  return og;
}

// Combine: partial outputs summed over ETP (each member keeps its own received rows), sent back
// over EP, then each copy added to its token with its router weight.
template <class T>
void combine(LayerState<T>& s, const std::vector<T>& og) {
  std::vector<T> orr;
  s.phase("combine etp reduce-scatter", [&] {
    orr.resize(at(s.member_elems[at(s.me.etp_index)]));
    s.comm.reduce_scatter_v(MoeGroup::etp, og.data(), orr.data(), s.member_elems, s.dtype());
  });
  s.phase("combine all-to-all", [&] {
    s.oc.resize(s.token_of.size() * at(s.h));
    s.comm.all_to_all_v(MoeGroup::ep, orr.data(), s.recv_elems, s.oc.data(), s.send_elems,
                        s.dtype());
  });
  std::vector<T> y(s.x.size(), T(0));
  s.phase("unpermute", [&] {
    const bool weighted = s.fault != MoeFault::combine_weights;
    kc::scatter_add_rows<T>(s.oc, s.h, s.token_of, weighted ? s.weight_of : std::vector<T>{}, y);
  });
  s.result.y = widen(y);
}

}  // namespace

template <class T>
void run_forward(LayerState<T>& s) {
  route(s);
  std::vector<std::int64_t> per_expert;
  const std::vector<T> xp = permute(s, per_expert);
  dispatch(s, xp, per_expert);
  combine(s, experts(s));
}

template void run_forward<float>(LayerState<float>&);
template void run_forward<double>(LayerState<double>&);

}  // namespace meshsim::moe_detail
