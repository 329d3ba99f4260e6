#pragma once
// The parallel mesh: named dimensions (fastest-varying first) mapped onto a cluster of nodes with
// a fixed number of GPUs each. Rank <-> coordinates is a pure function of the dimension order.
#include <string>
#include <string_view>
#include <vector>

namespace meshsim {

struct MeshDim {
  std::string name;
  int size = 1;
  bool operator==(const MeshDim&) const = default;
};

class Mesh {
 public:
  Mesh() = default;
  // dims are listed fastest-varying first; every size must be >= 1 (checked).
  Mesh(std::vector<MeshDim> dims, int gpus_per_node);

  int world_size() const { return world_size_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int node_of(int rank) const { return rank / gpus_per_node_; }
  int num_nodes() const { return (world_size_ + gpus_per_node_ - 1) / gpus_per_node_; }
  const std::vector<MeshDim>& dims() const { return dims_; }

  // Size of a named dimension, 1 when the mesh does not have it.
  int size_of(std::string_view dim) const;
  // Coordinates of a rank, one per dimension in dims() order.
  std::vector<int> coords(int rank) const;
  int rank_of(const std::vector<int>& coords) const;
  // The ranks that share every coordinate of `rank` except `dim`, ordered by their `dim`
  // coordinate.
  std::vector<int> group_of(std::string_view dim, int rank) const;
  // Human label such as "cp=3" or "tp=1 cp=0"; dimensions of size 1 are left out.
  std::string describe_rank(int rank) const;

  bool operator==(const Mesh&) const = default;

 private:
  int index_of(std::string_view dim) const;

  std::vector<MeshDim> dims_;
  int gpus_per_node_ = 1;
  int world_size_ = 1;
};

// Megatron's default order: tp fastest, then cp, then dp, pp outermost.
Mesh make_megatron_mesh(int tp, int cp, int dp, int pp, int gpus_per_node);

}  // namespace meshsim
