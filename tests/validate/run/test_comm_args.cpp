#include <doctest/doctest.h>

#include "sim/comm_plan.hpp"
#include "sim/error.hpp"
#include "sim/program.hpp"
#include "validate/run/comm_args.hpp"

using namespace meshsim;

namespace {

// Two ranks, one group; per rank slots "in" and "out" (fp32 [16] each).
struct TwoRanks {
  ProgramBuilder b{Mesh({{"tp", 2}}, 8), true, "comm args"};
  StreamId comm = b.stream("comm");
  GroupId group = b.group("tp", {0, 1});
  SlotId in[2], out[2];
  TwoRanks() {
    for (int r = 0; r < 2; ++r) {
      in[r] = b.slot(r, "in", DType::fp32, {16});
      out[r] = b.slot(r, "out", DType::fp32, {16});
    }
  }
  void both(CollectiveKind kind, std::int64_t bytes, bool same_slot = false, int shift = 0) {
    for (int r = 0; r < 2; ++r) {
      const SlotId o = out[r];
      const SlotId i = same_slot ? out[r] : in[r];
      b.add(r, comm, "c", {}, CollectiveCall{kind, group, bytes, DType::fp32, shift, i, o});
    }
  }
};

struct Resolved {
  Program program;
  CommPlan plan;
  TensorStore store;
  CommArgs args;
  explicit Resolved(Program p, int rank = 1)
      : program(std::move(p)),
        plan(validate_program(program)),
        store(program, rank, comm_scratch_bytes(program, plan, rank)),
        args(program, plan, store) {}
  std::byte* slot(const char* name) {
    for (const auto& s : program.slots) {
      if (s.rank == store.rank() && s.name == name) return store.bytes(s.id).data();
    }
    return nullptr;
  }
};

}  // namespace

TEST_CASE("all-gather and reduce-scatter: counts per rank, buffers, in-place positions") {
  TwoRanks t;
  t.both(CollectiveKind::all_gather, 64);      // 16 floats gathered: 8 per rank
  t.both(CollectiveKind::reduce_scatter, 64);  // 16 floats in, 8 out
  t.both(CollectiveKind::all_gather, 64, true);
  t.both(CollectiveKind::reduce_scatter, 64, true);
  Resolved r(std::move(t.b).finish());
  const auto& ag = r.args.collective(r.program.ops[1].id);  // rank 1's first
  CHECK(ag.count == 8);
  CHECK(ag.position == 1);
  CHECK(ag.size == 2);
  CHECK(ag.ordinal == 0);
  CHECK(ag.send == r.slot("in"));
  CHECK(ag.recv == r.slot("out"));
  CHECK_FALSE(ag.in_place);
  const auto& rs = r.args.collective(r.program.ops[3].id);
  CHECK(rs.count == 8);
  CHECK(rs.ordinal == 1);
  const auto& ag_in_place = r.args.collective(r.program.ops[5].id);
  CHECK(ag_in_place.in_place);
  CHECK(ag_in_place.send == r.slot("out") + 8 * 4);  // position 1 x 8 floats
  const auto& rs_in_place = r.args.collective(r.program.ops[7].id);
  CHECK(rs_in_place.in_place);
  CHECK(rs_in_place.send == r.slot("out"));
  CHECK(rs_in_place.recv == r.slot("out") + 8 * 4);
}

TEST_CASE("permute, broadcast, all-to-all: peers, root, staging") {
  TwoRanks t;
  t.both(CollectiveKind::permute, 32, false, 1);
  t.both(CollectiveKind::broadcast, 32, false, 1);  // root: position 1
  t.both(CollectiveKind::all_to_all, 64, true);
  t.both(CollectiveKind::barrier, 0);
  Resolved r(std::move(t.b).finish());
  const auto& perm = r.args.collective(r.program.ops[1].id);
  CHECK(perm.count == 8);
  CHECK(perm.send_to == 0);
  CHECK(perm.recv_from == 0);
  const auto& bcast = r.args.collective(r.program.ops[3].id);
  CHECK(bcast.root == 1);
  CHECK(bcast.send == bcast.recv);
  CHECK(bcast.recv == r.slot("out"));
  CHECK(bcast.stage_from == r.slot("in"));  // the root copies its input into the buffer
  CHECK(bcast.stage_bytes == 32);
  const auto& a2a = r.args.collective(r.program.ops[5].id);
  CHECK(a2a.count == 8);
  CHECK(a2a.stage_from == r.slot("out"));
  CHECK(a2a.send == r.store.scratch(0).data());
  CHECK(r.store.scratch(0).size() == 64);
  CHECK(r.args.collective(r.program.ops[7].id).count == 0);
}

TEST_CASE(
    "bad collectives: a slot too small, bytes that do not split, a reduction over another type") {
  {
    TwoRanks t;
    t.both(CollectiveKind::all_reduce, 128);  // "out" holds 64 bytes
    CHECK_THROWS_WITH_AS(Resolved(std::move(t.b).finish()),
                         doctest::Contains("the output needs 128 bytes but slot 'out' holds 64"),
                         InputError);
  }
  {
    TwoRanks t;
    t.both(CollectiveKind::all_gather, 36);  // 9 floats over 2 ranks
    CHECK_THROWS_WITH_AS(Resolved(std::move(t.b).finish()),
                         doctest::Contains("does not split into 2 equal parts"), InputError);
  }
  {
    ProgramBuilder b{Mesh({{"tp", 1}}, 8), true, "dtype"};
    const StreamId comm = b.stream("comm");
    const GroupId g = b.group("tp", {0});
    const SlotId s = b.slot(0, "half", DType::bf16, {4});
    b.add(0, comm, "ar", {},
          CollectiveCall{CollectiveKind::all_reduce, g, 16, DType::fp32, 0, -1, s});
    CHECK_THROWS_WITH_AS(Resolved(std::move(b).finish(), 0), doctest::Contains("of type bf16"),
                         InputError);
  }
}

TEST_CASE("p2p: transfers in posting order per peer; slot-less buffers in the stream's scratch") {
  ProgramBuilder b{Mesh({{"pp", 2}}, 8), true, "p2p"};
  const StreamId comm = b.stream("comm");
  const SlotId buf = b.slot(1, "buf", DType::fp32, {4});
  // rank 0 sends twice to rank 1 (ops 0 and 1); rank 1 receives both in one group (op 2), the
  // first into "buf", and sends 8 bytes back without a slot.
  b.add(0, comm, "s0", {}, P2PCall{{Transfer{1, 16, 0, -1}}, {}});
  b.add(0, comm, "s1", {}, P2PCall{{Transfer{1, 24, 1, -1}}, {Transfer{1, 8, 2, -1}}});
  b.add(1, comm, "r", {},
        P2PCall{{Transfer{0, 8, 2, -1}}, {Transfer{0, 16, 0, buf}, Transfer{0, 24, 1, -1}}});
  Resolved r(std::move(b).finish());
  const auto& p = r.args.p2p(2);
  REQUIRE(p.recvs.size() == 2);
  CHECK(r.plan.transfers[static_cast<std::size_t>(p.recvs[0].transfer)].send_op == 0);
  CHECK(r.plan.transfers[static_cast<std::size_t>(p.recvs[1].transfer)].send_op == 1);
  CHECK(p.recvs[0].data == r.slot("buf"));
  // Scratch: the slot-less send (8 bytes) first, then the slot-less receive (24 bytes).
  CHECK(r.store.scratch(0).size() == 32);
  CHECK(p.sends[0].data == r.store.scratch(0).data());
  CHECK(p.recvs[1].data == r.store.scratch(0).data() + 8);
  CHECK(p.recvs[1].peer == 0);
  CHECK_THROWS_AS((void)r.args.collective(2), InvariantError);
}
