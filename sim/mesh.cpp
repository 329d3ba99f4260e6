#include "sim/mesh.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace meshsim {

Mesh::Mesh(std::vector<MeshDim> dims, int gpus_per_node)
    : dims_(std::move(dims)), gpus_per_node_(gpus_per_node) {
  MESHSIM_CHECK(gpus_per_node_ >= 1, "gpus per node must be positive");
  world_size_ = 1;
  for (const auto& d : dims_) {
    MESHSIM_CHECK(d.size >= 1, fmt::format("mesh dimension {} has size {}", d.name, d.size));
    world_size_ *= d.size;
  }
}

int Mesh::index_of(std::string_view dim) const {
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i].name == dim) return static_cast<int>(i);
  }
  return -1;
}

int Mesh::size_of(std::string_view dim) const {
  const int i = index_of(dim);
  return i < 0 ? 1 : dims_[static_cast<std::size_t>(i)].size;
}

std::vector<int> Mesh::coords(int rank) const {
  MESHSIM_CHECK(rank >= 0 && rank < world_size_, fmt::format("rank {} outside the mesh", rank));
  std::vector<int> c;
  c.reserve(dims_.size());
  for (const auto& d : dims_) {
    c.push_back(rank % d.size);
    rank /= d.size;
  }
  return c;
}

int Mesh::rank_of(const std::vector<int>& c) const {
  MESHSIM_CHECK(c.size() == dims_.size(), "coordinate count differs from mesh dimensions");
  int rank = 0;
  for (std::size_t i = dims_.size(); i-- > 0;) rank = rank * dims_[i].size + c[i];
  return rank;
}

std::vector<int> Mesh::group_of(std::string_view dim, int rank) const {
  const int i = index_of(dim);
  if (i < 0) return {rank};
  auto c = coords(rank);
  std::vector<int> ranks;
  const auto idx = static_cast<std::size_t>(i);
  for (int k = 0; k < dims_[idx].size; ++k) {
    c[idx] = k;
    ranks.push_back(rank_of(c));
  }
  return ranks;
}

std::string Mesh::describe_rank(int rank) const {
  const auto c = coords(rank);
  std::string out;
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i].size == 1) continue;
    if (!out.empty()) out += ' ';
    out += fmt::format("{}={}", dims_[i].name, c[i]);
  }
  return out.empty() ? "single" : out;
}

Mesh make_megatron_mesh(int tp, int cp, int dp, int pp, int gpus_per_node) {
  return Mesh({{"tp", tp}, {"cp", cp}, {"dp", dp}, {"pp", pp}}, gpus_per_node);
}

}  // namespace meshsim
