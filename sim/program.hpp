#pragma once
// The Program (schedule graph) of ARCHITECTURE.md §2: what one training step launches, rank by rank
// and stream by stream, with the deps, the communication calls and the tensor slots they touch.
//
// Launch order is the order of ops in Program::ops restricted to one rank; stream order is launch
// order restricted to one (rank, stream), as on a CUDA stream.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/dtype.hpp"
#include "sim/kernel_call.hpp"
#include "sim/mesh.hpp"
#include "sim/op_name.hpp"

namespace meshsim {

using OpId = std::int32_t;
using GroupId = std::int32_t;
using StreamId = std::int32_t;

enum class Phase : std::uint8_t { none, fwd, bwd, wgrad, optimizer };
std::string_view to_string(Phase p);
std::optional<Phase> parse_phase(std::string_view name);

struct OpLabels {
  Phase phase = Phase::none;
  int layer = -1;
  int microbatch = -1;
  int step = -1;  // ring step
  int chunk = -1;
  bool operator==(const OpLabels&) const = default;
};

// One point-to-point transfer inside a p2p group, seen from the op that posts it.
struct Transfer {
  int peer = 0;            // destination (for sends) or source (for receives)
  std::int64_t bytes = 0;  // payload
  int tag = 0;             // must agree between the two sides
  SlotId slot = -1;        // buffer sent from or received into
  bool operator==(const Transfer&) const = default;
};

// A batch of sends and receives posted together (batch_isend_irecv, ncclGroupStart/End); the op
// completes when all of its transfers have completed.
struct P2PCall {
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  bool operator==(const P2PCall&) const = default;
};

enum class CollectiveKind : std::uint8_t {
  all_reduce,
  all_gather,
  reduce_scatter,
  all_to_all,
  permute,  // all-to-all whose splits send the whole buffer to one peer: rank i -> i + shift
  broadcast,
  barrier,
};
inline constexpr int kCollectiveKindCount = 7;
std::string_view to_string(CollectiveKind k);
std::optional<CollectiveKind> parse_collective_kind(std::string_view name);

// The algorithm of an all-reduce: automatic picks NVLS inside a node where the profile has it and
// the ring otherwise (NCCL's usual choice); ring, tree and nvls force one. Other kinds: automatic,
// or userbuffers for a permute, all-gather or reduce-scatter inside one NVLink domain: Transformer
// Engine's userbuffers (transformer_engine/common/comm_gemm_overlap/userbuffers), copies between
// buffers registered once over CUDA IPC, without NCCL's per-call protocol latency (priced in
// sim/network_analytical: userbuffers_latency).
enum class CollectiveAlgo : std::uint8_t { automatic, ring, tree, nvls, userbuffers };
std::string_view to_string(CollectiveAlgo a);
std::optional<CollectiveAlgo> parse_collective_algo(std::string_view name);

// bytes: the per-rank buffer for all_reduce, broadcast and permute; the gathered total for
// all_gather, reduce_scatter and all_to_all (the nccl-tests convention).
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::all_reduce;
  GroupId group = 0;
  std::int64_t bytes = 0;
  DType dtype = DType::bf16;
  int shift = 0;  // permute: position offset in the group; broadcast: root position
  SlotId input = -1;
  SlotId output = -1;
  CollectiveAlgo algo = CollectiveAlgo::automatic;
  bool operator==(const CollectiveCall&) const = default;
};

using OpBody = std::variant<KernelCall, P2PCall, CollectiveCall>;

struct Op {
  OpId id = 0;
  int rank = 0;
  StreamId stream = 0;
  // An earlier op of the same rank the host waits for before it issues this op (-1: none): a
  // device-to-host copy read on the host (`.cpu()`, `.item()`, an event or stream synchronize).
  // Simulated by the host issue clock (ARCHITECTURE.md §3); the executors wait anyway.
  OpId host_wait = -1;
  OpName name;  // interned (sim/op_name.hpp)
  OpLabels labels;
  OpBody body;
  // A duration fixed by the builder (explicit stage times, a fixed p2p time), used instead of the
  // cost model: the kernel's time, each transfer's time (a p2p op) or the collective's time. -1:
  // the cost model decides.
  std::int64_t fixed_ns = -1;

  bool is_compute() const { return std::holds_alternative<KernelCall>(body); }
  bool operator==(const Op&) const = default;
};

struct Group {
  GroupId id = 0;
  std::string dim;         // mesh dimension the group spans ("cp", "tp", ...)
  std::vector<int> ranks;  // in group position order
  // Folding (ARCHITECTURE.md §2): when the builder builds only some members of a group whose
  // other members run identical programs, the group holds the built members and timed_as the
  // whole group; its collectives are costed as collectives of timed_as at its placement. Empty:
  // the group is costed as itself.
  std::vector<int> timed_as;
  bool operator==(const Group&) const = default;
};

struct TensorSlot {
  SlotId id = 0;
  int rank = 0;
  std::string name;
  DType dtype = DType::bf16;
  std::vector<std::int64_t> shape;
  // Attention operands: the global sequence positions along the token axis, in row order. A slot
  // with a leading parts axis (an all-gathered [ranks, 2, batch, tokens, ...] K/V buffer) lists
  // each part's positions in turn. Empty for other slots.
  std::vector<TokenRange> tokens = {};
  bool operator==(const TensorSlot&) const = default;
};

struct Program {
  std::string description;
  Mesh mesh;
  bool single_queue = true;  // CUDA_DEVICE_MAX_CONNECTIONS=1
  // Issued op by op by a framework's host thread (a training step in PyTorch): the engine runs
  // the host issue clock (ARCHITECTURE.md §3) when the profile gives host_op_us. Off: the host is
  // always ahead (a benchmark loop, explicit stage times).
  bool host_issue = false;
  std::vector<std::string> streams;
  std::vector<Group> groups;
  std::vector<TensorSlot> slots;
  std::vector<Op> ops;
  // Each op's deps (ops of the same rank that must have completed), in compressed sparse row form:
  // op i's are dep_targets[dep_offsets[i], dep_offsets[i + 1]). One array for all ops, no block
  // per op (issue 22's flat Program).
  std::vector<std::int32_t> dep_offsets = {0};
  std::vector<OpId> dep_targets;

  int world_size() const { return mesh.world_size(); }
  std::span<const OpId> deps(OpId op) const {
    const auto i = static_cast<std::size_t>(op);
    return {dep_targets.data() + dep_offsets[i],
            static_cast<std::size_t>(dep_offsets[i + 1] - dep_offsets[i])};
  }
  // Appends `op` (its id must be ops.size()) with its deps; no checks (ProgramBuilder::add checks,
  // a loaded Program is checked by check_program).
  void append(Op op, std::span<const OpId> op_deps);
  bool operator==(const Program&) const = default;
};

// Builds a Program op by op; launch order per rank is the order of the calls. Checks the
// structural rules as it goes (ranks, streams, deps of the same rank and already emitted).
class ProgramBuilder {
 public:
  ProgramBuilder(Mesh mesh, bool single_queue, std::string description);

  StreamId stream(std::string_view name);
  GroupId group(std::string_view dim, std::vector<int> ranks, std::vector<int> timed_as = {});
  SlotId slot(int rank, std::string name, DType dtype, std::vector<std::int64_t> shape,
              std::vector<TokenRange> tokens = {});

  OpId add(int rank, StreamId stream, OpName name, OpLabels labels, OpBody body,
           std::span<const OpId> deps);
  OpId add(int rank, StreamId stream, OpName name, OpLabels labels, OpBody body,
           std::initializer_list<OpId> deps = {}) {
    return add(rank, stream, name, labels, std::move(body),
               std::span<const OpId>(deps.begin(), deps.size()));
  }
  void set_fixed_time(OpId op, std::int64_t ns);
  void set_host_issue(bool on) { program_.host_issue = on; }
  // Before issuing `op` the host waits for `waited` (an earlier op of its rank) to complete.
  void set_host_wait(OpId op, OpId waited);
  // The same for the next op added on `waited`'s rank (where the host code reads a device value).
  void host_wait_next(OpId waited);
  // Reserves room for `ops` ops and `slots` tensor slots (estimates; the Program still grows past
  // them).
  void reserve(std::size_t ops, std::size_t slots = 0);

  const Program& peek() const { return program_; }
  Program finish() &&;

 private:
  Program program_;
  std::vector<OpId> host_wait_next_;  // per rank, -1: none
};

}  // namespace meshsim
