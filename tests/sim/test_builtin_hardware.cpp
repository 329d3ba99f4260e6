#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "sim/hardware_profile.hpp"

TEST_CASE("builtin hardware: Blackwell, NVL72 and MI300X built-ins") {
  // Dense per-GPU figures from the datasheets (sim/builtin_hardware.cpp): NVIDIA's FP8 is twice
  // BF16 on every part, FP4 twice FP8 on B200 / GB200 and three times on GB300 (Blackwell Ultra).
  const auto b200 = meshsim::load_hardware("b200");
  CHECK(b200.peak_flops[0] == doctest::Approx(2250e12));
  CHECK(b200.fp8_flops == doctest::Approx(2 * 2250e12));
  CHECK(b200.fp4_flops == doctest::Approx(4 * 2250e12));
  CHECK(b200.memory_bytes == doctest::Approx(180e9));
  CHECK(b200.gpus_per_node == 8);
  CHECK(b200.gpus_per_host == 0);
  // NVLink 5 bus bandwidth: 900 GB/s per direction at H100's 370/450.
  CHECK(b200.network.nvlink_bus_bw == doctest::Approx(740e9));
  const auto gb300 = meshsim::load_hardware("gb300-nvl72");
  CHECK(gb300.fp4_flops == doctest::Approx(3 * gb300.fp8_flops));
  for (const char* name : {"gb200-nvl72", "gb300-nvl72"}) {
    CAPTURE(name);
    const auto hw = meshsim::load_hardware(name);
    // One NVLink domain of 72 GPUs over 18 hosts of 4, one NIC per GPU.
    CHECK(hw.gpus_per_node == 72);
    CHECK(hw.gpus_per_host == 4);
    CHECK(hw.network.nics_per_node == 72);
    CHECK(!hw.sources.at("gpus_per_node").empty());
  }
  const auto mi = meshsim::load_hardware("mi300x");
  CHECK(mi.peak_flops[0] == doctest::Approx(1307.4e12));
  CHECK(mi.fp8_flops == doctest::Approx(2614.9e12));
  CHECK(mi.fp4_flops == 0);  // no FP4 tensor cores
  CHECK(mi.network.nvls_bus_bw == 0);
  CHECK(mi.memory_bytes == doctest::Approx(192e9));
  // The Hopper parts gained their FP8 peak: 2 x BF16.
  CHECK(meshsim::load_hardware("h100-sxm").fp8_flops == doctest::Approx(1979e12));
}

TEST_CASE("builtin hardware: SM counts of the NVIDIA GPUs TE's overlap needs, with sources") {
  // NVIDIA's architecture whitepapers: H100 SXM5 132 SMs, A100 108 (sim/builtin_hardware.cpp).
  for (const char* hopper : {"h100-sxm", "h800-sxm", "h200-sxm"}) {
    CAPTURE(hopper);
    const meshsim::HardwareProfile hw = meshsim::load_hardware(hopper);
    CHECK(hw.sm_count == 132);
    CHECK(hw.sources.count("sm_count") == 1);
  }
  CHECK(meshsim::load_hardware("a100-sxm").sm_count == 108);
  CHECK(meshsim::load_hardware("mi300x").sm_count == 0);  // not given
  // A profile written out and read back keeps it (a calibrated copy of h100-sxm can overlap).
  const meshsim::HardwareProfile h100 = meshsim::load_hardware("h100-sxm");
  CHECK(meshsim::hardware_from_json(meshsim::to_json(h100), "copy").sm_count == 132);
}

TEST_CASE("builtin hardware: compute slows beside NCCL kernels by the published average") {
  // arXiv 2507.03114 (abstract): compute overlapped with communication runs 18.9 % slower on
  // average across A100, H100, MI250 and MI210 -> comm_interference = 1 + 0.189 on every
  // built-in (the newer parts carry the cross-GPU average as an assumption, said in the source).
  const auto names = meshsim::builtin_hardware_names();
  CHECK(names.size() == 10);  // with h100-hbm2e
  for (const auto& name : names) {
    CAPTURE(name);
    const auto hw = meshsim::load_hardware(name);
    CHECK(hw.comm_interference == doctest::Approx(1.189));
    const std::string& source = hw.sources.at("comm_interference");
    CHECK(source.find("2507.03114") != std::string::npos);
    CHECK(source.find("A100, H100, MI250 and MI210") != std::string::npos);
  }
}

TEST_CASE("builtin hardware: GEMM tables are A100's curve scaled by each GPU's best-shape matmul") {
  // stas00/ml-engineering's Maximum Achievable Matmul FLOPS table (compute/accelerator/README.md):
  // BF16 / FP8 efficiency of the best shape. A100 SXM 86.9 % is the reference, whose large GEMMs
  // run at 80 %; the Hopper curve's largest point is 0.8 too.
  struct Row {
    const char* name;
    double bf16, fp8;  // 0: no FP8 row
  };
  for (const Row& row :
       {Row{"a100-sxm", 0.869, 0}, Row{"h100-sxm", 0.803, 0.709}, Row{"h100-hbm2e", 0.803, 0.709},
        Row{"h800-sxm", 0.803, 0.709}, Row{"h200-sxm", 0.803, 0.734}, Row{"b200", 0.776, 0.763},
        Row{"b300", 0.786, 0.745}, Row{"gb300-nvl72", 0.786, 0.745},
        Row{"gb200-nvl72", 0.729, 0.723}, Row{"mi300x", 0.514, 0}}) {
    CAPTURE(row.name);
    const auto hw = meshsim::load_hardware(row.name);
    const auto& gemm = hw.compute_efficiency.at("gemm");
    CHECK(gemm.back().efficiency == doctest::Approx(0.8 * row.bf16 / 0.869));
    CHECK(hw.sources.at("compute_efficiency.gemm").find("Maximum Achievable Matmul FLOPS") !=
          std::string::npos);
    const auto fp8 = hw.compute_efficiency.find(std::string(meshsim::kGemmFp8EfficiencyKey));
    if (row.fp8 > 0) {
      REQUIRE(fp8 != hw.compute_efficiency.end());
      CHECK(fp8->second.back().efficiency == doctest::Approx(0.8 * row.fp8 / 0.869));
      CHECK(fp8->second.size() == gemm.size());
      CHECK(hw.sources.count("compute_efficiency.gemm_fp8") == 1);
    } else {
      CHECK(fp8 == hw.compute_efficiency.end());
    }
  }
}
