#include "validate/check/pipeline_reference.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/elementwise_math.hpp"
#include "kernels/reference/gemm.hpp"
#include "validate/check/numerics.hpp"

namespace meshsim {
namespace {

kernels::Activation stage_activation() {
  static_assert(kPipelineActivation == ElementwiseFn::gelu, "the reference's activation");
  return kernels::Activation::gelu;
}

}  // namespace

// Per microbatch i, with h_0 = x[i] and S = stages x chunks global stages:
//   forward   pre_s = h_s W_s, h_{s+1} = gelu(pre_s);  y[i] = h_S;
//   backward  g_S = dout[i] (L = sum dout * y); for s = S-1 .. 0: dh = gelu'(pre_s) g_{s+1},
//             dW_s += h_s^T dh, g_s = dh W_s^T;  dx[i] = g_0.
std::map<std::string, std::vector<double>> pipeline_reference(
    const PipelineConfig& c, const std::vector<GlobalTensorData>& tensors) {
  namespace ref = kernels::reference;
  const kernels::Activation f = stage_activation();
  const std::int64_t t = c.tokens, h = c.hidden;
  const int stages = c.shape.stages * chunks_of(c.shape);
  const int m = c.shape.microbatches;
  const auto act = static_cast<std::size_t>(t * h);
  const auto weight = static_cast<std::size_t>(h * h);
  const std::span<const double> x = find_tensor(tensors, "x").values;
  const std::span<const double> w = find_tensor(tensors, "w").values;
  const std::span<const double> dout = find_tensor(tensors, "dout").values;
  std::vector<double> y(static_cast<std::size_t>(m) * act), dx(static_cast<std::size_t>(m) * act),
      dw(static_cast<std::size_t>(stages) * weight, 0.0);
  auto w_of = [&](int s) { return w.subspan(static_cast<std::size_t>(s) * weight, weight); };
  auto dw_of = [&](int s) {
    return std::span<double>(dw).subspan(static_cast<std::size_t>(s) * weight, weight);
  };
  // hs[s]: the input of stage s (hs[stages] the output); pres[s]: its pre-activation.
  std::vector<std::vector<double>> hs(static_cast<std::size_t>(stages) + 1,
                                      std::vector<double>(act));
  std::vector<std::vector<double>> pres(static_cast<std::size_t>(stages), std::vector<double>(act));
  std::vector<double> g(act), dh(act);
  for (int i = 0; i < m; ++i) {
    const std::size_t at = static_cast<std::size_t>(i) * act;
    const auto xi = x.subspan(at, act);
    hs[0].assign(xi.begin(), xi.end());
    for (int s = 0; s < stages; ++s) {
      auto& pre = pres[static_cast<std::size_t>(s)];
      ref::gemm(t, h, h, false, false, 1.0, hs[static_cast<std::size_t>(s)], w_of(s), 0.0, pre);
      auto& next = hs[static_cast<std::size_t>(s) + 1];
      for (std::size_t e = 0; e < act; ++e) next[e] = kernels::activation_value(f, pre[e]);
    }
    std::copy(hs.back().begin(), hs.back().end(), y.begin() + static_cast<std::ptrdiff_t>(at));
    const auto douti = dout.subspan(at, act);
    g.assign(douti.begin(), douti.end());
    for (int s = stages - 1; s >= 0; --s) {
      const auto& pre = pres[static_cast<std::size_t>(s)];
      for (std::size_t e = 0; e < act; ++e) {
        dh[e] = kernels::activation_derivative(f, pre[e]) * g[e];
      }
      // dX = dh W^T into g, dW_s += h_s^T dh (W [in, out]).
      ref::linear_backward(t, h, h, false, hs[static_cast<std::size_t>(s)], w_of(s), dh, g,
                           dw_of(s));
    }
    std::copy(g.begin(), g.end(), dx.begin() + static_cast<std::ptrdiff_t>(at));
  }
  std::map<std::string, std::vector<double>> r;
  r["y"] = std::move(y);
  r["dx"] = std::move(dx);
  r["dw"] = std::move(dw);
  return r;
}

}  // namespace meshsim
