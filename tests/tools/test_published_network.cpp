// A published run's network between nodes (tools/published_network.hpp): the printed per-node
// figure, at the built-in profiles' achieved share of line rate, replaces the profile's NIC
// bandwidth, shared by its NICs.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "tests/tools/published_test_rows.hpp"
#include "tools/published_network.hpp"

using namespace meshsim;
using json = nlohmann::json;

TEST_CASE("cluster network: Gb/s per node become bytes/s per NIC") {
  HardwareProfile hw = *builtin_hardware("h100-sxm");
  REQUIRE(hw.network.nics_per_node == 8);
  std::vector<std::string> notes;
  apply_cluster_network(json{{"gpus", 96}, {"inter_node_gbps", 800}}, hw, notes);
  // 800 Gb/s = 100 GB/s per node, 0.96 of it achieved (as 48 of NDR's 50 GB/s), over 8 NICs:
  // 12 GB/s each
  CHECK(hw.network.nic_bw == doctest::Approx(12e9));
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] ==
        "network between nodes 800 Gb/s per node as the cluster prints (8 NICs of 12 GB/s)");
  CHECK(hw.sources.at("network.nic_gbps").find("800 Gb/s") != std::string::npos);
}

TEST_CASE("cluster network: absent or null leaves the profile as it is") {
  const HardwareProfile before = *builtin_hardware("a100-sxm");
  std::vector<std::string> notes;
  for (const json& cluster : {json{{"gpus", 8}}, json{{"inter_node_gbps", nullptr}}, json()}) {
    HardwareProfile hw = before;
    apply_cluster_network(cluster, hw, notes);
    CHECK(hw == before);
  }
  CHECK(notes.empty());
}

TEST_CASE("cluster network: anything but a positive number names the field") {
  HardwareProfile hw = *builtin_hardware("a100-sxm");
  std::vector<std::string> notes;
  for (const json& bad : {json("400Gbps"), json(0), json(-1), json::array({400})}) {
    CHECK_THROWS_WITH_AS(apply_cluster_network(json{{"inter_node_gbps", bad}}, hw, notes),
                         doctest::Contains("field 'cluster.inter_node_gbps': expected a positive "
                                           "number (Gb/s per node)"),
                         InputError);
  }
}

TEST_CASE("cluster network: a compared row is simulated on its printed network") {
  json r = test::row_of("fsdp_runs.json", "fsdp-test-001");
  const RunPlan plain = test::planned_run(test::read_one(r, "runs.json"));
  r["cluster"]["inter_node_gbps"] = 400;
  const RunPlan printed = test::planned_run(test::read_one(r, "runs.json"));
  // 400 Gb/s = 50 GB/s per node, 48 achieved, over the profile's 8 NICs
  CHECK(printed.hardware.network.nic_bw == doctest::Approx(48e9 / 8));
  CHECK(printed.hardware.network.nic_bw < plain.hardware.network.nic_bw);
}
