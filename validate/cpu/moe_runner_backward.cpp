// The backward of validate/cpu/moe_runner: unpermute bwd, combine bwd (the output gradient
// dispatched), expert dgrad and wgrad, dispatch bwd (the input gradient combined), permute bwd,
// router top-k bwd, router dgrad and wgrad.
#include <numeric>

#include "kernels/cpu/moe.hpp"
#include "validate/cpu/moe_layer_state.hpp"

namespace meshsim::moe_detail {

namespace {

namespace kc = kernels::cpu;

// The gradient of each copy's expert output (its router weight times its token's dy) and of
// each router weight (<dy, expert output>), in permuted order.
template <class T>
std::vector<T> unpermute_backward(LayerState<T>& s, std::vector<T>& dweight) {
  std::vector<T> dop(s.oc.size());
  s.phase("unpermute bwd", [&] {
    kc::gather_rows<T>(s.dy, s.h, s.token_of, dop);
    for (std::size_t p = 0; p < s.token_of.size(); ++p) {
      for (std::int64_t j = 0; j < s.h; ++j) dop[p * at(s.h) + at(j)] *= s.weight_of[p];
    }
    std::vector<T> by_position(s.token_of.size());
    kc::row_dots<T>(s.oc, s.h, s.token_of, s.dy, by_position);
    dweight.assign(s.routed.size(), T(0));  // a dropped copy's weight: no gradient
    for (std::size_t p = 0; p < s.order.size(); ++p) dweight[at(s.order[p])] = by_position[p];
  });
  return dop;
}

// The output gradient to the experts, as the forward dispatched the tokens.
template <class T>
std::vector<T> combine_backward(LayerState<T>& s, const std::vector<T>& dop) {
  std::vector<T> dor(
      at(std::accumulate(s.recv_elems.begin(), s.recv_elems.end(), std::int64_t{0})));
  s.phase("combine bwd all-to-all", [&] {
    s.comm.all_to_all_v(MoeGroup::ep, dop.data(), s.send_elems, dor.data(), s.recv_elems,
                        s.dtype());
  });
  std::vector<T> dog(s.xe.size());
  s.phase("combine bwd etp all-gather", [&] {
    s.comm.all_gather_v(MoeGroup::etp, dor.data(), dog.data(), s.member_elems, s.dtype());
  });
  std::vector<T> doe(s.xe.size());
  kc::gather_rows<T>(dog, s.h, s.sorted_rows, doe);
  return doe;
}

// Per local expert: da = do W_down, dW_down = do^T a, dh = SwiGLU'(h, da), dW_up = dh^T x,
// dx = dh W_up (a partial sum over ETP); dx back in gathered order.
template <class T>
std::vector<T> experts_backward(LayerState<T>& s, const std::vector<T>& doe) {
  std::vector<T> dxg(s.xe.size());
  s.phase("experts bwd", [&] {
    const std::int64_t u = 2 * s.fl;
    std::vector<T> dw_up(s.w_up.size(), T(0)), dw_down(s.w_down.size(), T(0));
    std::vector<T> dxe(s.xe.size());
    std::int64_t first = 0;
    for (int j = 0; j < s.el; ++j) {
      const std::int64_t n = s.expert_rows[at(j)];
      const T* d_out = doe.data() + first * s.h;
      const T* w_down = s.w_down.data() + j * s.h * s.fl;
      const T* w_up = s.w_up.data() + j * u * s.h;
      std::vector<T> da(at(n * s.fl)), dh(at(n * u));
      gemm(d_out, false, n, s.h, w_down, false, s.h, s.fl, da.data(), false);
      gemm(d_out, true, n, s.h, s.act.data() + first * s.fl, false, n, s.fl,
           dw_down.data() + j * s.h * s.fl, false);
      kc::swiglu_backward<T>(std::span<const T>(s.hid.data() + first * u, at(n * u)), da, n, s.fl,
                             dh);
      gemm(dh.data(), true, n, u, s.xe.data() + first * s.h, false, n, s.h,
           dw_up.data() + j * u * s.h, false);
      gemm(dh.data(), false, n, u, w_up, false, u, s.h, dxe.data() + first * s.h, false);
      first += n;
    }
    kc::scatter_rows<T>(dxe, s.h, s.sorted_rows, dxg);
    s.result.dw_up = widen(dw_up);
    s.result.dw_down = widen(dw_down);
  });
  return dxg;
}

// The input gradient back to the tokens' ranks, as the forward combined the outputs.
template <class T>
std::vector<T> dispatch_backward(LayerState<T>& s, const std::vector<T>& dxg) {
  std::vector<T> dxr(at(s.member_elems[at(s.me.etp_index)]));
  s.phase("dispatch bwd etp reduce-scatter", [&] {
    s.comm.reduce_scatter_v(MoeGroup::etp, dxg.data(), dxr.data(), s.member_elems, s.dtype());
  });
  std::vector<T> dxp(s.oc.size());
  s.phase("dispatch bwd all-to-all", [&] {
    s.comm.all_to_all_v(MoeGroup::ep, dxr.data(), s.recv_elems, dxp.data(), s.send_elems,
                        s.dtype());
  });
  return dxp;
}

template <class T>
void router_backward(LayerState<T>& s, const std::vector<T>& dxp, const std::vector<T>& dweight) {
  std::vector<T> dx(s.x.size(), T(0));
  s.phase("permute bwd", [&] { kc::scatter_add_rows<T>(dxp, s.h, s.token_of, {}, dx); });
  std::vector<T> dlogits(at(s.tl * s.e));
  s.phase("router topk bwd", [&] {
    kc::router_topk_backward<T>(s.routed, s.weight, dweight, s.tl, s.e, s.k, dlogits);
  });
  s.phase("router dgrad", [&] {
    gemm(dlogits.data(), false, s.tl, std::int64_t{s.e}, s.w_router.data(), false,
         std::int64_t{s.e}, s.h, dx.data(), true);
  });
  std::vector<T> dw_router(s.w_router.size());
  s.phase("router wgrad", [&] {
    gemm(dlogits.data(), true, s.tl, std::int64_t{s.e}, s.x.data(), false, s.tl, s.h,
         dw_router.data(), false);
  });
  s.result.dx = widen(dx);
  s.result.dw_router = widen(dw_router);
}

}  // namespace

template <class T>
void run_backward(LayerState<T>& s) {
  std::vector<T> dweight;
  const std::vector<T> dop = unpermute_backward(s, dweight);
  const std::vector<T> dxg = experts_backward(s, combine_backward(s, dop));
  router_backward(s, dispatch_backward(s, dxg), dweight);
}

template void run_backward<float>(LayerState<float>&);
template void run_backward<double>(LayerState<double>&);

}  // namespace meshsim::moe_detail
