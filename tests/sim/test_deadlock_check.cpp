#include <doctest/doctest.h>

#include <string>

#include "sim/comm_plan.hpp"
#include "sim/error.hpp"
#include "tests/sim/tiny_programs.hpp"

using namespace meshsim;
using namespace meshsim::testing;

namespace {

std::string deadlock_of(const Program& p) {
  try {
    validate_program(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("two blocking receives posted before the sends deadlock, and the cycle is listed") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), false, "t");
  const StreamId s = b.stream("comm");
  b.add(0, s, "recv from 1", {}, recv_from(1, 8));
  b.add(0, s, "send to 1", {}, send_to(1, 8));
  b.add(1, s, "recv from 0", {}, recv_from(0, 8));
  b.add(1, s, "send to 0", {}, send_to(0, 8));
  const std::string e = deadlock_of(std::move(b).finish());
  CHECK(e.find("deadlock") != std::string::npos);
  CHECK(e.find("rank 0 comm 'recv from 1'") != std::string::npos);
  CHECK(e.find("rank 1 comm 'send to 0'") != std::string::npos);
}

TEST_CASE("the same exchange as one batched group is fine") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), false, "t");
  const StreamId s = b.stream("comm");
  b.add(0, s, "x", {}, exchange(1, 1, 8));
  b.add(1, s, "x", {}, exchange(0, 0, 8));
  CHECK(deadlock_of(std::move(b).finish()).empty());
}

TEST_CASE("send and receive on separate streams do not deadlock without the single queue") {
  // Each rank posts its receive on stream A and its send on stream B: with several hardware
  // queues both get dispatched; under the single queue the same program is still fine because
  // dispatch (not completion) is what launch order waits for.
  for (bool single : {false, true}) {
    ProgramBuilder b(Mesh({{"cp", 2}}, 8), single, "t");
    const StreamId a = b.stream("recv");
    const StreamId c = b.stream("send");
    b.add(0, a, "r", {}, recv_from(1, 8));
    b.add(0, c, "s", {}, send_to(1, 8));
    b.add(1, a, "r", {}, recv_from(0, 8));
    b.add(1, c, "s", {}, send_to(0, 8));
    CHECK(deadlock_of(std::move(b).finish()).empty());
  }
}

TEST_CASE("a dep on a receive that waits for a send behind it deadlocks") {
  ProgramBuilder b(Mesh({{"cp", 2}}, 8), false, "t");
  const StreamId comm = b.stream("comm");
  const StreamId other = b.stream("comm2");
  const OpId r0 = b.add(0, comm, "recv", {}, recv_from(1, 8));
  b.add(0, other, "send after recv", {}, send_to(1, 8), {r0});
  const OpId r1 = b.add(1, comm, "recv", {}, recv_from(0, 8));
  b.add(1, other, "send after recv", {}, send_to(0, 8), {r1});
  CHECK(deadlock_of(std::move(b).finish()).find("deadlock") != std::string::npos);
}

TEST_CASE("collectives posted in opposite orders on two groups deadlock") {
  ProgramBuilder b(Mesh({{"tp", 2}}, 8), false, "t");
  const StreamId s = b.stream("comm");
  const GroupId g1 = b.group("tp", {0, 1});
  const GroupId g2 = b.group("tp2", {0, 1});
  const CollectiveCall c1{CollectiveKind::all_reduce, g1, 64, DType::fp32};
  const CollectiveCall c2{CollectiveKind::all_reduce, g2, 64, DType::fp32};
  b.add(0, s, "ar g1", {}, c1);
  b.add(0, s, "ar g2", {}, c2);
  b.add(1, s, "ar g2", {}, c2);
  b.add(1, s, "ar g1", {}, c1);
  CHECK(deadlock_of(std::move(b).finish()).find("deadlock") != std::string::npos);
}
