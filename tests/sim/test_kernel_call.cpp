#include <doctest/doctest.h>

#include "sim/kernel_call.hpp"

using namespace meshsim;

namespace {

// Brute-force count of the pairs a block computes, independent of attention_pairs().
std::int64_t brute_pairs(const AttentionShape& s) {
  std::int64_t n = 0;
  for (const auto& q : s.q) {
    for (std::int64_t i = q.begin; i < q.end; ++i) {
      for (const auto& k : s.k) {
        for (std::int64_t j = k.begin; j < k.end; ++j) {
          if (s.mask == MaskMode::none || j <= i) ++n;
        }
      }
    }
  }
  return n;
}

}  // namespace

TEST_CASE("causal pairs of a diagonal block: c(c+1)/2") {
  AttentionShape s{1, 1, 1, 64, MaskMode::causal, {{0, 8}}, {{0, 8}}};
  CHECK(attention_pairs(s) == 36);  // 8 * 9 / 2
  s.q = {{8, 16}};
  CHECK(attention_pairs(s) == 64);  // keys all before the queries: full 8 x 8
  s.q = {{0, 8}};
  s.k = {{8, 16}};
  CHECK(attention_pairs(s) == 0);  // keys all after the queries
}

TEST_CASE("attention_pairs equals brute force over overlapping ranges") {
  for (std::int64_t qb = 0; qb < 12; qb += 3) {
    for (std::int64_t qe = qb; qe < 14; qe += 2) {
      for (std::int64_t kb = 0; kb < 12; kb += 2) {
        for (std::int64_t ke = kb; ke < 15; ke += 3) {
          for (MaskMode m : {MaskMode::none, MaskMode::causal}) {
            AttentionShape s{1, 1, 1, 1, m, {{qb, qe}, {20, 23}}, {{kb, ke}, {21, 22}}};
            CHECK(attention_pairs(s) == brute_pairs(s));
          }
        }
      }
    }
  }
}

TEST_CASE("FLOPs: attention 4d forward, 10d backward per pair, head and sample; GEMM 2mnk") {
  KernelCall fwd{KernelKind::attention_fwd,
                 DType::bf16,
                 AttentionShape{2, 8, 2, 64, MaskMode::causal, {{0, 8}}, {{0, 8}}},
                 {},
                 {}};
  CHECK(kernel_flops(fwd) == doctest::Approx(4.0 * 64 * 36 * 2 * 8));  // 4d * pairs * b * Hq
  KernelCall bwd = fwd;
  bwd.kind = KernelKind::attention_bwd;
  CHECK(kernel_flops(bwd) == doctest::Approx(10.0 * 64 * 36 * 2 * 8));
  KernelCall gemm{
      KernelKind::gemm, DType::bf16, GemmShape{128, 256, 512, false, false, false}, {}, {}};
  CHECK(kernel_flops(gemm) == doctest::Approx(2.0 * 128 * 256 * 512));
  // bytes: e * (mk + kn + mn) with e = 2
  CHECK(kernel_bytes(gemm) == doctest::Approx(2.0 * (128 * 512 + 512 * 256 + 128 * 256)));
  KernelCall copy{KernelKind::copy, DType::fp32, VectorShape{1000}, {}, {}};
  CHECK(kernel_flops(copy) == 0.0);
  CHECK(kernel_bytes(copy) == doctest::Approx(8000.0));  // read + write 1000 fp32
  // A backward element-wise pass reads x and dy and writes dx: 3 bf16 operands per element.
  const KernelCall grad{KernelKind::elementwise, DType::bf16, VectorShape{1000, 3}, {}, {}};
  CHECK(kernel_bytes(grad) == doctest::Approx(1000.0 * 3 * 2));
  // Dropout: read x, write y (bf16) and a 1-byte keep mask.
  const KernelCall dropout{KernelKind::elementwise, DType::bf16, VectorShape{1000, 2, 1}, {}, {}};
  CHECK(kernel_bytes(dropout) == doctest::Approx(1000.0 * (2 * 2 + 1)));
}

TEST_CASE("names round-trip") {
  for (int i = 0; i < kKernelKindCount; ++i) {
    const auto k = static_cast<KernelKind>(i);
    CHECK(parse_kernel_kind(to_string(k)) == k);
  }
  CHECK_FALSE(parse_kernel_kind("conv").has_value());
  CHECK(parse_mask_mode("causal") == MaskMode::causal);
  CHECK(expected_shape_index(KernelKind::lse_merge) == 1);
}

TEST_CASE("kernel call: accumulate over attention row blocks counts the rows it adds") {
  CHECK(accepts_shape(KernelKind::accumulate, 1));
  CHECK(accepts_shape(KernelKind::accumulate, 2));
  CHECK_FALSE(accepts_shape(KernelKind::copy, 1));
  // batch 2, 4 query heads, 2 K/V heads, head_dim 8; 16 query rows and 8 K/V rows:
  // elements = 2 * 8 * (16 * 4 + 2 * 8 * 2) = 16 * 96 = 1536; fp32 bytes = 3 * 4 * 1536.
  KernelCall c{KernelKind::accumulate,
               DType::fp32,
               AttentionShape{2, 4, 2, 8, MaskMode::none, {{0, 16}}, {{32, 40}}},
               {},
               {}};
  CHECK(kernel_flops(c) == 1536.0);
  CHECK(kernel_bytes(c) == 3.0 * 4.0 * 1536.0);
}

TEST_CASE("kernel call: elementwise function names round trip") {
  for (int i = 0; i < kElementwiseFnCount; ++i) {
    const auto f = static_cast<ElementwiseFn>(i);
    CHECK(parse_elementwise_fn(to_string(f)) == f);
  }
  CHECK_FALSE(parse_elementwise_fn("tanh").has_value());
}

TEST_CASE("kernel call: an Adam step moves 28 bytes of fp32 state plus the weight per parameter") {
  // Read the fp32 gradient (4); read and write the fp32 master weight and both moments (3 x 8);
  // write the weight in its dtype (2 for bf16, 4 for fp32).
  const KernelCall bf16{KernelKind::optimizer_update, DType::bf16, VectorShape{1000}, {}, {}, {}};
  CHECK(kernel_bytes(bf16) == doctest::Approx(1000.0 * (4 + 24 + 2)));
  const KernelCall fp32{KernelKind::optimizer_update, DType::fp32, VectorShape{1000}, {}, {}, {}};
  CHECK(kernel_bytes(fp32) == doctest::Approx(1000.0 * (4 + 24 + 4)));
}

TEST_CASE("kernel call: a quantized GEMM reads A and B in the format, C in the dtype") {
  KernelCall c{KernelKind::gemm, DType::bf16, GemmShape{64, 32, 16}, {}, {}};
  const double bf16 = kernel_bytes(c);
  CHECK(bf16 == 2.0 * (64 * 16 + 16 * 32 + 64 * 32));
  c.quant = QuantFormat::fp8;
  // A (m x k) and B (k x n) at 1 byte, C (m x n) at 2 bytes.
  CHECK(kernel_bytes(c) == 1.0 * (64 * 16 + 16 * 32) + 2.0 * 64 * 32);
  CHECK(kernel_flops(c) == 2.0 * 64 * 32 * 16);  // the same arithmetic
  c.quant = QuantFormat::nvfp4;
  CHECK(kernel_bytes(c) == doctest::Approx(0.5625 * (64 * 16 + 16 * 32) + 2.0 * 64 * 32));
}

TEST_CASE("kernel call: a quantize reads the bf16 tensor once and writes each quantized copy") {
  KernelCall cast{KernelKind::copy, DType::bf16, VectorShape{1000, 3}, {}, {}};
  CHECK(kernel_bytes(cast) == 3.0 * 2 * 1000);  // a plain copy: 3 bf16 operands
  cast.quant = QuantFormat::fp8;
  CHECK(kernel_bytes(cast) == 1000 * (2.0 + 2 * 1.0));  // read 2 B, write row- and column-wise
  cast.quant = QuantFormat::mxfp8;
  CHECK(kernel_bytes(cast) == doctest::Approx(1000 * (2.0 + 2 * (1 + 1.0 / 32))));
  cast.shape = VectorShape{1000, 2};
  CHECK(kernel_bytes(cast) == doctest::Approx(1000 * (2.0 + 1 + 1.0 / 32)));
  CHECK(kernel_flops(cast) == 0.0);
}
