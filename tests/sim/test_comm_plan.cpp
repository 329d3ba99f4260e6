#include <doctest/doctest.h>

#include <string>

#include "sim/comm_plan.hpp"
#include "sim/error.hpp"
#include "tests/sim/tiny_programs.hpp"

using namespace meshsim;
using namespace meshsim::testing;

namespace {

std::string error_of(const Program& p) {
  try {
    validate_program(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("sends and receives match per ordered pair in posting order") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "t");
  const StreamId s = b.stream("comm");
  const OpId s1 = b.add(0, s, "send a", {}, send_to(1, 100, 7));
  const OpId s2 = b.add(0, s, "send b", {}, send_to(1, 200, 8));
  const OpId r1 = b.add(1, s, "recv a", {}, recv_from(0, 100, 7));
  const OpId r2 = b.add(1, s, "recv b", {}, recv_from(0, 200, 8));
  const Program p = std::move(b).finish();
  const CommPlan plan = validate_program(p);
  REQUIRE(plan.transfers.size() == 2);
  CHECK(plan.transfers[0].send_op == s1);
  CHECK(plan.transfers[0].recv_op == r1);
  CHECK(plan.transfers[1].send_op == s2);
  CHECK(plan.transfers[1].recv_op == r2);
  CHECK(plan.transfers[1].bytes == 200);
  // op -> transfers CSR: the second send posts transfer 1 only
  CHECK(plan.op_transfer_begin[2] - plan.op_transfer_begin[1] == 1);
  CHECK(plan.op_transfers[static_cast<std::size_t>(plan.op_transfer_begin[1])] == 1);
}

TEST_CASE("a size or tag mismatch names both sides") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "t");
  const StreamId s = b.stream("comm");
  b.add(0, s, "kv send", {}, send_to(1, 100, 3));
  b.add(1, s, "kv recv", {}, recv_from(0, 64, 3));
  const std::string e = error_of(std::move(b).finish());
  CHECK(e.find("rank 0 comm 'kv send'") != std::string::npos);
  CHECK(e.find("rank 1 comm 'kv recv'") != std::string::npos);
  CHECK(e.find("100") != std::string::npos);
  CHECK(e.find("64") != std::string::npos);
}

TEST_CASE("an unmatched send or receive is an error naming it") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), true, "t");
  const StreamId s = b.stream("comm");
  b.add(0, s, "lonely send", {}, send_to(1, 100));
  CHECK(error_of(std::move(b).finish()).find("'lonely send'") != std::string::npos);

  ProgramBuilder b2(Mesh({{"cp", 2}}, 8), true, "t");
  b2.stream("comm");
  b2.add(1, 0, "lonely recv", {}, recv_from(0, 100));
  const std::string e = error_of(std::move(b2).finish());
  CHECK(e.find("'lonely recv'") != std::string::npos);
  CHECK(e.find("no matching send") != std::string::npos);
}

TEST_CASE("collectives match by position per group; kind and size must agree") {
  ProgramBuilder b(Mesh({{"tp", 2}}, 8), true, "t");
  const StreamId s = b.stream("tp_comm");
  const GroupId g = b.group("tp", {0, 1});
  const CollectiveCall ar{CollectiveKind::all_reduce, g, 1024, DType::bf16, 0, -1, -1};
  b.add(0, s, "ar0", {}, ar);
  b.add(1, s, "ar1", {}, ar);
  const Program good = b.peek();
  const CommPlan plan = validate_program(good);
  REQUIRE(plan.collectives.size() == 1);
  CHECK(plan.collectives[0].members == std::vector<OpId>{0, 1});
  CHECK(plan.op_collective[1] == 0);

  CollectiveCall other = ar;
  other.bytes = 2048;
  b.add(0, s, "second ar", {}, ar);
  b.add(1, s, "second ar (bigger)", {}, other);
  const std::string e = error_of(std::move(b).finish());
  CHECK(e.find("'second ar'") != std::string::npos);
  CHECK(e.find("'second ar (bigger)'") != std::string::npos);
}

TEST_CASE("a member posting fewer collectives is reported") {
  ProgramBuilder b(Mesh({{"tp", 2}}, 8), true, "t");
  const StreamId s = b.stream("tp_comm");
  const GroupId g = b.group("tp", {0, 1});
  b.add(0, s, "only rank 0", {}, CollectiveCall{CollectiveKind::barrier, g, 0, DType::fp32});
  CHECK(error_of(std::move(b).finish()).find("'only rank 0'") != std::string::npos);
}

TEST_CASE("structural errors in loaded programs are InputErrors") {
  Program p;
  p.mesh = Mesh({{"cp", 2}}, 8);
  p.streams = {"compute"};
  p.append(Op{.id = 0,
              .rank = 5,
              .stream = 0,
              .host_wait = -1,
              .name = "bad rank",
              .labels = {},
              .body = vector_kernel(),
              .fixed_ns = -1},
           {});
  CHECK(error_of(p).find("rank 5 outside") != std::string::npos);
  p.ops[0].rank = 0;
  p.ops[0].stream = 3;
  CHECK(error_of(p).find("stream 3") != std::string::npos);
  p.ops[0].stream = 0;
  p.ops[0].body = P2PCall{{Transfer{0, 10, 0, -1}}, {}};
  CHECK(error_of(p).find("not another rank") != std::string::npos);
  p.ops[0].body = KernelCall{KernelKind::gemm, DType::bf16, VectorShape{3}, {}, {}};
  CHECK(error_of(p).find("wrong shape") != std::string::npos);
}

TEST_CASE("a folded group's timed_as must hold its members, once each, inside the mesh") {
  Program p;
  p.mesh = Mesh({{"dp", 4}}, 8);
  p.streams = {"comm"};
  p.groups.push_back(Group{0, "dp", {0}, {0, 1, 2, 3}});
  CHECK(error_of(p).empty());
  p.groups[0].timed_as = {1, 2, 3};
  CHECK(error_of(p).find("groups[0]: member 0 is not in timed_as") != std::string::npos);
  p.groups[0].timed_as = {0, 1, 1};
  CHECK(error_of(p).find("timed_as lists a rank twice") != std::string::npos);
  p.groups[0].timed_as = {0, 9};
  CHECK(error_of(p).find("timed_as holds a rank outside the mesh of 4 ranks") != std::string::npos);
}

TEST_CASE("userbuffers is for permutes, all-gathers and reduce-scatters") {
  for (const CollectiveKind kind : {CollectiveKind::permute, CollectiveKind::all_gather,
                                    CollectiveKind::reduce_scatter, CollectiveKind::all_reduce}) {
    ProgramBuilder b(Mesh({{"tp", 2}}, 8), true, "t");
    const StreamId s = b.stream("tp_comm");
    const GroupId g = b.group("tp", {0, 1});
    CollectiveCall c{kind, g, 1024, DType::bf16};
    c.shift = kind == CollectiveKind::permute ? 1 : 0;
    c.algo = CollectiveAlgo::userbuffers;
    b.add(0, s, "ub", {}, c);
    b.add(1, s, "ub", {}, c);
    const std::string e = error_of(std::move(b).finish());
    CAPTURE(to_string(kind));
    if (kind == CollectiveKind::all_reduce) {
      CHECK(e.find("algorithm userbuffers is for permute, all_gather and reduce_scatter only") !=
            std::string::npos);
    } else {
      CHECK(e.empty());
    }
  }
}
