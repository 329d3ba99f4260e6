// The numerics heart of the validate mode, without MPI: ring attention assembled from the CPU
// kernels, one rank after another, equals full attention computed in float64.
//
// Each rank r holds its tokens in local order (ring: positions [r c, (r+1) c); zigzag: chunk r
// then chunk 2N-1-r of 2N chunks). At step i it computes the block of ARCHITECTURE.md §4.1 against
// the K/V of rank s = (r - i) mod N (the buffer it would have received, or rank s's part of an
// all-gathered buffer), merges the block into fp32 accumulators by log-sum-exp, and casts the
// output. The backward runs each block with the final out and lse, accumulates dQ locally and
// dK/dV into rank s's fp32 accumulator (what the dK/dV ring delivers), and casts. Reassembled in
// sequence order, out, lse, dq, dk and dv must equal reference::full_attention.
#include <doctest/doctest.h>

#include <initializer_list>

#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/vector_ops.hpp"
#include "kernels/reference/attention.hpp"
#include "tests/kernels/kernel_test_util.hpp"

using namespace meshsim::kernels;
using namespace meshsim::kernels::cpu;
using namespace meshsim::kernels::test;

namespace {

enum class Layout { ring, zigzag };
enum class KvSource { received, allgathered };

struct RingCase {
  int ranks;
  std::int64_t seq, batch, heads_q, heads_kv, head_dim;
  Layout layout;
  Mask mask;
  ScalarType dtype;  // q, k, v, dout, out, dq, dk, dv; accumulators and lse are fp32
  KvSource kv;
};

std::vector<PositionRange> rank_tokens(const RingCase& c, int r) {
  const std::int64_t tokens = c.seq / c.ranks;
  if (c.layout == Layout::ring) return {{r * tokens, (r + 1) * tokens}};
  const std::int64_t h = tokens / 2, tail = 2 * c.ranks - 1 - r;
  return {{r * h, (r + 1) * h}, {tail * h, (tail + 1) * h}};
}

// What rank r computes at step i (ARCHITECTURE.md §4.1; the ring attention builder's blocks).
struct Block {
  bool computed = false;
  Mask mask = Mask::none;
  std::vector<PositionRange> q, k;
};

Block block_of(const RingCase& c, int r, int i) {
  const int s = ((r - i) % c.ranks + c.ranks) % c.ranks;
  const auto mine = rank_tokens(c, r), theirs = rank_tokens(c, s);
  if (c.mask == Mask::none) return {true, Mask::none, mine, theirs};
  if (i == 0) return {true, Mask::causal, mine, mine};
  if (c.layout == Layout::ring) return i <= r ? Block{true, Mask::none, mine, theirs} : Block{};
  if (i <= r) return {true, Mask::none, mine, {theirs.front()}};
  return {true, Mask::none, {mine.back()}, theirs};
}

// Copies rows between a sequence-order tensor [b, S, heads, d] (float64) and a rank's local
// tensor [b, c, heads, d] whose rows hold `layout`.
void to_local(const std::vector<double>& global, std::int64_t seq, std::int64_t width,
              std::int64_t batch, const std::vector<PositionRange>& layout, std::int64_t c,
              std::vector<double>& local) {
  for (std::int64_t b = 0; b < batch; ++b) {
    std::int64_t row = 0;
    for (const PositionRange& p : layout) {
      for (std::int64_t pos = p.begin; pos < p.end; ++pos, ++row) {
        for (std::int64_t x = 0; x < width; ++x) {
          local[static_cast<std::size_t>((b * c + row) * width + x)] =
              global[static_cast<std::size_t>((b * seq + pos) * width + x)];
        }
      }
    }
  }
}

void to_global(const std::vector<double>& local, std::int64_t seq, std::int64_t width,
               std::int64_t batch, const std::vector<PositionRange>& layout, std::int64_t c,
               std::vector<double>& global) {
  for (std::int64_t b = 0; b < batch; ++b) {
    std::int64_t row = 0;
    for (const PositionRange& p : layout) {
      for (std::int64_t pos = p.begin; pos < p.end; ++pos, ++row) {
        for (std::int64_t x = 0; x < width; ++x) {
          global[static_cast<std::size_t>((b * seq + pos) * width + x)] =
              local[static_cast<std::size_t>((b * c + row) * width + x)];
        }
      }
    }
  }
}

struct Rank {
  Buffer q, kv, dout, out, lse, out_acc, blk_out, blk_lse, dq_acc, blk_dq, blk_dkv, dkv_acc, dq,
      dkv;
};

void run_ring(const RingCase& c, std::uint64_t seed) {
  CAPTURE(c.layout == Layout::zigzag);
  CAPTURE(c.mask == Mask::causal);
  CAPTURE(to_string(c.dtype));
  CAPTURE(c.kv == KvSource::allgathered);
  CAPTURE(c.seq);
  const std::int64_t n = c.ranks, tok = c.seq / n, b = c.batch, d = c.head_dim;
  const std::int64_t qw = c.heads_q * d, kw = c.heads_kv * d;  // row widths
  const std::int64_t q_elems = b * tok * qw, kv_half = b * tok * kw;
  Rng rng(seed);
  // global inputs in sequence order, rounded to the storage type
  const std::vector<double> Q = random_buffer(c.dtype, b * c.seq * qw, rng, -2, 2).values();
  const std::vector<double> K = random_buffer(c.dtype, b * c.seq * kw, rng, -2, 2).values();
  const std::vector<double> V = random_buffer(c.dtype, b * c.seq * kw, rng, -2, 2).values();
  const std::vector<double> dO = random_buffer(c.dtype, b * c.seq * qw, rng).values();

  const auto F = ScalarType::fp32;
  std::vector<Rank> ranks;
  Buffer kv_all(c.dtype, n * 2 * kv_half);  // [N, 2, b, c, Hkv, d]: every rank's K/V in order
  for (int r = 0; r < n; ++r) {
    Rank R{Buffer(c.dtype, q_elems), Buffer(c.dtype, 2 * kv_half),   Buffer(c.dtype, q_elems),
           Buffer(c.dtype, q_elems), Buffer(F, b * c.heads_q * tok), Buffer(F, q_elems),
           Buffer(F, q_elems),       Buffer(F, b * c.heads_q * tok), Buffer(F, q_elems),
           Buffer(F, q_elems),       Buffer(F, 2 * kv_half),         Buffer(F, 2 * kv_half),
           Buffer(c.dtype, q_elems), Buffer(c.dtype, 2 * kv_half)};
    const auto layout = rank_tokens(c, r);
    std::vector<double> local(static_cast<std::size_t>(q_elems)),
        kv(static_cast<std::size_t>(2 * kv_half));
    to_local(Q, c.seq, qw, b, layout, tok, local);
    R.q.set(local);
    to_local(dO, c.seq, qw, b, layout, tok, local);
    R.dout.set(local);
    std::vector<double> half(static_cast<std::size_t>(kv_half));
    to_local(K, c.seq, kw, b, layout, tok, half);
    std::copy(half.begin(), half.end(), kv.begin());
    to_local(V, c.seq, kw, b, layout, tok, half);
    std::copy(half.begin(), half.end(), kv.begin() + kv_half);
    R.kv.set(kv);
    copy(R.kv.vector(), sub_vector(kv_all.vector(), r * 2 * kv_half, 2 * kv_half));
    ranks.push_back(std::move(R));
  }
  const auto qv = [&](Buffer& buf) {
    return heads_view(buf.data(), buf.type(), b, tok, c.heads_q, d);
  };
  const auto lv = [&](Buffer& buf) { return lse_view(buf.data(), buf.type(), b, c.heads_q, tok); };
  const auto kv_of = [&](int s) {
    void* base = c.kv == KvSource::received
                     ? ranks[static_cast<std::size_t>(s)].kv.data()
                     : element_address(kv_all.data(), c.dtype, s * 2 * kv_half);
    return kv_views(base, c.dtype, b, tok, c.heads_kv, d);
  };

  // forward
  for (int r = 0; r < n; ++r) {
    Rank& R = ranks[static_cast<std::size_t>(r)];
    bool first = true;
    for (int i = 0; i < n; ++i) {
      const Block blk = block_of(c, r, i);
      if (!blk.computed) continue;
      const int s = ((r - i) % c.ranks + c.ranks) % c.ranks;
      const AttentionBlock ab{blk.mask, locate_rows(blk.q, rank_tokens(c, r)),
                              locate_rows(blk.k, rank_tokens(c, s)), 0.0};
      const KvViews kv = kv_of(s);
      if (first) {
        attention_forward(ab, qv(R.q), kv.k, kv.v, qv(R.out_acc), lv(R.lse));
      } else {
        attention_forward(ab, qv(R.q), kv.k, kv.v, qv(R.blk_out), lv(R.blk_lse));
        lse_merge(ab.q, qv(R.blk_out), lv(R.blk_lse), qv(R.out_acc), lv(R.lse));
      }
      first = false;
    }
    copy(R.out_acc.vector(), R.out.vector());  // out cast
  }
  // backward
  for (int r = 0; r < n; ++r) {
    Rank& R = ranks[static_cast<std::size_t>(r)];
    for (int i = 0; i < n; ++i) {
      const Block blk = block_of(c, r, i);
      if (!blk.computed) continue;
      const int s = ((r - i) % c.ranks + c.ranks) % c.ranks;
      const AttentionBlock ab{blk.mask, locate_rows(blk.q, rank_tokens(c, r)),
                              locate_rows(blk.k, rank_tokens(c, s)), 0.0};
      const KvViews kv = kv_of(s);
      const KvViews dkv = kv_views(R.blk_dkv.data(), F, b, tok, c.heads_kv, d);
      attention_backward(ab, qv(R.q), kv.k, kv.v, qv(R.out), qv(R.dout), lv(R.lse), qv(R.blk_dq),
                         dkv.k, dkv.v, Store::overwrite);
      accumulate(R.blk_dq.vector(), R.dq_acc.vector());
      accumulate(R.blk_dkv.vector(), ranks[static_cast<std::size_t>(s)].dkv_acc.vector());
    }
  }
  // reassemble in sequence order
  std::vector<double> out(Q.size()), dq(Q.size()), dk(K.size()), dv(K.size());
  std::vector<double> lse(static_cast<std::size_t>(b * c.heads_q * c.seq));
  for (int r = 0; r < n; ++r) {
    Rank& R = ranks[static_cast<std::size_t>(r)];
    copy(R.dq_acc.vector(), R.dq.vector());    // dq cast
    copy(R.dkv_acc.vector(), R.dkv.vector());  // dkv cast
    const auto layout = rank_tokens(c, r);
    to_global(R.out.values(), c.seq, qw, b, layout, tok, out);
    to_global(R.dq.values(), c.seq, qw, b, layout, tok, dq);
    const std::vector<double> dkv = R.dkv.values();
    to_global(std::vector<double>(dkv.begin(), dkv.begin() + kv_half), c.seq, kw, b, layout, tok,
              dk);
    to_global(std::vector<double>(dkv.begin() + kv_half, dkv.end()), c.seq, kw, b, layout, tok, dv);
    // lse [b, H, c] -> [b, H, S]: treat (b, H) as the batch and one column as the row
    to_global(R.lse.values(), c.seq, 1, b * c.heads_q, layout, tok, lse);
  }
  const reference::FullAttention want = reference::full_attention(
      reference::AttentionDims{b, c.heads_q, c.heads_kv, d, c.mask, 0.0}, c.seq, Q, K, V, dO);
  // max |x - ref| / max |ref|: the storage type's tolerance (fp32 1e-5, bf16 1e-2); lse is fp32
  // computed from the same rounded inputs (1e-5 either way).
  const double tol = tolerance(c.dtype);
  CHECK(max_rel_error(out, want.out) <= tol);
  CHECK(max_rel_error(lse, want.lse) <= tolerance(ScalarType::fp32));
  CHECK(max_rel_error(dq, want.dq) <= tol);
  CHECK(max_rel_error(dk, want.dk) <= tol);
  CHECK(max_rel_error(dv, want.dv) <= tol);
}

}  // namespace

TEST_CASE("ring attention from blocks merged by log-sum-exp equals full attention (N = 4)") {
  // N = 4, S = 64 (c = 16, zigzag halves of 8), batch 2, 4 query heads on 2 K/V heads (GQA),
  // head_dim 16; ring and zigzag layouts, causal and not, fp32 and bf16 storage, K/V received
  // per step or sliced from an all-gathered buffer.
  std::uint64_t seed = 40;
  for (Layout layout : {Layout::ring, Layout::zigzag}) {
    for (Mask mask : {Mask::causal, Mask::none}) {
      for (ScalarType t : {ScalarType::fp32, ScalarType::bf16}) {
        for (KvSource kv : {KvSource::received, KvSource::allgathered}) {
          run_ring(RingCase{4, 64, 2, 4, 2, 16, layout, mask, t, kv}, ++seed);
        }
      }
    }
  }
}

TEST_CASE("ring attention over several kernel tiles per block equals full attention") {
  // S = 1024, N = 4: c = 256 tokens per rank (two 128-row query tiles; zigzag halves of 128),
  // multi-query attention (4 query heads on 1 K/V head), head_dim 16, fp32, tolerance 1e-5.
  run_ring(RingCase{4, 1024, 1, 4, 1, 16, Layout::zigzag, Mask::causal, ScalarType::fp32,
                    KvSource::received},
           90);
  run_ring(RingCase{4, 1024, 1, 2, 2, 16, Layout::ring, Mask::causal, ScalarType::fp32,
                    KvSource::allgathered},
           91);
}
