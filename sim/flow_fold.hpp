#pragma once
// Folding in the flow-level network (ARCHITECTURE.md §3, "Folding under the flow model").
//
// A folded Program (ARCHITECTURE.md §2 Groups, §4.4) builds only the ranks with coordinate 0 along
// its folded mesh dimensions (tp and/or dp for the training step); every other rank runs an
// identical program in lockstep. Let G be the group of cyclic shifts of the folded coordinates
// (|G| = the product of their sizes). G acts on ranks and, through the topology, on ports: a
// shift maps GPU r's NVLink ports to those of its image, r's NIC (node, rail) to the image's, r's
// node uplink to the image's. The unfolded run is invariant under G, and so is its max-min fair
// allocation (it is unique): every image of a flow runs at the flow's rate, and every port of an
// orbit carries the same load. The folded network is therefore the *quotient*: one port per orbit
// of ports (capacity of any member), and each simulated gang s (a transfer or collective between
// built ranks, or a folded collective over its whole `timed_as` group on the real placement)
// loads orbit O with the units of all its distinct images on one port of O:
//
//   units'(O) = |Stab(O)| / |Stab(s)| x sum over ports q of s in O of units_s(q),
//
// |Stab(O)| = |G| / |O| (orbit-stabilizer), |Stab(s)| the shifts that map the gang's ranks onto
// themselves (a whole TP group under TP shifts, a whole DP group under DP shifts; 1 for a
// transfer). Progressive filling on the quotient freezes exactly what it freezes on the unfolded
// network, orbit by orbit, so folded and unfolded step times are equal (tests/sim/test_flow_fold,
// tests/schedules/test_training_step_flow).
//
// The rule needs each shift to be an automorphism of the topology: it must map nodes onto nodes
// (else a ring's NVLink hop would map onto a NIC hop: DP replicas sharing a node, dp shifting
// one of them to the next node) and every GPU sharing a port (the GPUs of a rail's NIC, the GPUs
// under a node uplink, the GPUs under a leaf switch) to GPUs sharing one port. fold_ports() checks
// both and returns nothing otherwise (also for a TP group spanning two nodes under an
// oversubscribed uplink, and for DP shifts that move a node across a leaf-group boundary under a
// spine tier); callers then build every rank (flow_folds_exactly). A port no GPU owns (a rail
// without a GPU) is its own orbit, fixed by G: no ring or transfer uses it, since channels take
// unused rails only when members share a NIC. Where programs are not in lockstep the rule stays
// conservative per port: every image is counted on the port as if it were busy at the same time.
#include <optional>
#include <string>
#include <vector>

#include "sim/flow_network.hpp"
#include "sim/flow_plan.hpp"
#include "sim/mesh.hpp"
#include "sim/program.hpp"

namespace meshsim {

// The folded network: per topology port its orbit, per orbit its representative port (the lowest
// id) and stabilizer size.
struct PortFold {
  std::vector<int> dims;           // folded mesh dimension indices
  double order = 1;                // |G|
  std::vector<PortId> orbit_of;    // per topology port
  std::vector<PortId> rep;         // per orbit
  std::vector<double> stabilizer;  // per orbit: |G| / orbit size
};

// The dimensions a Program folds: those along which some group's timed_as varies while its built
// members do not (dp for the step's dp-cp groups, tp for its one-member TP groups).
std::vector<int> folded_dims(const Program& program);

// G's action on the topology's ports, or nothing when it is not well defined.
std::optional<PortFold> fold_ports(const Topology& topo, const Mesh& mesh,
                                   const std::vector<int>& dims);

// Whether a Program on `mesh` folding `dims` (mesh dimension names) has a well-defined quotient
// on this network: what meshsim step asks before folding a flow-level run.
bool flow_folds_exactly(const Mesh& mesh, const NetworkProfile& net, const FlowOptions& options,
                        const std::vector<std::string>& dims);

// |Stab(s)| of a gang over `ranks`: the product of the folded dimensions' sizes whose shift maps
// the rank set onto itself.
double rank_set_stabilizer(const Mesh& mesh, const std::vector<int>& dims, std::vector<int> ranks);

// The gang on the quotient network (header formula).
GangFlow fold_gang(const PortFold& fold, const GangFlow& gang, double stabilizer);

}  // namespace meshsim
