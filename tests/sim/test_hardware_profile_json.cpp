// Tests of sim/hardware_profile_json.cpp: a profile's JSON and the hash of its figures.
#include <cstdint>
#include <string>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/hardware_profile.hpp"

using meshsim::HardwareProfile;
using nlohmann::json;

namespace {

HardwareProfile h100() {
  return meshsim::load_hardware("h100-sxm");
}

}  // namespace

TEST_CASE("hardware profile: calibrated per-operation link figures round-trip") {
  auto hw = h100();
  hw.network.calibrated["all_reduce.nvlink"] = meshsim::LinkFigures{1.5e-6, 0.25e-6, 6e9};
  hw.network.calibrated["p2p.network"] = meshsim::LinkFigures{4e-6, 0, 12e9};
  const json j = meshsim::to_json(hw);
  CHECK(j.at("network").at("calibrated").at("all_reduce.nvlink").at("bw_gbps") == 6.0);
  const auto back = meshsim::hardware_from_json(json::parse(j.dump()), "rt");
  CHECK(back.network.calibrated.size() == 2);
  CHECK(back.network.calibrated.at("all_reduce.nvlink").base_latency == doctest::Approx(1.5e-6));
  CHECK(back.network.calibrated.at("p2p.network").bw == doctest::Approx(12e9));
  // Built-ins have none, and their JSON has no "calibrated" key.
  CHECK_FALSE(meshsim::to_json(h100()).at("network").contains("calibrated"));
}

TEST_CASE("hardware profile: hash is FNV-1a of the canonical JSON, stable and distinct") {
  const auto hw = h100();
  const auto hash = meshsim::hardware_hash(hw);
  CHECK(hash.size() == 16);
  CHECK(hash.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(meshsim::hardware_hash(h100()) == hash);
  // FNV-1a 64 over the canonical JSON without "sources": h = 0xcbf29ce484222325; for each byte:
  // h ^= byte, h *= 0x100000001b3.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  json figures = meshsim::to_json(hw);
  figures.erase("sources");
  for (char c : figures.dump()) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  CHECK(hash == fmt::format("{:016x}", h));

  const auto h200 = meshsim::hardware_hash(meshsim::load_hardware("h200-sxm"));
  const auto a100 = meshsim::hardware_hash(meshsim::load_hardware("a100-sxm"));
  CHECK(h200 != hash);
  CHECK(a100 != hash);
  CHECK(a100 != h200);
  auto tweaked = hw;
  tweaked.network.nic_bw = 46e9;
  CHECK(meshsim::hardware_hash(tweaked) != hash);
  // A source's wording is documentation: the hash (and so every output's provenance) stays.
  auto reworded = hw;
  reworded.sources["peak_tflops"] = "another wording";
  CHECK(meshsim::hardware_hash(reworded) == hash);
}
