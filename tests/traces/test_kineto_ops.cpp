#include "traces/kineto_ops.hpp"

#include <doctest/doctest.h>

#include "tests/traces/kineto_fixture.hpp"

using namespace meshsim;
using meshsim::test::KinetoFixture;
using meshsim::test::shapes;

namespace {
const char* kBf = "c10::BFloat16";

KinetoMatch only_match(const KinetoFixture& f) {
  const KinetoTrace t = f.read();
  REQUIRE(t.kernels.size() == 1);
  return match_kineto_kernel(t, t.kernels[0]);
}
}  // namespace

TEST_CASE("GEMM operators give m, n, k from their Input Dims") {
  SUBCASE("aten::mm [m, k] x [k, n]") {
    KinetoFixture f;
    f.op("aten::mm", 0, 10, shapes({{1024, 4096}, {4096, 512}}, {kBf, kBf}));
    f.kernel("sm90_xmma_gemm_bf16", 1, 100, 5);
    const KinetoMatch m = only_match(f);
    CHECK(m.category == KinetoCategory::gemm);
    REQUIRE(m.call);
    CHECK(m.call->kind == KernelKind::gemm);
    CHECK(std::get<GemmShape>(m.call->shape) == GemmShape{1024, 512, 4096});
    CHECK(m.call->dtype == DType::bf16);
  }
  SUBCASE("aten::addmm (bias, [m, k], [k, n]) inside aten::linear, fp32") {
    KinetoFixture f;
    f.op("aten::linear", 0, 20);
    f.op("aten::addmm", 1, 10,
         shapes({{256}, {64, 128}, {128, 256}, {}, {}},
                {"float", "float", "float", "Scalar", "Scalar"}));
    f.kernel("cutlass_80_tensorop_s1688gemm", 2, 100, 5);
    const KinetoMatch m = only_match(f);
    REQUIRE(m.call);
    CHECK(m.op == "aten::addmm");
    CHECK(std::get<GemmShape>(m.call->shape) == GemmShape{64, 256, 128});
    CHECK(m.call->dtype == DType::fp32);
  }
  SUBCASE("aten::bmm [b, m, k] x [b, k, n]: one GEMM of b m rows, the same 2 b m n k FLOPs") {
    KinetoFixture f;
    f.op("aten::bmm", 0, 10, shapes({{8, 32, 64}, {8, 64, 16}}, {kBf, kBf}));
    f.kernel("nvjet_tst_128x64", 1, 100, 5);
    const KinetoMatch m = only_match(f);
    REQUIRE(m.call);
    CHECK(std::get<GemmShape>(m.call->shape) == GemmShape{8 * 32, 16, 64});
    CHECK(kernel_flops(*m.call) == 2.0 * 8 * 32 * 16 * 64);
  }
  SUBCASE("a GEMM kernel without shapes is left out, with the reason") {
    KinetoFixture f;
    f.op("aten::mm", 0, 10);
    f.kernel("sm80_xmma_gemm", 1, 100, 5);
    const KinetoMatch m = only_match(f);
    CHECK_FALSE(m.call);
    CHECK(m.unmatched.find("Input Dims") != std::string::npos);
  }
}

TEST_CASE("flash attention: layout, GQA heads and the causal flag from Concrete Inputs") {
  SUBCASE("SDPA flash forward [b, h, s, d], is_causal the 5th argument") {
    KinetoFixture f;
    f.op("aten::_scaled_dot_product_flash_attention", 0, 10,
         shapes({{2, 32, 1024, 128}, {2, 8, 1024, 128}, {2, 8, 1024, 128}, {}, {}, {}, {}},
                {kBf, kBf, kBf, "Scalar", "Scalar", "Scalar", ""},
                {"", "", "", "0.", "True", "False", ""}));
    f.kernel("flash_fwd_kernel", 1, 100, 5);
    const KinetoMatch m = only_match(f);
    CHECK(m.category == KinetoCategory::attention);
    REQUIRE(m.call);
    CHECK(m.call->kind == KernelKind::attention_fwd);
    const auto& a = std::get<AttentionShape>(m.call->shape);
    CHECK(a.batch == 2);
    CHECK(a.heads_q == 32);
    CHECK(a.heads_kv == 8);
    CHECK(a.head_dim == 128);
    CHECK(a.mask == MaskMode::causal);
    // causal pairs s (s + 1) / 2, 4 d FLOPs each (QK^T and PV), per head and sample
    CHECK(kernel_flops(*m.call) == 4.0 * 128 * (1024.0 * 1025 / 2) * 2 * 32);
  }
  SUBCASE("_flash_attention_backward [b, s, h, d], not causal") {
    KinetoFixture f;
    nlohmann::json dims = {{1, 512, 16, 64}, {1, 512, 16, 64}, {1, 512, 16, 64}};
    nlohmann::json concrete = nlohmann::json::array();
    for (int i = 0; i < 15; ++i) concrete.push_back(i == 11 ? "False" : "");
    f.op("aten::_flash_attention_backward", 0, 10, shapes(dims, {kBf, kBf, kBf}, concrete));
    f.kernel("flash_bwd_dq_dk_dv_loop_kernel", 1, 100, 5);
    const KinetoMatch m = only_match(f);
    REQUIRE(m.call);
    CHECK(m.call->kind == KernelKind::attention_bwd);
    const auto& a = std::get<AttentionShape>(m.call->shape);
    CHECK(a.heads_q == 16);
    CHECK(a.q.front().size() == 512);
    CHECK(a.mask == MaskMode::none);
  }
}

TEST_CASE("memory-bound kernels: elements of the largest input, operands = tensors + 1") {
  KinetoFixture f;
  f.op("aten::add", 0, 10, shapes({{4096, 1024}, {4096, 1024}, {}}, {kBf, kBf, "Scalar"}));
  f.kernel("void at::native::vectorized_elementwise_kernel<4>", 1, 100, 5);
  KinetoMatch m = only_match(f);
  CHECK(m.category == KinetoCategory::memory);
  REQUIRE(m.call);
  CHECK(m.call->kind == KernelKind::elementwise);
  CHECK(std::get<VectorShape>(m.call->shape) == VectorShape{4096 * 1024, 3, 0});

  KinetoFixture c;
  c.op("aten::copy_", 0, 10, shapes({{1000}, {1000}, {}}, {"float", kBf, "Scalar"}));
  c.kernel("void at::native::unrolled_elementwise_kernel<copy>", 1, 100, 5);
  m = only_match(c);
  REQUIRE(m.call);
  CHECK(m.call->kind == KernelKind::copy);
  CHECK(std::get<VectorShape>(m.call->shape).operands == 2);

  KinetoFixture h;  // a split-K reduction launched by a GEMM operator is not a memory sample
  h.op("aten::mm", 0, 10, shapes({{64, 64}, {64, 64}}, {kBf, kBf}));
  h.kernel("splitKreduce_kernel", 1, 100, 5);
  m = only_match(h);
  CHECK(m.category == KinetoCategory::other);
  CHECK_FALSE(m.call);
}

TEST_CASE("NCCL kernels: record_param_comms gives the collective in CollectiveCall's bytes") {
  const auto comm = [](const char* name, std::int64_t in, std::int64_t out) {
    KinetoFixture f;
    f.op("record_param_comms", 0, 10,
         {{"Collective name", name},
          {"In msg nelems", in},
          {"Out msg nelems", out},
          {"Group size", 4},
          {"dtype", "BFloat16"}});
    f.kernel("ncclDevKernel_Generic", 1, 100, 5);
    return only_match(f);
  };
  KinetoMatch m = comm("allreduce", 1000, 1000);
  CHECK(m.category == KinetoCategory::communication);
  REQUIRE(m.collective);
  CHECK(m.collective->kind == CollectiveKind::all_reduce);
  CHECK(m.collective->bytes == 2000);  // per-rank buffer
  CHECK(m.collective->group_size == 4);
  m = comm("_allgather_base", 250, 1000);
  REQUIRE(m.collective);
  CHECK(m.collective->kind == CollectiveKind::all_gather);
  CHECK(m.collective->bytes == 2000);  // the gathered output
  m = comm("reduce_scatter_tensor", 1000, 250);
  REQUIRE(m.collective);
  CHECK(m.collective->kind == CollectiveKind::reduce_scatter);
  CHECK(m.collective->bytes == 2000);  // the input
  m = comm("send", 100, 100);
  REQUIRE(m.collective);
  CHECK(m.collective->p2p);
  m = comm("gather", 100, 100);
  CHECK_FALSE(m.collective);
  CHECK(m.unmatched.find("not understood") != std::string::npos);
}

TEST_CASE("torch dtype names") {
  CHECK(parse_torch_dtype("c10::BFloat16") == DType::bf16);
  CHECK(parse_torch_dtype("Half") == DType::fp16);
  CHECK(parse_torch_dtype("float") == DType::fp32);
  CHECK(parse_torch_dtype("double") == DType::fp64);
  CHECK_FALSE(parse_torch_dtype("c10::Float8_e4m3fn"));
  CHECK(to_string(KinetoCategory::communication) == "communication");
}
