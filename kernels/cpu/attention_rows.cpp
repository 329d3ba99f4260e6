#include "kernels/cpu/attention_rows.hpp"

#include <string>

namespace meshsim::kernels::cpu {
namespace detail {

Rows expand_rows(std::span<const RowSpan> spans, std::int64_t tokens, const char* what) {
  Rows r;
  const std::int64_t n = total_rows(spans);
  r.row.reserve(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
  r.position.reserve(r.row.capacity());
  for (const RowSpan& s : spans) {
    MESHSIM_KERNEL_CHECK(s.count >= 0 && s.row >= 0 && s.row + s.count <= tokens,
                         std::string(what) + " rows [" + std::to_string(s.row) + ", " +
                             std::to_string(s.row + s.count) + ") outside a buffer of " +
                             std::to_string(tokens) + " tokens");
    for (std::int64_t i = 0; i < s.count; ++i) {
      r.row.push_back(s.row + i);
      r.position.push_back(s.position + i);
    }
  }
  return r;
}

double check_block(const AttentionBlock& block, const HeadsView& q, const HeadsView& k,
                   const HeadsView& v) {
  MESHSIM_KERNEL_CHECK(q.head_dim > 0 && k.head_dim == q.head_dim && v.head_dim == q.head_dim,
                       "q, k and v need the same positive head_dim");
  MESHSIM_KERNEL_CHECK(k.batch == q.batch && v.batch == q.batch, "q, k and v batch sizes differ");
  MESHSIM_KERNEL_CHECK(q.heads > 0 && k.heads > 0 && v.heads == k.heads,
                       "need heads_q > 0 and heads(k) = heads(v) > 0");
  MESHSIM_KERNEL_CHECK(v.tokens == k.tokens, "k and v token counts differ");
  MESHSIM_KERNEL_CHECK(block.scale >= 0.0, "negative softmax scale");
  return block.scale > 0.0 ? block.scale : 1.0 / std::sqrt(static_cast<double>(q.head_dim));
}

void check_same_extents(const HeadsView& t, const HeadsView& like, const char* what) {
  MESHSIM_KERNEL_CHECK(t.batch == like.batch && t.tokens == like.tokens && t.heads == like.heads &&
                           t.head_dim == like.head_dim,
                       std::string(what) + " does not have the extents of its operand");
}

void check_lse(const LseView& lse, const HeadsView& q, const char* what) {
  MESHSIM_KERNEL_CHECK(lse.batch == q.batch && lse.heads == q.heads && lse.tokens == q.tokens,
                       std::string(what) + " is not [batch, heads_q, tokens] of q");
}

}  // namespace detail

void zero(const HeadsView& t) {
  for (std::int64_t b = 0; b < t.batch; ++b) {
    for (std::int64_t r = 0; r < t.tokens; ++r) {
      for (std::int64_t h = 0; h < t.heads; ++h) {
        fill(element_address(t.data, t.type, detail::offset(t, b, r, h)), t.type, t.head_dim, 0.0);
      }
    }
  }
}

}  // namespace meshsim::kernels::cpu
