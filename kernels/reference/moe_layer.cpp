#include "kernels/reference/moe_layer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace meshsim::kernels::reference {

namespace {

std::size_t at(std::int64_t i) {
  return static_cast<std::size_t>(i);
}

double silu(double g) {
  return g / (1.0 + std::exp(-g));
}

double silu_grad(double g) {
  const double s = 1.0 / (1.0 + std::exp(-g));
  return s + g * s * (1.0 - s);
}

// The k selected experts of one token and their softmax weights.
void route(const MoeLayerDims& d, const double* xt, std::span<const double> w_router,
           std::span<const double> bias, std::vector<int>& chosen, std::vector<double>& w) {
  const int E = d.experts;
  std::vector<double> logit(at(E));
  for (int e = 0; e < E; ++e) {
    double s = bias.empty() ? 0.0 : bias[at(e)];
    for (std::int64_t j = 0; j < d.hidden; ++j) s += xt[j] * w_router[at(e * d.hidden + j)];
    logit[at(e)] = s;
  }
  chosen.clear();
  std::vector<bool> used(at(E), false);
  while (static_cast<int>(chosen.size()) < d.top_k) {
    int best = -1;
    for (int e = E - 1; e >= 0; --e) {  // scanning down, >= keeps the lowest index on ties
      if (!used[at(e)] && (best < 0 || logit[at(e)] >= logit[at(best)])) best = e;
    }
    used[at(best)] = true;
    chosen.push_back(best);
  }
  double m = logit[at(chosen[0])], z = 0;
  for (const int e : chosen) m = std::max(m, logit[at(e)]);
  w.assign(chosen.size(), 0.0);
  for (std::size_t s = 0; s < chosen.size(); ++s) z += (w[s] = std::exp(logit[at(chosen[s])] - m));
  for (double& v : w) v /= z;
}

// kept[t][s] for every token's selected experts under the capacity of each block.
std::vector<std::vector<bool>> capacity_mask(const MoeLayerDims& d,
                                             const std::vector<std::vector<int>>& chosen,
                                             const std::vector<std::vector<double>>& w,
                                             std::int64_t& dropped) {
  std::vector<std::vector<bool>> kept;
  for (const auto& c : chosen) kept.emplace_back(c.size(), true);
  if (d.capacity <= 0) return kept;
  const std::int64_t block = d.block_tokens > 0 ? d.block_tokens : d.tokens;
  struct Copy {
    double w;
    std::int64_t t;
    std::size_t s;
  };
  for (std::int64_t first = 0; first < d.tokens; first += block) {
    for (int e = 0; e < d.experts; ++e) {
      std::vector<Copy> copies;
      for (std::int64_t t = first; t < std::min(first + block, d.tokens); ++t) {
        for (std::size_t s = 0; s < chosen[at(t)].size(); ++s) {
          if (chosen[at(t)][s] == e) copies.push_back({w[at(t)][s], t, s});
        }
      }
      std::sort(copies.begin(), copies.end(), [](const Copy& a, const Copy& b) {
        if (a.w != b.w) return a.w > b.w;
        return a.t != b.t ? a.t < b.t : a.s < b.s;
      });
      for (std::size_t i = at(d.capacity); i < copies.size(); ++i) {
        kept[at(copies[i].t)][copies[i].s] = false;
        ++dropped;
      }
    }
  }
  return kept;
}

// One token copy through one expert: h = W_up x, a = silu(gate)·up, o = W_down a; y += w·o.
struct ExpertCopy {
  const MoeLayerDims& d;
  const double* x;     // [h]
  const double* up;    // [2f, h]
  const double* down;  // [h, f]
  double w;            // the router weight
  std::vector<double> hid = std::vector<double>(at(2 * d.ffn));
  std::vector<double> a = std::vector<double>(at(d.ffn));
  std::vector<double> o = std::vector<double>(at(d.hidden));

  void forward(double* y) {
    const std::int64_t h = d.hidden, f = d.ffn;
    for (std::int64_t r = 0; r < 2 * f; ++r) {
      double acc = 0;
      for (std::int64_t j = 0; j < h; ++j) acc += up[r * h + j] * x[j];
      hid[at(r)] = acc;
    }
    for (std::int64_t r = 0; r < f; ++r) a[at(r)] = silu(hid[at(r)]) * hid[at(f + r)];
    for (std::int64_t i = 0; i < h; ++i) {
      double acc = 0;
      for (std::int64_t r = 0; r < f; ++r) acc += down[i * f + r] * a[at(r)];
      o[at(i)] = acc;
      y[i] += w * acc;
    }
  }

  // Adds this copy's parts of dx, dW_up, dW_down from dy; returns dL/dw = <dy, o>.
  double backward(const double* dy, double* dx, double* gup, double* gdown) const {
    const std::int64_t h = d.hidden, f = d.ffn;
    double dw = 0;
    for (std::int64_t i = 0; i < h; ++i) dw += dy[i] * o[at(i)];
    // do = w dy; da = W_down^T do; dW_down += do a^T
    std::vector<double> da(at(f), 0.0), dh(at(2 * f));
    for (std::int64_t i = 0; i < h; ++i) {
      const double doi = w * dy[i];
      for (std::int64_t r = 0; r < f; ++r) {
        da[at(r)] += down[i * f + r] * doi;
        gdown[i * f + r] += doi * a[at(r)];
      }
    }
    for (std::int64_t r = 0; r < f; ++r) {
      dh[at(r)] = da[at(r)] * hid[at(f + r)] * silu_grad(hid[at(r)]);
      dh[at(f + r)] = da[at(r)] * silu(hid[at(r)]);
    }
    for (std::int64_t r = 0; r < 2 * f; ++r) {
      for (std::int64_t j = 0; j < h; ++j) {
        gup[r * h + j] += dh[at(r)] * x[j];
        dx[j] += up[r * h + j] * dh[at(r)];
      }
    }
    return dw;
  }
};

}  // namespace

MoeLayerTensors moe_layer(const MoeLayerDims& d, std::span<const double> x,
                          std::span<const double> w_router, std::span<const double> bias,
                          std::span<const double> w_up, std::span<const double> w_down,
                          std::span<const double> dy) {
  const std::int64_t T = d.tokens, h = d.hidden, f = d.ffn;
  const int E = d.experts;
  if (x.size() != at(T * h) || w_router.size() != at(E * h) || w_up.size() != at(E * 2 * f * h) ||
      w_down.size() != at(E * h * f) || (!dy.empty() && dy.size() != x.size())) {
    throw std::invalid_argument("moe_layer: tensor sizes do not match the dimensions");
  }
  const bool bwd = !dy.empty();
  MoeLayerTensors out;
  out.y.assign(at(T * h), 0.0);
  out.tokens_per_expert.assign(at(E), 0);
  if (bwd) {
    out.dx.assign(at(T * h), 0.0);
    out.dw_router.assign(at(E * h), 0.0);
    out.dw_up.assign(w_up.size(), 0.0);
    out.dw_down.assign(w_down.size(), 0.0);
  }
  std::vector<std::vector<int>> chosen_all(at(T));
  std::vector<std::vector<double>> w_all(at(T));
  for (std::int64_t t = 0; t < T; ++t) {
    route(d, x.data() + t * h, w_router, bias, chosen_all[at(t)], w_all[at(t)]);
  }
  const std::vector<std::vector<bool>> kept = capacity_mask(d, chosen_all, w_all, out.dropped);
  for (std::int64_t t = 0; t < T; ++t) {
    const double* xt = x.data() + t * h;
    const std::vector<int>& chosen = chosen_all[at(t)];
    const std::vector<double>& w = w_all[at(t)];
    std::vector<double> dw(chosen.size(), 0.0);
    for (std::size_t s = 0; s < chosen.size(); ++s) {
      if (!kept[at(t)][s]) continue;
      const std::int64_t e = chosen[s];
      ++out.tokens_per_expert[at(e)];
      ExpertCopy copy{d, xt, w_up.data() + e * 2 * f * h, w_down.data() + e * h * f, w[s]};
      copy.forward(out.y.data() + t * h);
      if (!bwd) continue;
      dw[s] = copy.backward(dy.data() + t * h, out.dx.data() + t * h,
                            out.dw_up.data() + e * 2 * f * h, out.dw_down.data() + e * h * f);
    }
    if (!bwd) continue;
    // Softmax over the selected logits: dlogit_s = w_s (dw_s - sum_r w_r dw_r).
    double mean = 0;
    for (std::size_t s = 0; s < chosen.size(); ++s) mean += w[s] * dw[s];
    for (std::size_t s = 0; s < chosen.size(); ++s) {
      const double g = w[s] * (dw[s] - mean);
      const std::int64_t e = chosen[s];
      for (std::int64_t j = 0; j < h; ++j) {
        out.dw_router[at(e * h + j)] += g * xt[j];
        out.dx[at(t * h + j)] += g * w_router[at(e * h + j)];
      }
    }
  }
  return out;
}

}  // namespace meshsim::kernels::reference
