#include "sim/program.hpp"
#include "sim/enum_names.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <utility>

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {
namespace {

constexpr std::array<std::string_view, 5> kPhaseNames = {"none", "fwd", "bwd", "wgrad",
                                                         "optimizer"};
constexpr std::array<std::string_view, 5> kAlgoNames = {"automatic", "ring", "tree", "nvls",
                                                        "userbuffers"};
constexpr std::array<std::string_view, kCollectiveKindCount> kCollectiveNames = {
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "permute", "broadcast", "barrier"};

}  // namespace

std::string_view to_string(Phase p) {
  return kPhaseNames[static_cast<std::size_t>(p)];
}
std::optional<Phase> parse_phase(std::string_view name) {
  return parse_enum_name<Phase>(kPhaseNames, name);
}
std::string_view to_string(CollectiveAlgo a) {
  return enum_name(kAlgoNames, a);
}
std::optional<CollectiveAlgo> parse_collective_algo(std::string_view name) {
  return parse_enum_name<CollectiveAlgo>(kAlgoNames, name);
}
std::string_view to_string(CollectiveKind k) {
  return kCollectiveNames[static_cast<std::size_t>(k)];
}
std::optional<CollectiveKind> parse_collective_kind(std::string_view name) {
  return parse_enum_name<CollectiveKind>(kCollectiveNames, name);
}

ProgramBuilder::ProgramBuilder(Mesh mesh, bool single_queue, std::string description) {
  program_.mesh = std::move(mesh);
  program_.single_queue = single_queue;
  program_.description = std::move(description);
}

StreamId ProgramBuilder::stream(std::string_view name) {
  for (std::size_t i = 0; i < program_.streams.size(); ++i) {
    if (program_.streams[i] == name) return static_cast<StreamId>(i);
  }
  program_.streams.emplace_back(name);
  return static_cast<StreamId>(program_.streams.size() - 1);
}

GroupId ProgramBuilder::group(std::string_view dim, std::vector<int> ranks,
                              std::vector<int> timed_as) {
  for (const auto& g : program_.groups) {
    if (g.dim == dim && g.ranks == ranks && g.timed_as == timed_as) return g.id;
  }
  for (int r : ranks) {
    MESHSIM_CHECK(r >= 0 && r < program_.world_size(), fmt::format("group rank {} outside", r));
  }
  const auto id = static_cast<GroupId>(program_.groups.size());
  program_.groups.push_back(Group{id, std::string(dim), std::move(ranks), std::move(timed_as)});
  return id;
}

SlotId ProgramBuilder::slot(int rank, std::string name, DType dtype,
                            std::vector<std::int64_t> shape, std::vector<TokenRange> tokens) {
  const auto id = static_cast<SlotId>(program_.slots.size());
  program_.slots.push_back(
      TensorSlot{id, rank, std::move(name), dtype, std::move(shape), std::move(tokens)});
  return id;
}

void Program::append(Op op, std::span<const OpId> op_deps) {
  const std::size_t n = dep_targets.size() + op_deps.size();
  MESHSIM_CHECK(n <= static_cast<std::size_t>(INT32_MAX), "over 2^31 deps");
  // insert may reallocate before it reads: deps taken from this Program's own array go by a copy.
  const std::less_equal<const OpId*> le;
  if (!op_deps.empty() && le(dep_targets.data(), op_deps.data()) &&
      le(op_deps.data(), dep_targets.data() + dep_targets.size())) {
    const std::vector<OpId> copy(op_deps.begin(), op_deps.end());
    append(std::move(op), copy);
    return;
  }
  dep_targets.insert(dep_targets.end(), op_deps.begin(), op_deps.end());
  dep_offsets.push_back(static_cast<std::int32_t>(n));
  ops.push_back(std::move(op));
}

OpId ProgramBuilder::add(int rank, StreamId stream, OpName name, OpLabels labels, OpBody body,
                         std::span<const OpId> deps) {
  MESHSIM_CHECK(rank >= 0 && rank < program_.world_size(), fmt::format("op rank {}", rank));
  MESHSIM_CHECK(stream >= 0 && static_cast<std::size_t>(stream) < program_.streams.size(),
                "unknown stream");
  const auto id = static_cast<OpId>(program_.ops.size());
  for (OpId d : deps) {
    MESHSIM_CHECK(d >= 0 && d < id, fmt::format("op {} depends on op {} not yet emitted", name, d));
    MESHSIM_CHECK(program_.ops[static_cast<std::size_t>(d)].rank == rank,
                  fmt::format("op {} depends on an op of another rank", name));
  }
  OpId host_wait = -1;  // set by host_wait_next for this rank's next op
  if (!host_wait_next_.empty())
    std::swap(host_wait, host_wait_next_[static_cast<std::size_t>(rank)]);
  program_.append(Op{.id = id,
                     .rank = rank,
                     .stream = stream,
                     .host_wait = host_wait,
                     .name = name,
                     .labels = labels,
                     .body = std::move(body),
                     .fixed_ns = -1},
                  deps);
  return id;
}

void ProgramBuilder::set_fixed_time(OpId op, std::int64_t ns) {
  MESHSIM_CHECK(op >= 0 && static_cast<std::size_t>(op) < program_.ops.size(), "unknown op");
  MESHSIM_CHECK(ns >= 0, "negative fixed time");
  program_.ops[static_cast<std::size_t>(op)].fixed_ns = ns;
}

void ProgramBuilder::set_host_wait(OpId op, OpId waited) {
  MESHSIM_CHECK(op >= 0 && static_cast<std::size_t>(op) < program_.ops.size(), "unknown op");
  MESHSIM_CHECK(waited >= 0 && waited < op, "a host wait names an earlier op");
  MESHSIM_CHECK(program_.ops[static_cast<std::size_t>(waited)].rank ==
                    program_.ops[static_cast<std::size_t>(op)].rank,
                "a host wait names an op of the same rank");
  program_.ops[static_cast<std::size_t>(op)].host_wait = waited;
}

void ProgramBuilder::host_wait_next(OpId waited) {
  MESHSIM_CHECK(waited >= 0 && static_cast<std::size_t>(waited) < program_.ops.size(),
                "unknown op");
  if (host_wait_next_.empty()) {
    host_wait_next_.assign(static_cast<std::size_t>(program_.world_size()), -1);
  }
  host_wait_next_[static_cast<std::size_t>(program_.ops[static_cast<std::size_t>(waited)].rank)] =
      waited;
}

void ProgramBuilder::reserve(std::size_t ops, std::size_t slots) {
  program_.ops.reserve(ops);
  program_.dep_offsets.reserve(ops + 1);
  program_.dep_targets.reserve(2 * ops);  // most ops wait for one or two
  program_.slots.reserve(slots);
}

Program ProgramBuilder::finish() && {
  return std::move(program_);
}

}  // namespace meshsim
