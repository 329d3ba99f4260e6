#include <doctest/doctest.h>

#include "schedules/collective.hpp"
#include "schedules/pipeline.hpp"
#include "schedules/ring_attention.hpp"
#include "sim/compute_model.hpp"
#include "sim/error.hpp"
#include "tests/traces/chakra_fixtures.hpp"

using namespace meshsim;
using namespace meshsim::test;

namespace {

std::size_t dep_count(const Program& p) {
  std::size_t n = 0;
  for (const auto& op : p.ops) n += p.deps(op.id).size();
  return n;
}

// Export -> import gives the Program back (mesh, streams, groups, slots, every op's body, deps,
// labels, fixed time and launch order), so the simulation is the same to the nanosecond.
void check_round_trip(const Program& original) {
  const HardwareProfile hw = load_hardware("h100-sxm");
  const Program back = program_from_chakra(chakra_of(original, hw), hw);
  CHECK(back.ops.size() == original.ops.size());
  CHECK(dep_count(back) == dep_count(original));
  CHECK(back == original);
  CHECK(run_simulation(back, hw).metrics.makespan == run_simulation(original, hw).metrics.makespan);
}

}  // namespace

TEST_CASE("Chakra round trip: a training step (tp 2, pp 2, dp 2, every rank built)") {
  check_round_trip(tiny_step_program());
}

TEST_CASE("Chakra round trip: ring attention (p2p batches, tensor slots)") {
  RingAttentionConfig c;
  c.cp = 4;
  c.seq = 256;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 8;
  check_round_trip(build_ring_attention(c));
}

TEST_CASE("Chakra round trip: a pipeline with explicit stage times (fixed_ns)") {
  PipelineConfig c;
  c.shape.schedule = PipelineSchedule::zb_h1;
  c.time_f = 1e-3;
  c.time_b = 1e-3;
  c.time_w = 5e-4;
  check_round_trip(build_pipeline(c));
}

TEST_CASE("Chakra: ASTRA-sim's all_reduce microbenchmark layout simulates as that all-reduce") {
  // all_reduce.py's 8 NPUs, 1 MB: the same collective as meshsim's own 8-rank all-reduce of
  // 1 MiB per rank (one node of h100-sxm, so the same analytical ring time).
  const HardwareProfile hw = load_hardware("h100-sxm");
  const Program p = program_from_chakra(astra_sim_all_reduce(8, 1 << 20), hw);
  REQUIRE(p.ops.size() == 8);
  REQUIRE(p.groups.size() == 1);
  CHECK(p.groups[0].ranks == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  const auto& c = std::get<CollectiveCall>(p.ops[0].body);
  CHECK(c.kind == CollectiveKind::all_reduce);
  CHECK(c.bytes == 1 << 20);
  const Program own = build_collective(CollectiveConfig{"allreduce", 8, 8, 1, {}}, 1 << 20);
  CHECK(run_simulation(p, hw).metrics.makespan == run_simulation(own, hw).metrics.makespan);
}

TEST_CASE("Chakra: generator.py's compute nodes take their duration_micros") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  chakra::pb::Node child = comp_node(1, 5);
  child.add_data_deps(0);
  ChakraInput in;
  in.ranks.push_back({"two_comp_nodes_dependent.0.et", rank_file({comp_node(0, 5), child})});
  const Program p = program_from_chakra(in, hw);
  REQUIRE(p.ops.size() == 2);
  CHECK(std::vector<OpId>(p.deps(1).begin(), p.deps(1).end()) == std::vector<OpId>{0});
  CHECK(p.ops[0].fixed_ns == 5000);
  // Two 5 us kernels one after the other.
  CHECK(run_simulation(p, hw).metrics.makespan == 10'000);
}

TEST_CASE("Chakra: a compute node without duration is the roofline of num_ops and tensor_size") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  chakra::pb::Node n = comp_node(0, 0);
  chakra::add_int64(n, "num_ops", 1'000'000'000'000);  // 1 TFLOP, no bytes
  ChakraInput in;
  in.ranks.push_back({"roofline.0.et", rank_file({n})});
  const Program p = program_from_chakra(in, hw);
  // launch overhead + flops / (bf16 peak x the "default" efficiency at that size)
  const auto table = hw.compute_efficiency.find("default");
  const double eff =
      table == hw.compute_efficiency.end() ? 1.0 : interpolate_efficiency(table->second, 1e12);
  const double s =
      hw.launch_overhead + 1e12 / (hw.peak_flops[static_cast<std::size_t>(DType::bf16)] * eff);
  CHECK(p.ops[0].fixed_ns == static_cast<std::int64_t>(std::llround(s * 1e9)));
}

TEST_CASE("Chakra: process groups from comm_group.json, ASTRA-sim's format") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  ChakraInput in = astra_sim_all_reduce(4, 4096);
  for (int r = 0; r < 4; ++r) {
    chakra::pb::Node n;
    n.set_id(0);
    n.set_name("ar");
    n.set_type(chakra::pb::COMM_COLL_NODE);
    chakra::add_int64(n, "comm_type", chakra::pb::ALL_REDUCE);
    chakra::add_int64(n, "comm_size", 4096);
    chakra::add_string(n, "pg_name", r < 2 ? "7" : "8");
    in.ranks[static_cast<std::size_t>(r)].bytes = rank_file({n});
  }
  in.comm_groups = R"({"7": [0, 1], "8": [2, 3]})";
  in.comm_groups_origin = "comm_group.json";
  const Program p = program_from_chakra(in, hw);
  REQUIRE(p.groups.size() == 2);
  CHECK(p.groups[0].ranks == std::vector<int>{0, 1});
  CHECK(p.groups[1].ranks == std::vector<int>{2, 3});
  CHECK_NOTHROW(validate_program(p));
  in.comm_groups.clear();
  CHECK_THROWS_WITH_AS(program_from_chakra(in, hw),
                       doctest::Contains("pg_name '7' is not in the comm groups file"), InputError);
}

TEST_CASE("Chakra: bad traces are InputErrors naming the file and the node") {
  const HardwareProfile hw = load_hardware("h100-sxm");
  ChakraInput in = chakra_of(tiny_step_program(), hw);
  SUBCASE("truncated") {
    in.ranks[3].bytes.pop_back();
    CHECK_THROWS_WITH_AS(program_from_chakra(in, hw),
                         doctest::Contains("t.3.et: the node after node id"), InputError);
  }
  SUBCASE("corrupt length") {
    in.ranks[0].bytes = std::string(8, '\xff');
    CHECK_THROWS_WITH_AS(program_from_chakra(in, hw),
                         doctest::Contains("t.0.et: GlobalMetadata at byte 0"), InputError);
  }
  SUBCASE("a rank file fewer than the header's mesh") {
    in.ranks.pop_back();
    CHECK_THROWS_WITH_AS(program_from_chakra(in, hw),
                         doctest::Contains("written for 8 ranks, but 7 rank files"), InputError);
  }
  SUBCASE("an unknown node type") {
    chakra::pb::Node n;
    n.set_id(4);
    n.set_name("load");
    n.set_type(chakra::pb::MEM_LOAD_NODE);
    ChakraInput plain;
    plain.ranks.push_back({"m.0.et", rank_file({n})});
    CHECK_THROWS_WITH_AS(program_from_chakra(plain, hw),
                         doctest::Contains("m.0.et: node 4 'load': node type 2 (MEM_LOAD_NODE) is "
                                           "not simulated"),
                         InputError);
  }
  SUBCASE("a dependency on a node the file does not have") {
    chakra::pb::Node n = comp_node(0, 1);
    n.add_data_deps(9);
    ChakraInput plain;
    plain.ranks.push_back({"d.0.et", rank_file({n})});
    CHECK_THROWS_WITH_AS(program_from_chakra(plain, hw),
                         doctest::Contains("d.0.et: node 0 'COMP_NODE': data_deps names node 9"),
                         InputError);
  }
  SUBCASE("a dependency cycle") {
    chakra::pb::Node a = comp_node(0, 1), b = comp_node(1, 1);
    a.add_data_deps(1);
    b.add_data_deps(0);
    ChakraInput plain;
    plain.ranks.push_back({"c.0.et", rank_file({a, b})});
    CHECK_THROWS_WITH_AS(program_from_chakra(plain, hw), doctest::Contains("form a cycle"),
                         InputError);
  }
}
