#pragma once
// Flow options with a leaf-spine tier (sim/flow_topology.hpp, Tiers), shared by the flow tests.
#include "sim/flow_topology.hpp"

namespace meshsim::test {

inline FlowOptions spine(int leaf_nodes, double spine_oversubscription,
                         bool rail_optimized = true) {
  FlowOptions o;
  o.leaf_nodes = leaf_nodes;
  o.spine_oversubscription = spine_oversubscription;
  o.rail_optimized = rail_optimized;
  return o;
}

}  // namespace meshsim::test
