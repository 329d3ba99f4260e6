#include <cmath>

#include <doctest/doctest.h>

#include "sim/compute_model.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/kernel_call.hpp"

using meshsim::DType;
using meshsim::KernelCall;
using meshsim::KernelKind;

namespace {

KernelCall gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype = DType::bf16) {
  KernelCall c;
  c.kind = KernelKind::gemm;
  c.dtype = dtype;
  c.shape = meshsim::GemmShape{m, n, k};
  return c;
}

KernelCall vector_kernel(KernelKind kind, std::int64_t elements, DType dtype = DType::bf16) {
  KernelCall c;
  c.kind = kind;
  c.dtype = dtype;
  c.shape = meshsim::VectorShape{elements};
  return c;
}

KernelCall attention_fwd(std::int64_t tokens) {
  KernelCall c;
  c.kind = KernelKind::attention_fwd;
  meshsim::AttentionShape s;
  s.batch = 1;
  s.heads_q = 32;
  s.heads_kv = 32;
  s.head_dim = 128;
  s.q = {{0, tokens}};
  s.k = {{0, tokens}};
  c.shape = s;
  return c;
}

}  // namespace

// H100's large-GEMM efficiency: A100's 0.8 scaled by the best-shape matmul efficiencies of the
// MAMF table (stas00/ml-engineering): H100 SXM BF16 80.3 %, A100 SXM 86.9 %.
constexpr double kH100Bf16Scale = 0.803 / 0.869;

TEST_CASE("compute model: a large bf16 GEMM on h100 runs at A100's 80% scaled by H100's MAMF") {
  const auto hw = meshsim::load_hardware("h100-sxm");
  // m = n = k = 8192: FLOPs = 2mnk = 1,099,511,627,776 (>= 1e12, so gemm efficiency
  // 0.8 x 0.803 / 0.869 = 0.7392405). time = 2mnk / (989e12 x 0.7392405) + 2 us = 1.5058959e-3 s.
  // (Memory side: 2 B * 3 * 8192^2 / (3.35e12 * 0.85) = 1.414e-4 s, smaller.)
  CHECK(meshsim::compute_seconds(hw, gemm(8192, 8192, 8192)) ==
        doctest::Approx(1.5058959131664749e-3).epsilon(1e-9));
  CHECK(meshsim::compute_time(hw, gemm(8192, 8192, 8192)) == 1505896);  // ns, rounded

  // fp32 runs at the TF32 peak 494.7 TFLOP/s: 2mnk / (494.7e12 * 0.7392405) + 2 us.
  CHECK(meshsim::compute_seconds(hw, gemm(8192, 8192, 8192, DType::fp32)) ==
        doctest::Approx(2.0 * 8192.0 * 8192.0 * 8192.0 / (494.7e12 * 0.8 * kH100Bf16Scale) + 2e-6));
  // A100's table is the curve itself: 0.8 at 1e12 FLOPs and above.
  const auto a100 = meshsim::load_hardware("a100-sxm");
  CHECK(meshsim::compute_seconds(a100, gemm(8192, 8192, 8192)) ==
        doctest::Approx(2.0 * 8192.0 * 8192.0 * 8192.0 / (312e12 * 0.8) + 2e-6).epsilon(1e-9));
}

TEST_CASE("compute model: a mid-size GEMM uses the efficiency interpolated in log(FLOPs)") {
  const auto hw = meshsim::load_hardware("h100-sxm");
  // m = n = k = 1024: FLOPs = 2^31 = 2.147e9, between the Hopper curve's points (1e8, 0.25) and
  // (1e10, 0.6), both scaled by 0.803 / 0.869: eff = (0.25 + 0.35 * (ln 2^31 - ln 1e8) /
  // (ln 1e10 - ln 1e8)) x 0.924050 = 0.483088 x 0.924050 = 0.446398.
  // time = 2^31 / (989e12 * 0.446398) + 2 us = 6.864204e-6 s.
  // (Memory: 6 MiB at eff 0.6497 -> 2.89e-6 s, smaller.)
  CHECK(meshsim::compute_seconds(hw, gemm(1024, 1024, 1024)) ==
        doctest::Approx(6.864204233584513e-6).epsilon(1e-9));
}

TEST_CASE("compute model: a copy is bandwidth-bound") {
  const auto hw = meshsim::load_hardware("h100-sxm");
  // Copy of 1e9 bf16 elements: 0 FLOPs, bytes = read + write = 2 * 2 B * 1e9 = 4e9 (>= 1e8, so
  // memory efficiency 0.85). time = 4e9 / (3.35e12 * 0.85) + 2 us = 1.40674100e-3 s.
  CHECK(meshsim::compute_seconds(hw, vector_kernel(KernelKind::copy, 1'000'000'000)) ==
        doctest::Approx(1.4067410008779633e-3).epsilon(1e-9));
  // Twice the bytes on H200's 4.8 TB/s: 8e9 / (4.8e12 * 0.85) + 2 us.
  const auto h200 = meshsim::load_hardware("h200-sxm");
  CHECK(meshsim::compute_seconds(h200, vector_kernel(KernelKind::copy, 2'000'000'000)) ==
        doctest::Approx(8e9 / (4.8e12 * 0.85) + 2e-6));
  // An elementwise kernel (1 FLOP per element, 4 bytes) is memory-bound too: same time as a copy.
  CHECK(meshsim::compute_seconds(hw, vector_kernel(KernelKind::elementwise, 1'000'000'000)) ==
        doctest::Approx(1.4067410008779633e-3).epsilon(1e-9));
}

TEST_CASE("compute model: zero work costs exactly the launch overhead") {
  const auto hw = meshsim::load_hardware("h100-sxm");
  // 0 FLOPs and 0 bytes: time = launch overhead = 2 us.
  CHECK(meshsim::compute_time(hw, vector_kernel(KernelKind::elementwise, 0)) == 2000);
  CHECK(meshsim::compute_time(hw, gemm(0, 0, 0)) == 2000);
  // 0 FLOPs but B (128 x 128 bf16 = 32 KiB) still read: 32768 / (3.35e12 x 0.2) + 2 us = 2049 ns
  // (below the memory table's first point, 1e5 bytes -> 0.2).
  CHECK(meshsim::compute_time(hw, gemm(0, 128, 128)) == 2049);
  auto no_launch = hw;
  no_launch.launch_overhead = 0;
  CHECK(meshsim::compute_seconds(no_launch, vector_kernel(KernelKind::copy, 0)) == 0.0);
}

TEST_CASE("compute model: attention uses its own table, other kinds fall back to default") {
  auto hw = meshsim::load_hardware("h100-sxm");
  // 8192 x 8192 unmasked pairs, 32 heads, d = 128: FLOPs = 4 d * pairs * heads
  // = 4 * 128 * 8192^2 * 32 = 1.0995e12 (>= 1e12: the default family fa2's large-call forward
  // efficiency, 35 % on H100 per the FlashAttention-3 paper's abstract).
  // time = 1.0995e12 / (989e12 * 0.35) + 2 us.
  const double flops = 4.0 * 128 * 8192.0 * 8192.0 * 32;
  CHECK(meshsim::kernel_flops(attention_fwd(8192)) == doctest::Approx(flops));
  CHECK(hw.attention_kernel == "fa2");
  CHECK(meshsim::compute_seconds(hw, attention_fwd(8192)) ==
        doctest::Approx(flops / (989e12 * 0.35) + 2e-6));
  // FlashAttention-3: 75 % (740 of 989 TFLOP/s, same source).
  const auto fa3 = meshsim::select_attention_kernel(hw, "fa3", "--attention-kernel");
  CHECK(fa3.attention_kernel == "fa3");
  CHECK(meshsim::compute_seconds(fa3, attention_fwd(8192)) ==
        doctest::Approx(flops / (989e12 * 0.75) + 2e-6));
  CHECK_THROWS_WITH_AS(meshsim::select_attention_kernel(meshsim::load_hardware("a100-sxm"), "fa3",
                                                        "--attention-kernel"),
                       "--attention-kernel fa3: hardware profile 'a100-sxm' has no such attention "
                       "kernel family (it has: fa2)",
                       meshsim::InputError);
  // Without an attention_fwd table the "default" table applies (0.5 here).
  hw.compute_efficiency.erase("attention_fwd");
  CHECK(meshsim::compute_seconds(hw, attention_fwd(8192)) ==
        doctest::Approx(flops / (989e12 * 0.5) + 2e-6));
}

TEST_CASE(
    "compute model: a kernel with a fused function uses its own table when the profile has one") {
  meshsim::HardwareProfile hw = meshsim::load_hardware("h100-sxm");
  hw.launch_overhead = 0;
  hw.memory_bw = 1e30;  // memory never binds here
  hw.compute_efficiency = {
      {"default", {{1.0, 0.5}}}, {"gemm", {{1.0, 0.8}}}, {"gemm.gelu", {{1.0, 0.4}}}};
  meshsim::KernelCall c{meshsim::KernelKind::gemm,
                        meshsim::DType::bf16,
                        meshsim::GemmShape{1024, 1024, 1024},
                        {},
                        {},
                        meshsim::ElementwiseFn::none};
  const double peak = hw.peak_flops[0];
  CHECK(meshsim::efficiency_key(c) == "gemm");
  // t = FLOPs / (peak x efficiency): 0.8 plain, 0.4 with the GELU epilogue.
  CHECK(meshsim::compute_seconds(hw, c) ==
        doctest::Approx(meshsim::kernel_flops(c) / (peak * 0.8)));
  c.fn = meshsim::ElementwiseFn::gelu;
  CHECK(meshsim::efficiency_key(c) == "gemm.gelu");
  CHECK(meshsim::compute_seconds(hw, c) ==
        doctest::Approx(meshsim::kernel_flops(c) / (peak * 0.4)));
  // relu has no table: the kind's.
  c.fn = meshsim::ElementwiseFn::relu;
  CHECK(meshsim::compute_seconds(hw, c) ==
        doctest::Approx(meshsim::kernel_flops(c) / (peak * 0.8)));
}

TEST_CASE("compute model: an FP8 GEMM runs at the profile's FP8 peak, NVFP4 at the FP4 peak") {
  const auto hw = meshsim::load_hardware("h100-sxm");
  // A large, compute-bound GEMM: time = launch + FLOPs / (peak x efficiency). FP8 runs on its own
  // table ("gemm_fp8"): the same curve scaled by H100's FP8 best-shape matmul efficiency, 70.9 %
  // of 1,979 TFLOP/s, against BF16's 80.3 % of 989 (MAMF table), so the speed-up is
  // (1979 / 989) x (0.709 / 0.803) = 1.7667, diluted only by the launch overhead.
  KernelCall g = gemm(16384, 16384, 16384);
  const double bf16 = meshsim::compute_seconds(hw, g);
  g.quant = meshsim::QuantFormat::fp8;
  const double fp8 = meshsim::compute_seconds(hw, g);
  const double ratio = (1979.0 / 989.0) * (0.709 / 0.803);
  CHECK(bf16 / fp8 > 1.0);
  CHECK(bf16 / fp8 <= ratio);
  CHECK(bf16 / fp8 == doctest::Approx(ratio).epsilon(0.01));
  CHECK(fp8 ==
        doctest::Approx(2.0 * 16384.0 * 16384.0 * 16384.0 / (1979e12 * 0.8 * 0.709 / 0.869) + 2e-6)
            .epsilon(1e-9));
  // A profile without a "gemm_fp8" table (a calibrated one) runs FP8 GEMMs on "gemm": the
  // speed-up is then the peak ratio.
  auto no_fp8_table = hw;
  no_fp8_table.compute_efficiency.erase(std::string(meshsim::kGemmFp8EfficiencyKey));
  CHECK(bf16 / meshsim::compute_seconds(no_fp8_table, g) ==
        doctest::Approx(hw.fp8_flops / hw.peak_flops[0]).epsilon(0.01));
  // H100 has no FP4 tensor cores: an NVFP4 GEMM is an input error naming the field.
  g.quant = meshsim::QuantFormat::nvfp4;
  CHECK_THROWS_WITH_AS(meshsim::compute_seconds(hw, g), doctest::Contains("peak_tflops.fp4"),
                       meshsim::InputError);
  // B200's NVFP4 GEMMs run on the BF16 table (the MAMF table has no FP4 row) at the FP4 peak.
  const auto b200 = meshsim::load_hardware("b200");
  const double b200_bf16 = meshsim::compute_seconds(b200, gemm(16384, 16384, 16384));
  CHECK(b200_bf16 / meshsim::compute_seconds(b200, g) ==
        doctest::Approx(b200.fp4_flops / b200.peak_flops[0]).epsilon(0.01));
}

TEST_CASE("compute model: a profile without FP8 tensor cores refuses an FP8 GEMM") {
  const auto a100 = meshsim::load_hardware("a100-sxm");
  KernelCall g = gemm(1024, 1024, 1024);
  g.quant = meshsim::QuantFormat::fp8;
  CHECK_THROWS_WITH_AS(meshsim::compute_seconds(a100, g), doctest::Contains("no FP8 tensor cores"),
                       meshsim::InputError);
}

TEST_CASE("compute model: a GEMM on a share of the SMs runs its math at that share") {
  const auto hw = meshsim::load_hardware("h100-sxm");
  // TE's set_sm_margin on an H100: 132 - 16 = 116 SMs. The 8192^3 GEMM above:
  // 2mnk / (989e12 x 0.7392405 x 116/132) + 2 us.
  KernelCall g = gemm(8192, 8192, 8192);
  g.sm_share = 116.0 / 132.0;
  CHECK(meshsim::compute_seconds(hw, g) ==
        doctest::Approx(
            2.0 * 8192.0 * 8192.0 * 8192.0 / (989e12 * 0.8 * kH100Bf16Scale * 116.0 / 132.0) + 2e-6)
            .epsilon(1e-9));
}
