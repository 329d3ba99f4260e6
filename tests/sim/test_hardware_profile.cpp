#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"

using meshsim::EfficiencyTable;
using meshsim::HardwareProfile;
using meshsim::InputError;
using nlohmann::json;

namespace {

HardwareProfile h100() {
  return meshsim::load_hardware("h100-sxm");
}

// The InputError message of parsing j, or "" when it parses.
std::string parse_error(const json& j) {
  try {
    (void)meshsim::hardware_from_json(j, "origin.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    fmt::format("meshsim_test_hw_{}_{}", ::getpid(), name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace

TEST_CASE("hardware profile: interpolate_efficiency is linear in log(size) and clamped") {
  const EfficiencyTable t{{1e2, 0.2}, {1e4, 0.6}, {1e6, 0.8}};
  // Exact at the points.
  CHECK(meshsim::interpolate_efficiency(t, 1e2) == doctest::Approx(0.2));
  CHECK(meshsim::interpolate_efficiency(t, 1e4) == doctest::Approx(0.6));
  CHECK(meshsim::interpolate_efficiency(t, 1e6) == doctest::Approx(0.8));
  // Log-midpoints: 1e3 is halfway between 1e2 and 1e4 in log -> (0.2 + 0.6) / 2 = 0.4;
  // 1e5 -> (0.6 + 0.8) / 2 = 0.7. (A linear-in-size rule would give 0.236 at 1e3.)
  CHECK(meshsim::interpolate_efficiency(t, 1e3) == doctest::Approx(0.4));
  CHECK(meshsim::interpolate_efficiency(t, 1e5) == doctest::Approx(0.7));
  // A quarter of the way in log: 10^2.5 -> 0.2 + 0.25 * 0.4 = 0.3.
  CHECK(meshsim::interpolate_efficiency(t, std::pow(10.0, 2.5)) == doctest::Approx(0.3));
  // Clamped at both ends, also for sizes log() cannot take.
  CHECK(meshsim::interpolate_efficiency(t, 1.0) == doctest::Approx(0.2));
  CHECK(meshsim::interpolate_efficiency(t, 0.0) == doctest::Approx(0.2));
  CHECK(meshsim::interpolate_efficiency(t, -5.0) == doctest::Approx(0.2));
  CHECK(meshsim::interpolate_efficiency(t, 1e12) == doctest::Approx(0.8));
  CHECK(meshsim::interpolate_efficiency(t, std::numeric_limits<double>::quiet_NaN()) ==
        doctest::Approx(0.2));
  // Empty table -> 1.0; one point -> constant.
  CHECK(meshsim::interpolate_efficiency({}, 123.0) == 1.0);
  CHECK(meshsim::interpolate_efficiency({{10, 0.5}}, 1e9) == doctest::Approx(0.5));
}

TEST_CASE("hardware profile: built-ins carry the public figures") {
  CHECK(meshsim::builtin_hardware_names() ==
        std::vector<std::string>{"h100-sxm", "h100-hbm2e", "h200-sxm", "h800-sxm", "a100-sxm",
                                 "b200", "b300", "gb200-nvl72", "gb300-nvl72", "mi300x"});
  const auto h = h100();
  CHECK(h.name == "h100-sxm");
  CHECK(h.gpus_per_node == 8);
  CHECK(h.peak_flops[0] == doctest::Approx(989e12));    // bf16
  CHECK(h.peak_flops[1] == doctest::Approx(989e12));    // fp16
  CHECK(h.peak_flops[2] == doctest::Approx(494.7e12));  // fp32 (TF32)
  CHECK(h.peak_flops[3] == doctest::Approx(67e12));     // fp64
  CHECK(h.memory_bw == doctest::Approx(3.35e12));
  CHECK(h.memory_bytes == doctest::Approx(80e9));
  CHECK(h.launch_overhead == doctest::Approx(2e-6));
  CHECK(h.network.nvlink_bus_bw == doctest::Approx(370e9));
  CHECK(h.network.nvls_bus_bw == doctest::Approx(480e9));
  CHECK(h.network.nic_bw == doctest::Approx(48e9));
  CHECK(h.network.nccl_model);  // built-ins cost collectives with NCCL's protocol model
  // A profile that does not name its collective model keeps the alpha-beta figures.
  json plain = meshsim::to_json(h);
  plain["network"].erase("collective_model");
  CHECK_FALSE(meshsim::hardware_from_json(plain, "plain.json").network.nccl_model);
  plain["network"]["collective_model"] = "alpha-beta";
  CHECK_FALSE(meshsim::hardware_from_json(plain, "plain.json").network.nccl_model);
  CHECK(h.network.nics_per_node == 8);
  CHECK(h.network.base_latency == doctest::Approx(8.4e-6));
  CHECK(h.network.nvlink_step_latency == doctest::Approx(3.4e-6));
  CHECK(h.network.network_step_latency == doctest::Approx(14e-6));
  // Large GEMMs reach A100's 80% of peak scaled by H100's / A100's best-shape matmul efficiency
  // (0.803 / 0.869, tests/sim/test_builtin_hardware.cpp); "default" is required.
  CHECK(meshsim::interpolate_efficiency(h.compute_efficiency.at("gemm"), 1e13) ==
        doctest::Approx(0.8 * 0.803 / 0.869));
  CHECK(h.compute_efficiency.count("default") == 1);

  const auto h200 = meshsim::load_hardware("h200-sxm");
  CHECK(h200.peak_flops == h.peak_flops);
  CHECK(h200.memory_bw == doctest::Approx(4.8e12));
  CHECK(h200.memory_bytes == doctest::Approx(141e9));

  // H100 of torchtitan's Grand Teton hosts (pytorch/torchtitan docs/performance.md): 96 GB
  // HBM2e at 2.4 TB/s, 400 Gb/s per GPU; the 500 W part's BF16 peak 800 TFLOP/s (arXiv
  // 2411.01783, App. A), FP8 twice that, TF32 half (Hopper's ratios).
  const auto hbm2e = meshsim::load_hardware("h100-hbm2e");
  CHECK(hbm2e.memory_bytes == doctest::Approx(96e9));
  CHECK(hbm2e.memory_bw == doctest::Approx(2.4e12));
  CHECK(hbm2e.peak_flops[0] == doctest::Approx(800e12));  // bf16
  CHECK(hbm2e.peak_flops[2] == doctest::Approx(400e12));  // fp32
  CHECK(hbm2e.fp8_flops == doctest::Approx(1600e12));
  CHECK(hbm2e.network.nic_bw == h.network.nic_bw);
  CHECK(hbm2e.sources.at("memory").find("2.4 TB/sec") != std::string::npos);
  CHECK(hbm2e.sources.at("peak_tflops").find("BF16 peak for each H100 is 800 TF/sec") !=
        std::string::npos);

  // H800: H100's compute and memory, 8 of its 18 NVLink links (8 x 20.6 GB/s), no NVLS.
  const auto h800 = meshsim::load_hardware("h800-sxm");
  CHECK(h800.peak_flops == h.peak_flops);
  CHECK(h800.memory_bw == h.memory_bw);
  CHECK(h800.network.nvlink_bus_bw == doctest::Approx(165e9));
  CHECK(h800.network.nvls_bus_bw == 0.0);

  const auto a100 = meshsim::load_hardware("a100-sxm");
  CHECK(a100.peak_flops[0] == doctest::Approx(312e12));
  CHECK(a100.peak_flops[2] == doctest::Approx(156e12));
  CHECK(a100.peak_flops[3] == doctest::Approx(19.5e12));
  CHECK(a100.memory_bw == doctest::Approx(2.039e12));
  CHECK(a100.network.nvlink_bus_bw == doctest::Approx(230e9));
  CHECK(a100.network.nvls_bus_bw == 0.0);
  CHECK(a100.network.nic_bw == doctest::Approx(24e9));
}

TEST_CASE("hardware profile: built-ins name their attention kernels and sources") {
  for (const auto& name : meshsim::builtin_hardware_names()) {
    CAPTURE(name);
    const auto hw = meshsim::load_hardware(name);
    CHECK(hw.attention_kernel == "fa2");  // PyTorch SDPA's flash kernel, on every GPU here
    const auto& fa2 = hw.attention_kernels.at("fa2");
    CHECK(hw.compute_efficiency.at("attention_fwd") == fa2.fwd);
    CHECK(hw.compute_efficiency.at("attention_bwd") == fa2.bwd);
    for (const char* field :
         {"peak_tflops", "memory", "attention_kernels", "compute_efficiency.gemm",
          "memory_efficiency", "network.nvlink_bus_gbps", "network.nic_gbps", "network.latency"}) {
      CAPTURE(field);
      CHECK(!hw.sources.at(field).empty());
    }
  }
  // Large-call forward efficiencies: FA2 65 % on A100 (in the FA2 paper's 50-73 %); on H100 FA2
  // 35 %, FA3 75 %, cuDNN 59 % (FlashAttention-3 paper).
  CHECK(meshsim::load_hardware("a100-sxm").attention_kernels.at("fa2").fwd.back().efficiency ==
        doctest::Approx(0.65));
  const auto h100 = meshsim::load_hardware("h100-sxm");
  CHECK(h100.attention_kernels.at("fa2").fwd.back().efficiency == doctest::Approx(0.35));
  CHECK(h100.attention_kernels.at("fa3").fwd.back().efficiency == doctest::Approx(0.75));
  CHECK(h100.attention_kernels.at("cudnn").fwd.back().efficiency == doctest::Approx(0.59));
  // A kernel family that is not listed, or a source that is not text, is refused by name.
  json j = meshsim::to_json(h100);
  j["attention_kernel"] = "fa4";
  CHECK_THROWS_WITH_AS(meshsim::hardware_from_json(j, "p.json"),
                       "p.json: field 'attention_kernel': expected the name of one of "
                       "attention_kernels, got \"fa4\"",
                       meshsim::InputError);
  j = meshsim::to_json(h100);
  j["sources"]["peak_tflops"] = 3;
  CHECK_THROWS_WITH_AS(meshsim::hardware_from_json(j, "p.json"),
                       "p.json: field 'sources.peak_tflops': expected a string, got 3",
                       meshsim::InputError);
}

TEST_CASE("hardware profile: JSON round trip is exact for every built-in") {
  for (const auto& name : meshsim::builtin_hardware_names()) {
    CAPTURE(name);
    const auto hw = meshsim::load_hardware(name);
    const json j = meshsim::to_json(hw);
    CHECK(meshsim::hardware_from_json(j, "rt") == hw);
    // Through text as well, and the text is in human units.
    const auto text = j.dump(2);
    CHECK(meshsim::hardware_from_json(json::parse(text), "rt") == hw);
    CHECK(j.at("schema_version") == meshsim::kHardwareSchemaVersion);
    CHECK(j.at("memory_tbps").get<double>() < 10.0);
    // And from a file.
    const auto path = temp_file(name + ".json", text);
    CHECK(meshsim::load_hardware(path.string()) == hw);
    std::filesystem::remove(path);
  }
  // A profile with awkward values still round-trips bit for bit.
  auto hw = h100();
  hw.memory_bw = 3.3512345678e12;
  hw.network.base_latency = 7.123456789e-6;
  hw.network.nic_bw = 46.7e9;
  const auto back = meshsim::hardware_from_json(json::parse(meshsim::to_json(hw).dump()), "rt");
  const auto again = meshsim::hardware_from_json(meshsim::to_json(back), "rt");
  CHECK(again == back);
  CHECK(back.memory_bw == doctest::Approx(hw.memory_bw));
  CHECK(back.network.base_latency == doctest::Approx(hw.network.base_latency));
}

TEST_CASE("hardware profile: malformed fields name the field and what was expected") {
  const json base = meshsim::to_json(h100());
  REQUIRE(parse_error(base).empty());

  struct Case {
    std::string label;
    std::function<void(json&)> mutate;
    std::string expected;  // a substring of the message
  };
  const std::vector<Case> cases = {
      {"calibrated unknown op",
       [](json& j) {
         j["network"]["calibrated"]["gossip.nvlink"] = {
             {"base_latency_us", 1}, {"step_latency_us", 0}, {"bw_gbps", 5}};
       },
       "field 'network.calibrated.gossip.nvlink': unknown key"},
      {"calibrated zero bandwidth",
       [](json& j) {
         j["network"]["calibrated"]["p2p.nvlink"] = {
             {"base_latency_us", 1}, {"step_latency_us", 0}, {"bw_gbps", 0}};
       },
       "field 'network.calibrated.p2p.nvlink.bw_gbps': expected a positive number"},
      {"calibrated not an object", [](json& j) { j["network"]["calibrated"] = 3; },
       "field 'network.calibrated'"},
      {"unknown collective model", [](json& j) { j["network"]["collective_model"] = "nccl2"; },
       "field 'network.collective_model': expected \"nccl\" or \"alpha-beta\", got \"nccl2\""},
      {"negative nic", [](json& j) { j["network"]["nic_gbps"] = -48; },
       "field 'network.nic_gbps': expected a positive number"},
      {"zero nic", [](json& j) { j["network"]["nic_gbps"] = 0; },
       "field 'network.nic_gbps': expected a positive number"},
      {"nic as string", [](json& j) { j["network"]["nic_gbps"] = "48"; },
       "field 'network.nic_gbps': expected a positive number, got \"48\""},
      {"missing nic", [](json& j) { j["network"].erase("nic_gbps"); },
       "field 'network.nic_gbps': missing (expected a positive number)"},
      {"zero peak", [](json& j) { j["peak_tflops"]["bf16"] = 0.0; },
       "field 'peak_tflops.bf16': expected a positive number"},
      {"missing fp64 peak", [](json& j) { j["peak_tflops"].erase("fp64"); },
       "field 'peak_tflops.fp64': missing"},
      {"unknown dtype", [](json& j) { j["peak_tflops"]["int8"] = 1979; },
       "field 'peak_tflops.int8': unknown field"},
      {"negative fp8 peak", [](json& j) { j["peak_tflops"]["fp8"] = -1; },
       "field 'peak_tflops.fp8': expected a positive number"},
      {"huge bandwidth", [](json& j) { j["memory_tbps"] = 1e300; },
       "field 'memory_tbps': expected a positive number"},
      {"fractional gpus", [](json& j) { j["gpus_per_node"] = 8.5; },
       "field 'gpus_per_node': expected a positive integer"},
      {"zero nics", [](json& j) { j["network"]["nics_per_node"] = 0; },
       "field 'network.nics_per_node': expected a positive integer"},
      {"huge gpus", [](json& j) { j["gpus_per_node"] = 1e12; },
       "field 'gpus_per_node': expected a positive integer"},
      {"schema version", [](json& j) { j["schema_version"] = 2; },
       "field 'schema_version': expected 1, got 2"},
      {"missing schema version", [](json& j) { j.erase("schema_version"); },
       "field 'schema_version': missing"},
      {"efficiency above 1", [](json& j) { j["compute_efficiency"]["gemm"][1][1] = 1.5; },
       "field 'compute_efficiency.gemm[1][1]': expected an efficiency in (0, 1]"},
      {"efficiency 0", [](json& j) { j["memory_efficiency"][0][1] = 0; },
       "field 'memory_efficiency[0][1]': expected an efficiency in (0, 1]"},
      {"sizes not increasing", [](json& j) { j["memory_efficiency"][2][0] = 1e5; },
       "field 'memory_efficiency[2][0]': expected a size larger than the previous"},
      {"equal sizes", [](json& j) { j["memory_efficiency"][1][0] = j["memory_efficiency"][0][0]; },
       "field 'memory_efficiency[1][0]': expected a size larger"},
      {"negative size", [](json& j) { j["memory_efficiency"][0][0] = -1; },
       "field 'memory_efficiency[0][0]': expected a positive size"},
      {"point not a pair", [](json& j) { j["memory_efficiency"][0] = json::array({1e5}); },
       "field 'memory_efficiency[0]': expected a [size, efficiency] pair"},
      {"empty table", [](json& j) { j["memory_efficiency"] = json::array(); },
       "field 'memory_efficiency': expected a non-empty array"},
      {"no default", [](json& j) { j["compute_efficiency"].erase("default"); },
       "field 'compute_efficiency.default': missing"},
      {"unknown kernel kind", [](json& j) { j["compute_efficiency"]["matmul"] = json::array(); },
       "field 'compute_efficiency.matmul': unknown kernel kind"},
      {"unknown top-level field", [](json& j) { j["gpus"] = 8; }, "field 'gpus': unknown field"},
      {"unknown network field", [](json& j) { j["network"]["nic_gbit"] = 400; },
       "field 'network.nic_gbit': unknown field"},
      {"interference below 1", [](json& j) { j["comm_interference"] = 0.5; },
       "field 'comm_interference': expected a number >= 1"},
      {"negative nvls", [](json& j) { j["network"]["nvls_bus_gbps"] = -1; },
       "field 'network.nvls_bus_gbps': expected a non-negative number"},
      {"negative latency", [](json& j) { j["network"]["base_latency_us"] = -8.4; },
       "field 'network.base_latency_us': expected a non-negative number"},
      {"name not a string", [](json& j) { j["name"] = 5; },
       "field 'name': expected a non-empty string, got 5"},
      {"empty name", [](json& j) { j["name"] = ""; }, "field 'name': expected a non-empty string"},
      {"network not an object", [](json& j) { j["network"] = json::array(); },
       "field 'network': expected an object with the network figures, got an array"},
      {"null field", [](json& j) { j["launch_overhead_us"] = nullptr; },
       "field 'launch_overhead_us': expected a non-negative number, got null"},
      {"boolean field", [](json& j) { j["memory_gb"] = true; },
       "field 'memory_gb': expected a positive number, got true"},
      {"not an object",
       [](json& j) {
         j = json::array({1, 2});
       },
       "expected a JSON object (a hardware profile), got an array"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.label);
    json j = base;
    c.mutate(j);
    const auto msg = parse_error(j);
    CAPTURE(msg);
    CHECK(msg.rfind("origin.json: ", 0) == 0);
    CHECK(msg.find(c.expected) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
  // Zero NVLS and zero latencies are legal (0 = no NVLS, an ideal network).
  json j = base;
  j["network"]["nvls_bus_gbps"] = 0;
  j["network"]["base_latency_us"] = 0;
  CHECK(parse_error(j).empty());
}

TEST_CASE("hardware profile: load_hardware reports unknown names and invalid JSON on one line") {
  try {
    (void)meshsim::load_hardware("h900-sxm");
    FAIL("expected InputError");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    CHECK(msg.rfind("h900-sxm: ", 0) == 0);
    for (const auto& name : meshsim::builtin_hardware_names()) {
      CHECK(msg.find(name) != std::string::npos);
    }
  }

  const auto bad = temp_file("bad.json", "{\n  \"name\": \"x\",\n  oops\n}\n");
  try {
    (void)meshsim::load_hardware(bad.string());
    FAIL("expected InputError");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(msg.rfind(bad.string() + ": not valid JSON: ", 0) == 0);
    CHECK(msg.find('\n') == std::string::npos);
  }
  std::filesystem::remove(bad);

  const auto empty = temp_file("empty.json", "");
  CHECK_THROWS_WITH_AS(meshsim::load_hardware(empty.string()), doctest::Contains("not valid JSON"),
                       InputError);
  std::filesystem::remove(empty);

  // A valid JSON file with a bad field names the file as the origin.
  json j = meshsim::to_json(h100());
  j["network"]["nic_gbps"] = -1;
  const auto file = temp_file("field.json", j.dump());
  const std::string want = file.string() + ": field 'network.nic_gbps': expected a positive number";
  CHECK_THROWS_WITH_AS(meshsim::load_hardware(file.string()), doctest::Contains(want.c_str()),
                       InputError);
  std::filesystem::remove(file);
}

TEST_CASE("hardware profile: mini-fuzz - any mutation parses or throws InputError") {
  const json base = meshsim::to_json(h100());
  const std::string base_text = base.dump();
  std::mt19937 rng(20240611);
  auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  // Every node of the document, as a JSON pointer.
  std::vector<json::json_pointer> nodes;
  std::function<void(const json&, const json::json_pointer&)> collect =
      [&](const json& v, const json::json_pointer& at) {
        nodes.push_back(at);
        if (v.is_object()) {
          for (const auto& [k, child] : v.items()) collect(child, at / k);
        } else if (v.is_array()) {
          for (std::size_t i = 0; i < v.size(); ++i) collect(v[i], at / i);
        }
      };
  collect(base, json::json_pointer{});

  const std::vector<json> replacements = {nullptr,
                                          true,
                                          false,
                                          "NaN",
                                          "inf",
                                          "-1",
                                          "",
                                          "h100",
                                          json::array(),
                                          json::object(),
                                          json::array({1, 2, 3}),
                                          json::array({json::array({1e5, 0.5})}),
                                          0,
                                          -1,
                                          -1e-300,
                                          1e-320,
                                          1e308,
                                          -1e308,
                                          1e300,
                                          0.5,
                                          1.0,
                                          1.5,
                                          2,
                                          std::numeric_limits<std::int64_t>::min(),
                                          std::numeric_limits<std::uint64_t>::max(),
                                          std::numeric_limits<double>::quiet_NaN(),
                                          std::numeric_limits<double>::infinity(),
                                          -std::numeric_limits<double>::infinity()};

  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    CAPTURE(iter);
    json j = base;
    const std::size_t mutations = 1 + pick(3);
    bool as_text = false;
    std::string text;
    for (std::size_t m = 0; m < mutations; ++m) {
      const auto& at = nodes[pick(nodes.size())];
      const std::size_t kind = pick(8);
      try {
        if (!j.contains(at)) continue;  // an earlier mutation removed it
        if (kind == 0 && !at.empty()) {
          json& parent = j.at(at.parent_pointer());
          if (parent.is_object())
            parent.erase(at.back());
          else if (parent.is_array())
            parent.erase(static_cast<std::size_t>(std::stoul(at.back())));
        } else if (kind == 1) {
          j.at(at)["unexpected"] = 1;  // adds a key to objects; throws for other types
        } else if (kind == 7) {
          as_text = true;
        } else {
          j.at(at) = replacements[pick(replacements.size())];
        }
      } catch (const json::exception&) {
        // The mutation itself did not apply (e.g. indexing a number); keep going.
      }
    }
    try {
      if (as_text) {
        // Truncated or corrupted text through the file loader.
        text = j.dump(-1, ' ', false, json::error_handler_t::replace);
        if (pick(2) == 0) {
          text.resize(pick(text.size() + 1));
        } else if (!text.empty()) {
          text[pick(text.size())] = "{}[],:\"x0-e."[pick(12)];
        }
        const auto path = temp_file("fuzz.json", text);
        try {
          (void)meshsim::load_hardware(path.string());
          ++parsed;
        } catch (const InputError& e) {
          ++rejected;
          CHECK(std::string(e.what()).find('\n') == std::string::npos);
        }
        std::filesystem::remove(path);
        continue;
      }
      const auto hw = meshsim::hardware_from_json(j, "fuzz");
      ++parsed;
      // Whatever parses round-trips.
      CHECK(meshsim::hardware_from_json(meshsim::to_json(hw), "fuzz") == hw);
    } catch (const InputError& e) {
      ++rejected;
      const std::string msg = e.what();
      CHECK(msg.find('\n') == std::string::npos);
      CHECK(!msg.empty());
    } catch (const std::exception& e) {
      FAIL("unexpected exception type: " << e.what());
    }
  }
  // The mutations are harsh enough to reject most documents but not all.
  CHECK(rejected > 1000);
  CHECK(parsed > 0);
  MESSAGE(fmt::format("fuzz: {} parsed, {} rejected", parsed, rejected));
}
