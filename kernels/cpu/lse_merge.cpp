// lse_merge: per (batch, head, row), lse_merge_weights() of the two log-sum-exps, then
// out_acc = weight_acc * out_acc + weight_block * block_out.
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/attention_rows.hpp"

namespace meshsim::kernels::cpu {
namespace {

template <class M>
void merge_in(const detail::Rows& rows, const HeadsView& block_out, const LseView& block_lse,
              const HeadsView& out_acc, const LseView& lse_acc) {
  const std::int64_t d = out_acc.head_dim;
  std::vector<M> acc(static_cast<std::size_t>(d)), blk(static_cast<std::size_t>(d));
  for (std::int64_t b = 0; b < out_acc.batch; ++b) {
    for (std::int64_t h = 0; h < out_acc.heads; ++h) {
      for (std::int64_t i = 0; i < rows.size(); ++i) {
        const std::int64_t r = rows.row[static_cast<std::size_t>(i)];
        const LseMerge<M> w = lse_merge_weights(detail::load_lse<M>(lse_acc, b, h, r),
                                                detail::load_lse<M>(block_lse, b, h, r));
        detail::gather(out_acc, b, h, rows, i, 1, acc.data());
        detail::gather(block_out, b, h, rows, i, 1, blk.data());
        for (std::int64_t c = 0; c < d; ++c) {
          const auto uc = static_cast<std::size_t>(c);
          acc[uc] = w.weight_a * acc[uc] + w.weight_b * blk[uc];
        }
        detail::scatter(acc.data(), out_acc, b, h, rows, i, 1, Store::overwrite);
        detail::store_lse(lse_acc, b, h, r, w.lse);
      }
    }
  }
}

}  // namespace

void lse_merge(std::span<const RowSpan> rows, const HeadsView& block_out, const LseView& block_lse,
               const HeadsView& out_acc, const LseView& lse_acc) {
  detail::check_same_extents(block_out, out_acc, "block_out");
  detail::check_lse(lse_acc, out_acc, "lse_acc");
  detail::check_lse(block_lse, out_acc, "block_lse");
  const detail::Rows r = detail::expand_rows(rows, out_acc.tokens, "merged");
  if (math_in_double(block_out.type, block_lse.type, out_acc.type, lse_acc.type)) {
    merge_in<double>(r, block_out, block_lse, out_acc, lse_acc);
  } else {
    merge_in<float>(r, block_out, block_lse, out_acc, lse_acc);
  }
}

}  // namespace meshsim::kernels::cpu
