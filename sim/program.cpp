#include "sim/program.hpp"
#include "sim/enum_names.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

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
  // Room first, so that the op, its deps and its offset are appended together or not at all (and
  // deps read from this Program's own array stay valid while they are copied).
  const auto room_for_one = [](auto& v) {
    if (v.size() == v.capacity()) v.reserve(std::max<std::size_t>(16, 2 * v.capacity()));
  };
  room_for_one(ops);
  room_for_one(dep_offsets);
  if (n > dep_targets.capacity()) {
    std::vector<OpId> grown;
    grown.reserve(std::max(n, 2 * dep_targets.capacity()));
    grown.insert(grown.end(), dep_targets.begin(), dep_targets.end());
    grown.insert(grown.end(), op_deps.begin(), op_deps.end());
    dep_targets.swap(grown);
  } else {
    for (const OpId d : op_deps) dep_targets.push_back(d);
  }
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
  program_.append(Op{.id = id,
                     .rank = rank,
                     .stream = stream,
                     .host_wait = -1,
                     .name = name,
                     .labels = labels,
                     .body = std::move(body),
                     .fixed_ns = -1},
                  deps);
  if (!host_wait_next_.empty() && host_wait_next_[static_cast<std::size_t>(rank)] >= 0) {
    program_.ops.back().host_wait = host_wait_next_[static_cast<std::size_t>(rank)];
    host_wait_next_[static_cast<std::size_t>(rank)] = -1;
  }
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
