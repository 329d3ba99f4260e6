#include "traces/chakra_reader.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <queue>
#include <unordered_map>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/json_fields.hpp"
#include "sim/program_json.hpp"
#include "traces/chakra_codec.hpp"
#include "traces/chakra_nodes.hpp"

namespace meshsim {
namespace {

using chakra::pb::Node;

struct RankFile {
  std::string origin;
  std::vector<Node> nodes;
  std::optional<std::string> header;  // "meshsim_program"
};

RankFile read_rank(const ChakraRankFile& f) {
  RankFile out{f.origin, {}, std::nullopt};
  if (f.bytes.empty()) {
    throw InputError(
        fmt::format("{}: empty file (a Chakra trace starts with its GlobalMetadata)", f.origin));
  }
  chakra::DelimitedReader in(f.bytes, f.origin);
  chakra::pb::GlobalMetadata meta;
  in.next(meta, "GlobalMetadata");
  for (const auto& a : meta.attr()) {
    if (a.name() == "meshsim_program") out.header = a.string_val();
  }
  while (!in.at_end()) {
    Node n;
    in.next(n, out.nodes.empty() ? std::string("the first node")
                                 : fmt::format("the node after node id {}", out.nodes.back().id()));
    out.nodes.push_back(std::move(n));
  }
  return out;
}

// One op of a rank before ordering: its nodes' ids and deps.
struct Pending {
  chakra::NodeOp op;
  std::string where;
  std::vector<std::uint64_t> data_deps, ctrl_deps;
  std::vector<std::size_t> deps, ctrl;  // resolved: indices of the rank's pending ops
};

// The rank's ops in file order; the transfers of one p2p batch (consecutive nodes of one op_id)
// become one op. Returns the ops and each node id's op.
std::vector<Pending> rank_ops(const RankFile& f, int rank, const chakra::NodeContext& ctx,
                              std::unordered_map<std::uint64_t, std::size_t>& of_node) {
  std::vector<Pending> ops;
  for (const Node& n : f.nodes) {
    const std::string where = chakra::describe_node(f.origin, n);
    chakra::NodeOp op = chakra::node_op(n, rank, where, ctx);
    auto* p2p = std::get_if<P2PCall>(&op.op.body);
    Pending* last = ops.empty() ? nullptr : &ops.back();
    if (p2p && last && op.op_id >= 0 && last->op.op_id == op.op_id) {
      auto* batch = std::get_if<P2PCall>(&last->op.op.body);  // the rest of the batch
      if (batch == nullptr || last->op.op.rank != op.op.rank) {
        throw InputError(fmt::format("{}: op_id {} names another kind of node", where, op.op_id));
      }
      for (const auto& t : p2p->sends) batch->sends.push_back(t);
      for (const auto& t : p2p->recvs) batch->recvs.push_back(t);
    } else {
      ops.push_back(Pending{std::move(op), where, {}, {}, {}, {}});
    }
    if (!of_node.emplace(n.id(), ops.size() - 1).second) {
      throw InputError(fmt::format("{}: node id {} appears twice in the file", where, n.id()));
    }
    auto& back = ops.back();
    back.data_deps.insert(back.data_deps.end(), n.data_deps().begin(), n.data_deps().end());
    back.ctrl_deps.insert(back.ctrl_deps.end(), n.ctrl_deps().begin(), n.ctrl_deps().end());
  }
  return ops;
}

// Node ids -> op indices, each once, in first-named order (the ops of a p2p batch are one).
void resolve_deps(std::vector<Pending>& ops,
                  const std::unordered_map<std::uint64_t, std::size_t>& of_node) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    Pending& p = ops[i];
    const auto resolve = [&](const std::vector<std::uint64_t>& ids, std::vector<std::size_t>& to,
                             std::string_view field) {
      for (const auto id : ids) {
        const auto it = of_node.find(id);
        if (it == of_node.end()) {
          throw InputError(fmt::format("{}: {} names node {}, which the file does not have",
                                       p.where, field, id));
        }
        if (it->second == i) {
          throw InputError(fmt::format("{}: {} names the node's own op", p.where, field));
        }
        if (std::find(to.begin(), to.end(), it->second) == to.end()) to.push_back(it->second);
      }
    };
    resolve(p.data_deps, p.deps, "data_deps");
    resolve(p.ctrl_deps, p.ctrl, "ctrl_deps");
  }
}

// A launch order of one rank's ops that puts every op after its deps, file order otherwise.
std::vector<std::size_t> dependency_order(const std::vector<Pending>& ops) {
  std::vector<std::size_t> waiting(ops.size(), 0);
  std::vector<std::vector<std::size_t>> users(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (const auto* list : {&ops[i].deps, &ops[i].ctrl}) {
      for (const auto d : *list) {
        users[d].push_back(i);
        ++waiting[i];
      }
    }
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (const auto u : users[i]) {
      if (--waiting[u] == 0) ready.push(u);
    }
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (waiting[i] != 0) {
      throw InputError(fmt::format("{}: its data_deps and ctrl_deps form a cycle", ops[i].where));
    }
  }
  return order;
}

struct Located {
  int rank;
  std::size_t index;
};

// Appends the ops in `order` to the Program: deps are data_deps and the ctrl_deps other than the
// op before on the same stream (that order is the stream's own).
void emit_ops(Program& p, std::vector<std::vector<Pending>>& ranks,
              const std::vector<Located>& order) {
  std::vector<std::vector<OpId>> id_of(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) id_of[r].assign(ranks[r].size(), -1);
  std::map<std::pair<int, StreamId>, std::size_t> last_on_stream;
  for (const auto& [rank, index] : order) {
    Pending& pending = ranks[static_cast<std::size_t>(rank)][index];
    Op op = std::move(pending.op.op);
    op.id = static_cast<OpId>(p.ops.size());
    const auto before = last_on_stream.find({rank, op.stream});
    std::vector<OpId> deps;
    const auto& rank_ids = id_of[static_cast<std::size_t>(rank)];
    const auto add = [&](std::size_t d, bool ctrl) {
      if (ctrl && before != last_on_stream.end() && before->second == d) return;
      const OpId id = rank_ids[d];
      if (id < 0) {
        throw InputError(
            fmt::format("{}: depends on an op that op_id places later", pending.where));
      }
      if (std::find(deps.begin(), deps.end(), id) == deps.end()) deps.push_back(id);
    };
    for (const auto d : pending.deps) add(d, false);
    for (const auto d : pending.ctrl) add(d, true);
    last_on_stream[{rank, op.stream}] = index;
    id_of[static_cast<std::size_t>(rank)][index] = op.id;
    p.append(std::move(op), deps);
  }
}

// A meshsim trace's launch order: its op_ids, each of 0 .. ops - 1 once.
std::vector<Located> op_id_order(const std::vector<std::vector<Pending>>& ranks) {
  std::size_t total = 0;
  for (const auto& r : ranks) total += r.size();
  std::vector<std::optional<Located>> at(total);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (std::size_t i = 0; i < ranks[r].size(); ++i) {
      const Pending& p = ranks[r][i];
      const std::int64_t id = p.op.op_id;
      if (id < 0 || static_cast<std::size_t>(id) >= total || at[static_cast<std::size_t>(id)]) {
        throw InputError(fmt::format(
            "{}: op_id {} is missing, repeated or beyond the trace's {} ops", p.where, id, total));
      }
      at[static_cast<std::size_t>(id)] = Located{static_cast<int>(r), i};
    }
  }
  std::vector<Located> order;
  for (const auto& a : at) order.push_back(*a);
  return order;
}

// The Program header of a trace meshsim did not write: one 1-D mesh, no single hardware queue.
Program plain_header(std::size_t ranks, const HardwareProfile& hw) {
  Program p;
  p.description = fmt::format("Chakra execution trace, {} ranks", ranks);
  p.mesh = Mesh({MeshDim{"rank", static_cast<int>(ranks)}}, hw.gpus_per_node);
  p.single_queue = false;
  return p;
}

Program meshsim_header(const std::string& text, const RankFile& f, std::size_t ranks) {
  const std::string origin =
      fmt::format("{}: GlobalMetadata attribute 'meshsim_program'", f.origin);
  Program p = program_from_json(parse_json_text(text, origin), origin);
  if (!p.ops.empty()) throw InputError(fmt::format("{}: holds ops (expected none)", origin));
  if (static_cast<std::size_t>(p.world_size()) != ranks) {
    throw InputError(fmt::format("{}: written for {} ranks, but {} rank files were given", origin,
                                 p.world_size(), ranks));
  }
  return p;
}

}  // namespace

Program program_from_chakra(const ChakraInput& input, const HardwareProfile& hw) {
  if (input.ranks.empty()) throw InputError("a Chakra trace needs at least one rank file");
  if (input.ranks.size() > (1u << 20)) throw InputError("a Chakra trace of over 2^20 ranks");
  std::vector<RankFile> files;
  for (const auto& f : input.ranks) files.push_back(read_rank(f));
  const bool meshsim = files.front().header.has_value();
  Program p = meshsim ? meshsim_header(*files.front().header, files.front(), files.size())
                      : plain_header(files.size(), hw);
  const std::optional<nlohmann::json> groups =
      input.comm_groups.empty()
          ? std::nullopt
          : std::optional(parse_json_text(input.comm_groups, input.comm_groups_origin));
  chakra::NodeContext ctx{hw, meshsim, nullptr, nullptr};
  ctx.stream = [&](std::string_view name, std::string_view where) {
    const auto it = std::find(p.streams.begin(), p.streams.end(), name);
    if (it != p.streams.end()) return static_cast<StreamId>(it - p.streams.begin());
    if (meshsim) {
      throw InputError(fmt::format("{}: stream '{}' is not in the trace's header", where, name));
    }
    p.streams.emplace_back(name);
    return static_cast<StreamId>(p.streams.size() - 1);
  };
  std::map<std::string, GroupId, std::less<>> pg;
  ctx.group = [&](std::string_view name, std::string_view where) -> GroupId {
    if (const auto it = pg.find(name); it != pg.end()) return it->second;
    Group g{
        static_cast<GroupId>(p.groups.size()), name.empty() ? "world" : std::string(name), {}, {}};
    if (meshsim) {
      const auto id = std::find_if(p.groups.begin(), p.groups.end(),
                                   [&](const Group& h) { return std::to_string(h.id) == name; });
      if (id == p.groups.end()) {
        throw InputError(fmt::format("{}: pg_name '{}' is not a group of the trace", where, name));
      }
      return pg[std::string(name)] = id->id;
    }
    if (name.empty()) {
      for (int r = 0; r < p.world_size(); ++r) g.ranks.push_back(r);
    } else if (groups && groups->contains(std::string(name))) {
      const JsonField f(*groups, input.comm_groups_origin);
      const JsonField ranks = f[name];
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        g.ranks.push_back(static_cast<int>(ranks.at(i).as_int(0, p.world_size() - 1)));
      }
    } else {
      throw InputError(fmt::format("{}: pg_name '{}' is not in the comm groups file{}", where, name,
                                   groups ? "" : " (none given: add comm_group.json)"));
    }
    p.groups.push_back(std::move(g));
    return pg[std::string(name)] = p.groups.back().id;
  };
  std::vector<std::vector<Pending>> ranks(files.size());
  std::vector<Located> order;
  for (std::size_t r = 0; r < files.size(); ++r) {
    std::unordered_map<std::uint64_t, std::size_t> of_node;
    ranks[r] = rank_ops(files[r], static_cast<int>(r), ctx, of_node);
    resolve_deps(ranks[r], of_node);
    if (!meshsim) {
      for (const auto i : dependency_order(ranks[r])) order.push_back({static_cast<int>(r), i});
    }
  }
  if (meshsim) order = op_id_order(ranks);
  emit_ops(p, ranks, order);
  return p;
}

}  // namespace meshsim
