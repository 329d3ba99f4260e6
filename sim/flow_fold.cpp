#include "sim/flow_fold.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include "sim/error.hpp"

namespace meshsim {
namespace {

// The rank one step along dimension `dim` (cyclic).
int shifted(const Mesh& mesh, int rank, int dim) {
  auto c = mesh.coords(rank);
  const auto d = static_cast<std::size_t>(dim);
  c[d] = (c[d] + 1) % mesh.dims()[d].size;
  return mesh.rank_of(c);
}

// Whether the ranks' coordinates along `dim` take more than one value.
bool varies(const Mesh& mesh, const std::vector<int>& ranks, std::size_t dim) {
  if (ranks.empty()) return false;
  const int first = mesh.coords(ranks.front())[dim];
  return std::any_of(ranks.begin(), ranks.end(),
                     [&](int r) { return mesh.coords(r)[dim] != first; });
}

class UnionFind {
 public:
  explicit UnionFind(std::size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  std::size_t find(std::size_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  void unite(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);  // the lowest port represents
  }

 private:
  std::vector<std::size_t> parent_;
};

// Whether the shift along `dim` maps nodes onto nodes: GPUs of one node to GPUs of one node, no
// two nodes to one. Otherwise it would turn NVLink hops into NIC hops and the gangs built on the
// placement would not map onto each other.
bool keeps_nodes(const Mesh& mesh, int dim) {
  std::vector<int> node_image(static_cast<std::size_t>(mesh.num_nodes()), -1);
  std::vector<char> hit(node_image.size(), 0);
  for (int r = 0; r < mesh.world_size(); ++r) {
    auto& image = node_image[static_cast<std::size_t>(mesh.node_of(r))];
    const int to = mesh.node_of(shifted(mesh, r, dim));
    if (image >= 0 && image != to) return false;
    if (image < 0) {
      if (hit[static_cast<std::size_t>(to)] != 0) return false;
      hit[static_cast<std::size_t>(to)] = 1;
    }
    image = to;
  }
  return true;
}

// One generator's action on ports (-1: a port no GPU owns, fixed), or nothing when it does not
// keep nodes, when two GPUs sharing a port map to different ports or two ports map to one.
std::optional<std::vector<PortId>> port_action(const Topology& topo, const Mesh& mesh, int dim) {
  if (!keeps_nodes(mesh, dim)) return std::nullopt;
  std::vector<PortId> image(topo.port_count(), -1);
  std::vector<PortId> from, to;
  for (int r = 0; r < mesh.world_size(); ++r) {
    topo.gpu_ports(r, from);
    topo.gpu_ports(shifted(mesh, r, dim), to);
    for (std::size_t k = 0; k < from.size(); ++k) {
      auto& i = image[static_cast<std::size_t>(from[k])];
      if (i >= 0 && i != to[k]) return std::nullopt;
      i = to[k];
    }
  }
  std::vector<char> hit(topo.port_count(), 0);
  for (PortId q : image) {
    if (q < 0) continue;
    if (hit[static_cast<std::size_t>(q)] != 0) return std::nullopt;
    hit[static_cast<std::size_t>(q)] = 1;
  }
  return image;
}

}  // namespace

std::vector<int> folded_dims(const Program& program) {
  const Mesh& mesh = program.mesh;
  std::set<int> dims;
  for (const auto& g : program.groups) {
    if (g.timed_as.empty() || g.timed_as.size() == g.ranks.size()) continue;
    for (std::size_t d = 0; d < mesh.dims().size(); ++d) {
      if (varies(mesh, g.timed_as, d) && !varies(mesh, g.ranks, d)) {
        dims.insert(static_cast<int>(d));
      }
    }
  }
  return {dims.begin(), dims.end()};
}

std::optional<PortFold> fold_ports(const Topology& topo, const Mesh& mesh,
                                   const std::vector<int>& dims) {
  PortFold fold;
  fold.dims = dims;
  UnionFind orbits(topo.port_count());
  for (int d : dims) {
    fold.order *= mesh.dims()[static_cast<std::size_t>(d)].size;
    const auto image = port_action(topo, mesh, d);
    if (!image) return std::nullopt;
    for (std::size_t p = 0; p < image->size(); ++p) {
      if ((*image)[p] >= 0) orbits.unite(p, static_cast<std::size_t>((*image)[p]));
    }
  }
  fold.orbit_of.assign(topo.port_count(), -1);
  std::vector<double> size;
  for (std::size_t p = 0; p < topo.port_count(); ++p) {
    const std::size_t root = orbits.find(p);
    if (root == p) {
      fold.orbit_of[p] = static_cast<PortId>(fold.rep.size());
      fold.rep.push_back(static_cast<PortId>(p));
      size.push_back(0);
    } else {
      fold.orbit_of[p] = fold.orbit_of[root];  // root < p: numbered already
    }
    size[static_cast<std::size_t>(fold.orbit_of[p])] += 1;
  }
  for (double s : size) fold.stabilizer.push_back(fold.order / s);
  return fold;
}

bool flow_folds_exactly(const Mesh& mesh, const NetworkProfile& net, const FlowOptions& options,
                        const std::vector<std::string>& dims) {
  std::vector<int> indices;
  for (const auto& name : dims) {
    const auto& all = mesh.dims();
    const auto it =
        std::find_if(all.begin(), all.end(), [&](const MeshDim& d) { return d.name == name; });
    if (it == all.end() || it->size <= 1) continue;
    indices.push_back(static_cast<int>(it - all.begin()));
  }
  const Topology topo(mesh, net, options);
  return fold_ports(topo, mesh, indices).has_value();
}

double rank_set_stabilizer(const Mesh& mesh, const std::vector<int>& dims, std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  double stabilizer = 1;
  for (int d : dims) {
    std::vector<int> image;
    image.reserve(ranks.size());
    for (int r : ranks) image.push_back(shifted(mesh, r, d));
    std::sort(image.begin(), image.end());
    if (image == ranks) stabilizer *= mesh.dims()[static_cast<std::size_t>(d)].size;
  }
  return stabilizer;
}

GangFlow fold_gang(const PortFold& fold, const GangFlow& gang, double stabilizer) {
  MESHSIM_CHECK(stabilizer >= 1, "a gang's stabilizer counts at least the identity");
  GangFlow out;
  out.work = gang.work;
  out.latency = gang.latency;
  out.cause = gang.cause;
  for (const auto& u : gang.usage) {
    const PortId o = fold.orbit_of[static_cast<std::size_t>(u.port)];
    const double units = u.units * fold.stabilizer[static_cast<std::size_t>(o)] / stabilizer;
    const auto it = std::find_if(out.usage.begin(), out.usage.end(),
                                 [&](const PortLoad& l) { return l.port == o; });
    if (it == out.usage.end()) {
      out.usage.push_back(PortLoad{o, units});
    } else {
      it->units += units;
    }
  }
  std::sort(out.usage.begin(), out.usage.end(),
            [](const PortLoad& a, const PortLoad& b) { return a.port < b.port; });
  return out;
}

}  // namespace meshsim
