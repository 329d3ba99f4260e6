#pragma once
// Chakra traces built in the tests (no binary files are checked in): Programs from the schedule
// builders written by traces/chakra_writer, and hand-made traces in the layout of MLCommons
// Chakra's generator (src/generator/generator.py) and ASTRA-sim's example workloads
// (examples/workload/microbenchmarks/generator_scripts/*.py).
#include <cstdint>
#include <string>
#include <vector>

#include "schedules/training_step.hpp"
#include "sim/cost_model.hpp"
#include "sim/run.hpp"
#include "tests/schedules/tiny_models.hpp"
#include "traces/chakra_codec.hpp"
#include "traces/chakra_reader.hpp"
#include "traces/chakra_writer.hpp"

namespace meshsim::test {

// A step of the tiny GQA model on tp 2 x pp 2 x dp 2 (8 ranks), every rank built.
inline Program tiny_step_program() {
  StepPlan p;
  p.tp = 2;
  p.pp = 2;
  p.dp = 2;
  p.global_batch = 8;
  p.fold_dp = false;
  p.fold_tp = false;
  return build_training_step(tiny_gqa_model(4), p, 8);
}

// The Chakra files of `program` with its compute ops' durations on `hw`.
inline ChakraInput chakra_of(const Program& program, const HardwareProfile& hw) {
  const Durations d = estimate_durations(program, validate_program(program), hw);
  const ChakraTrace t = program_to_chakra(program, d.ops);
  ChakraInput in;
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    in.ranks.push_back({"t." + std::to_string(r) + ".et", t.ranks[r]});
  }
  in.comm_groups = t.comm_groups;
  in.comm_groups_origin = "comm_group.json";
  return in;
}

// One rank file: GlobalMetadata version 0.0.4 (no attributes) then `nodes`.
inline std::string rank_file(const std::vector<chakra::pb::Node>& nodes) {
  std::string out;
  chakra::pb::GlobalMetadata meta;
  meta.set_version("0.0.4");
  chakra::append_delimited(out, meta);
  for (const auto& n : nodes) chakra::append_delimited(out, n);
  return out;
}

// ASTRA-sim's all_reduce.py for `npus` NPUs: rank r's file holds one COMM_COLL_NODE with id r
// (the script's running node id), is_cpu_op false, comm_type ALL_REDUCE, comm_size `bytes`
// (int64_val), and no pg_name (the collective spans every NPU).
inline ChakraInput astra_sim_all_reduce(int npus, std::int64_t bytes) {
  ChakraInput in;
  for (int r = 0; r < npus; ++r) {
    chakra::pb::Node n;
    n.set_id(static_cast<std::uint64_t>(r));
    n.set_name("all_reduce_" + std::to_string(npus) + "npus_1MB");
    n.set_type(chakra::pb::COMM_COLL_NODE);
    chakra::add_bool(n, "is_cpu_op", false);
    chakra::add_int64(n, "comm_type", chakra::pb::ALL_REDUCE);
    chakra::add_int64(n, "comm_size", bytes);
    in.ranks.push_back({"all_reduce." + std::to_string(r) + ".et", rank_file({n})});
  }
  return in;
}

// Chakra generator.py's COMP_NODE: is_cpu_op false, duration_micros `micros`.
inline chakra::pb::Node comp_node(std::uint64_t id, std::uint64_t micros) {
  chakra::pb::Node n;
  n.set_id(id);
  n.set_name("COMP_NODE");
  n.set_type(chakra::pb::COMP_NODE);
  n.set_duration_micros(micros);
  chakra::add_bool(n, "is_cpu_op", false);
  return n;
}

}  // namespace meshsim::test
