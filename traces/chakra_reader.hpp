#pragma once
// Chakra execution trace -> Program (the reverse of traces/chakra_writer.hpp). Reads the node types
// a step is made of: COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE and COMM_RECV_NODE with their
// data_deps and ctrl_deps; any other node type is bad input.
// - A trace meshsim wrote (GlobalMetadata attribute "meshsim_program") comes back as the Program
//   it was written from: mesh, streams, groups, kernels and launch order.
// - Any other trace (ASTRA-sim's examples, Chakra's generator and converters) becomes a 1-D mesh
//   "rank" of one rank per file; each rank runs its compute on stream "compute", each process
//   group's collectives on "coll <pg_name>", sends and receives on "send <peer>" / "recv <peer>";
//   a collective without pg_name spans every rank (ASTRA-sim's rule), else the ranks the comm
//   groups file gives its pg_name. A COMP_NODE takes its time from duration_micros when that is
//   positive, else from num_ops and tensor_size on the hardware profile's roofline (bf16 peak,
//   the profile's "default" efficiency), else zero.
// Errors are InputError naming the file and the node.
#include <span>
#include <string>
#include <vector>

#include "sim/hardware_profile.hpp"
#include "sim/program.hpp"

namespace meshsim {

struct ChakraRankFile {
  std::string origin;  // the file's path, for errors
  std::string bytes;
};

struct ChakraInput {
  std::vector<ChakraRankFile> ranks;  // index = rank
  std::string comm_groups;            // {"<pg_name>": [ranks...]} (may be empty: none given)
  std::string comm_groups_origin;
};

// The Program of the trace, not yet validated (run_simulation validates it).
Program program_from_chakra(const ChakraInput& input, const HardwareProfile& hw);

}  // namespace meshsim
