#include "kernels/cpu/moe.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/elementwise_math.hpp"
#include "kernels/views.hpp"

namespace meshsim::kernels::cpu {

namespace {

std::size_t at(std::int64_t i) {
  return static_cast<std::size_t>(i);
}

void check_rows(std::span<const std::int64_t> rows, std::int64_t limit) {
  for (const std::int64_t r : rows) {
    MESHSIM_KERNEL_CHECK(r >= 0 && r < limit, "row " + std::to_string(r) + " outside [0, " +
                                                  std::to_string(limit) + ")");
  }
}

}  // namespace

template <class T>
void router_topk(std::span<const T> logits, std::span<const T> bias, std::int64_t tokens,
                 int experts, int k, std::span<std::int32_t> expert, std::span<T> weight) {
  MESHSIM_KERNEL_CHECK(k >= 1 && k <= experts, "top-k outside [1, experts]");
  MESHSIM_KERNEL_CHECK(logits.size() == at(tokens * experts), "logits are not [tokens, experts]");
  MESHSIM_KERNEL_CHECK(bias.empty() || bias.size() == at(experts), "bias is not [experts]");
  MESHSIM_KERNEL_CHECK(expert.size() == at(tokens * k) && weight.size() == at(tokens * k),
                       "expert / weight are not [tokens, k]");
  std::vector<T> row(at(experts));
  std::vector<bool> taken(at(experts));
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int e = 0; e < experts; ++e) {
      row[at(e)] = logits[at(t * experts + e)] + (bias.empty() ? T(0) : bias[at(e)]);
      taken[at(e)] = false;
    }
    T* w = weight.data() + t * k;
    std::int32_t* x = expert.data() + t * k;
    for (int s = 0; s < k; ++s) {  // selection: k passes, strict > keeps the lower index on ties
      int best = -1;
      for (int e = 0; e < experts; ++e) {
        if (!taken[at(e)] && (best < 0 || row[at(e)] > row[at(best)])) best = e;
      }
      taken[at(best)] = true;
      x[s] = best;
      w[s] = row[at(best)];
    }
    const T top = w[0];  // the largest: a stable softmax
    T sum = 0;
    for (int s = 0; s < k; ++s) sum += (w[s] = std::exp(w[s] - top));
    for (int s = 0; s < k; ++s) w[s] /= sum;
  }
}

template <class T>
void router_topk_backward(std::span<const std::int32_t> expert, std::span<const T> weight,
                          std::span<const T> dweight, std::int64_t tokens, int experts, int k,
                          std::span<T> dlogits) {
  MESHSIM_KERNEL_CHECK(dlogits.size() == at(tokens * experts), "dlogits are not [tokens, experts]");
  MESHSIM_KERNEL_CHECK(expert.size() == at(tokens * k) && weight.size() == at(tokens * k) &&
                           dweight.size() == at(tokens * k),
                       "expert / weight / dweight are not [tokens, k]");
  for (std::int64_t t = 0; t < tokens; ++t) {
    T dot = 0;
    for (int s = 0; s < k; ++s) dot += weight[at(t * k + s)] * dweight[at(t * k + s)];
    T* d = dlogits.data() + t * experts;
    for (int e = 0; e < experts; ++e) d[e] = 0;
    for (int s = 0; s < k; ++s) {
      const std::size_t c = at(t * k + s);
      MESHSIM_KERNEL_CHECK(expert[c] >= 0 && expert[c] < experts, "expert index out of range");
      d[expert[c]] = weight[c] * (dweight[c] - dot);
    }
  }
}

template <class T>
std::int64_t drop_over_capacity(std::span<std::int32_t> expert, std::span<const T> weight,
                                int experts, std::int64_t capacity) {
  MESHSIM_KERNEL_CHECK(weight.size() == expert.size(), "weight is not one entry per token copy");
  MESHSIM_KERNEL_CHECK(capacity >= 0, "negative capacity");
  std::int64_t dropped = 0;
  for (int e = 0; e < experts; ++e) {
    std::vector<std::size_t> mine;
    for (std::size_t c = 0; c < expert.size(); ++c) {
      if (expert[c] == e) mine.push_back(c);
    }
    if (static_cast<std::int64_t>(mine.size()) <= capacity) continue;
    std::stable_sort(mine.begin(), mine.end(),
                     [&](std::size_t a, std::size_t b) { return weight[a] > weight[b]; });
    for (std::size_t i = at(capacity); i < mine.size(); ++i) {
      expert[mine[i]] = -1;
      ++dropped;
    }
  }
  return dropped;
}

std::int64_t permutation_by_expert(std::span<const std::int32_t> expert, int experts,
                                   std::span<std::int64_t> order, std::span<std::int64_t> counts) {
  MESHSIM_KERNEL_CHECK(order.size() == expert.size(), "order is not one entry per token copy");
  MESHSIM_KERNEL_CHECK(counts.size() == at(experts), "counts are not [experts]");
  for (auto& n : counts) n = 0;
  std::int64_t kept = 0;
  for (const std::int32_t e : expert) {
    MESHSIM_KERNEL_CHECK(e >= -1 && e < experts, "expert index out of range");
    if (e < 0) continue;
    ++counts[at(e)];
    ++kept;
  }
  std::vector<std::int64_t> next(at(experts), 0);
  for (int e = 1; e < experts; ++e) next[at(e)] = next[at(e - 1)] + counts[at(e - 1)];
  for (std::size_t c = 0; c < expert.size(); ++c) {
    if (expert[c] >= 0) order[at(next[at(expert[c])]++)] = static_cast<std::int64_t>(c);
  }
  return kept;
}

template <class T>
void gather_rows(std::span<const T> src, std::int64_t cols, std::span<const std::int64_t> rows,
                 std::span<T> dst) {
  MESHSIM_KERNEL_CHECK(dst.size() == rows.size() * at(cols), "dst is not [rows, cols]");
  check_rows(rows, static_cast<std::int64_t>(src.size()) / cols);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const T* s = src.data() + rows[i] * cols;
    T* d = dst.data() + static_cast<std::int64_t>(i) * cols;
    for (std::int64_t j = 0; j < cols; ++j) d[j] = s[j];
  }
}

template <class T>
void scatter_rows(std::span<const T> src, std::int64_t cols, std::span<const std::int64_t> rows,
                  std::span<T> dst) {
  MESHSIM_KERNEL_CHECK(src.size() == rows.size() * at(cols), "src is not [rows, cols]");
  check_rows(rows, static_cast<std::int64_t>(dst.size()) / cols);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const T* s = src.data() + static_cast<std::int64_t>(i) * cols;
    T* d = dst.data() + rows[i] * cols;
    for (std::int64_t j = 0; j < cols; ++j) d[j] = s[j];
  }
}

template <class T>
void scatter_add_rows(std::span<const T> src, std::int64_t cols, std::span<const std::int64_t> rows,
                      std::span<const T> weight, std::span<T> dst) {
  MESHSIM_KERNEL_CHECK(src.size() == rows.size() * at(cols), "src is not [rows, cols]");
  MESHSIM_KERNEL_CHECK(weight.empty() || weight.size() == rows.size(), "weight is not [rows]");
  check_rows(rows, static_cast<std::int64_t>(dst.size()) / cols);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const T w = weight.empty() ? T(1) : weight[i];
    const T* s = src.data() + static_cast<std::int64_t>(i) * cols;
    T* d = dst.data() + rows[i] * cols;
    for (std::int64_t j = 0; j < cols; ++j) d[j] += w * s[j];
  }
}

template <class T>
void row_dots(std::span<const T> src, std::int64_t cols, std::span<const std::int64_t> rows,
              std::span<const T> other, std::span<T> dweight) {
  MESHSIM_KERNEL_CHECK(src.size() == rows.size() * at(cols), "src is not [rows, cols]");
  MESHSIM_KERNEL_CHECK(dweight.size() == rows.size(), "dweight is not [rows]");
  check_rows(rows, static_cast<std::int64_t>(other.size()) / cols);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const T* s = src.data() + static_cast<std::int64_t>(i) * cols;
    const T* o = other.data() + rows[i] * cols;
    T dot = 0;
    for (std::int64_t j = 0; j < cols; ++j) dot += s[j] * o[j];
    dweight[i] = dot;
  }
}

template <class T>
void swiglu_forward(std::span<const T> h, std::int64_t n, std::int64_t f, std::span<T> a) {
  MESHSIM_KERNEL_CHECK(h.size() == at(n * 2 * f) && a.size() == at(n * f),
                       "h is not [n, 2f] or a not [n, f]");
  for (std::int64_t i = 0; i < n; ++i) {
    const T* row = h.data() + i * 2 * f;
    for (std::int64_t j = 0; j < f; ++j) {
      a[at(i * f + j)] = activation_value(Activation::silu, row[j]) * row[f + j];
    }
  }
}

template <class T>
void swiglu_backward(std::span<const T> h, std::span<const T> da, std::int64_t n, std::int64_t f,
                     std::span<T> dh) {
  MESHSIM_KERNEL_CHECK(h.size() == at(n * 2 * f) && dh.size() == h.size() && da.size() == at(n * f),
                       "h / dh are not [n, 2f] or da not [n, f]");
  for (std::int64_t i = 0; i < n; ++i) {
    const T* row = h.data() + i * 2 * f;
    T* d = dh.data() + i * 2 * f;
    for (std::int64_t j = 0; j < f; ++j) {
      const T g = row[j], u = row[f + j], grad = da[at(i * f + j)];
      d[j] = grad * u * activation_derivative(Activation::silu, g);
      d[f + j] = grad * activation_value(Activation::silu, g);
    }
  }
}

#define MESHSIM_MOE_KERNELS(T)                                                                     \
  template void router_topk<T>(std::span<const T>, std::span<const T>, std::int64_t, int, int,     \
                               std::span<std::int32_t>, std::span<T>);                             \
  template void router_topk_backward<T>(std::span<const std::int32_t>, std::span<const T>,         \
                                        std::span<const T>, std::int64_t, int, int, std::span<T>); \
  template void gather_rows<T>(std::span<const T>, std::int64_t, std::span<const std::int64_t>,    \
                               std::span<T>);                                                      \
  template void scatter_rows<T>(std::span<const T>, std::int64_t, std::span<const std::int64_t>,   \
                                std::span<T>);                                                     \
  template void scatter_add_rows<T>(std::span<const T>, std::int64_t,                              \
                                    std::span<const std::int64_t>, std::span<const T>,             \
                                    std::span<T>);                                                 \
  template std::int64_t drop_over_capacity<T>(std::span<std::int32_t>, std::span<const T>, int,    \
                                              std::int64_t);                                       \
  template void row_dots<T>(std::span<const T>, std::int64_t, std::span<const std::int64_t>,       \
                            std::span<const T>, std::span<T>);                                     \
  template void swiglu_forward<T>(std::span<const T>, std::int64_t, std::int64_t, std::span<T>);   \
  template void swiglu_backward<T>(std::span<const T>, std::span<const T>, std::int64_t,           \
                                   std::int64_t, std::span<T>);

MESHSIM_MOE_KERNELS(float)
MESHSIM_MOE_KERNELS(double)
#undef MESHSIM_MOE_KERNELS

}  // namespace meshsim::kernels::cpu
