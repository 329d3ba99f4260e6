// meshsim validate moe: one MoE layer run for real on the CPU under MPI — router, dispatch by
// MPI all-to-all-v, grouped expert GEMMs around SwiGLU, combine, unpermute; forward and backward —
// checked against a float64 one-rank reference (validate/cpu/moe_runner,
// validate/check/moe_layer_check), optionally next to the simulator's prediction
// (tools/moe_validate_compare).
#include <filesystem>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "tools/capacity_factor_flag.hpp"
#include "tools/cli_args.hpp"
#include "tools/commands.hpp"
#include "tools/exit_codes.hpp"
#include "tools/field_flags.hpp"
#include "tools/memory_limit.hpp"
#include "tools/moe_validate_compare.hpp"
#include "tools/moe_validate_report.hpp"
#include "tools/output_file.hpp"
#include "tools/run_world_cli.hpp"
#include "validate/check/moe_layer_check.hpp"
#include "validate/mpi/launch_env.hpp"
#include "validate/mpi/mpi_moe_comm.hpp"
#include "validate/tensors/npy_writer.hpp"

namespace meshsim {
namespace {

std::vector<OptionSpec> moe_validate_options() {
  return {
      {"--ep", "N", "expert-parallel size [the MPI ranks / --etp]"},
      {"--etp", "N", "expert tensor-parallel size; ep x etp = the MPI ranks [1]"},
      {"--experts", "N", "routed experts [8]"},
      {"--top-k", "K", "experts per token [2]"},
      {"--tokens", "N", "tokens over all ranks (each rank routes tokens / ranks) [512]"},
      {"--hidden", "N", "hidden size h [128]"},
      {"--ffn-hidden", "N", "each expert's FFN size f (SwiGLU: W_up [2f, h], W_down [h, f]) [256]"},
      {"--routing", "uniform|zipf:S|FILE",
       "routing skew as meshsim step takes it, made real by a router logit bias of log(share) "
       "[uniform]"},
      {"--moe-capacity-factor", "F",
       "each expert keeps at most ceil(F x a rank's tokens x top-k / experts) copies of each "
       "rank's tokens, those of the largest router weight; the rest are dropped [no capacity]"},
      {"--dtype", "fp32|fp64", "storage and math type [fp64]"},
      {"--pass", "fwd|fwd+bwd", "forward only, or forward and backward [fwd+bwd]"},
      {"--seed", "N", "seed of the deterministic inputs [1]"},
      {"--hardware", "NAME|FILE", "hardware profile of the --compare prediction [h100-sxm]"},
      {"--dump", "DIR", "write the unsharded inputs and results as NumPy .npy files into DIR",
       OutputKind::folder},
      {"--json", "", "print one JSON object instead of the table"},
      {"--compare", "", "also simulate the layer (meshsim step's MoE ops) and report both"},
      {"--no-check", "", "skip the numerics check against the float64 reference"},
      {"--inject-fault", "combine-weights",
       "testing: unpermute without the router weights (the numerics must then FAIL)"},
      max_memory_option(),
  };
}

constexpr const char* kExample =
    "mpirun -np 4 meshsim validate moe --ep 2 --etp 2 --experts 8 --top-k 2 --routing zipf:1.2";

MoeRequest parse_moe_request(const Args& args, const LaunchEnv& env) {
  MoeRequest r;
  MoeLayerConfig& c = r.layer;
  const int ranks = env.under_launcher ? env.size : 1;
  c.etp = static_cast<int>(args.get_int("--etp", 1, 1, 1 << 16));
  c.ep = static_cast<int>(args.get_int("--ep", std::max(1, ranks / c.etp), 1, 1 << 16));
  c.experts = static_cast<int>(args.get_int("--experts", 8, 1, 1 << 16));
  c.top_k = static_cast<int>(args.get_int("--top-k", 2, 1, 1 << 16));
  c.tokens = args.get_int("--tokens", 512, 1, std::int64_t{1} << 31);
  c.hidden = args.get_int("--hidden", 128, 1, std::int64_t{1} << 20);
  c.ffn = args.get_int("--ffn-hidden", 256, 1, std::int64_t{1} << 20);
  c.routing = parse_routing(args.get("--routing", "uniform"));
  c.capacity_factor = read_capacity_factor(args);
  c.dtype =
      args.get_choice("--dtype", "fp64", {"fp32", "fp64"}) == "fp32" ? DType::fp32 : DType::fp64;
  c.backward = args.get_choice("--pass", "fwd+bwd", {"fwd", "fwd+bwd"}) == "fwd+bwd";
  check_moe_layer_config(c);
  routing_bias(c);  // a routing table of the wrong length is refused here
  r.seed = static_cast<std::uint64_t>(
      args.get_int("--seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
  r.hardware = load_hardware(args.get("--hardware", "h100-sxm"));
  r.dump_dir = args.get("--dump", "");
  r.json = args.has("--json");
  r.compare = args.has("--compare");
  r.check = !args.has("--no-check");
  r.fault =
      *parse_moe_fault(args.get_choice("--inject-fault", "none", {"none", "combine-weights"}));
  r.limit = memory_limit(args, env.local_size);
  r.memory = estimate_moe_memory(c, r.check || !r.dump_dir.empty());
  check_memory(r.memory, r.limit, "validate moe");
  return r;
}

std::string ranks_flags(const MoeLayerConfig& c) {
  return fmt::format("--ep {} x --etp {}", c.ep, c.etp);
}

// --dump: the unsharded tensors, staged and committed together.
void write_dump(const MoeRequest& req, const std::vector<GlobalTensorData>& tensors) {
  std::error_code ec;
  std::filesystem::create_directories(req.dump_dir, ec);
  if (ec) throw InputError(fmt::format("--dump {}: cannot create: {}", req.dump_dir, ec.message()));
  OutputFiles files;
  for (const auto& t : tensors) {
    files.stage((std::filesystem::path(req.dump_dir) / (t.name + ".npy")).string(),
                npy_file(t.shape, t.values, t.dtype), "--dump");
  }
  files.commit();
}

// Rank 0: the results of every rank, checked, dumped, compared and reported; the exit code.
int report_on_root(const MoeRequest& req, std::vector<MoeRankResult> per_rank,
                   const std::string& backend, const CommandContext& ctx) {
  const std::vector<GlobalTensorData> tensors = assemble_moe_tensors(req.layer, req.seed, per_rank);
  MoeReport report;
  report.backend = backend;
  report.command_line = ctx.command_line;
  if (req.check) report.numerics = check_moe_numerics(req.layer, tensors);
  if (req.compare) report.comparison = compare_moe_layer(req.layer, req.hardware, per_rank);
  report.tokens_per_expert = find_tensor(tensors, "tokens_per_expert").values;
  report.dropped = find_tensor(tensors, "dropped").values.at(0);
  if (!req.dump_dir.empty()) write_dump(req, tensors);
  ctx.out << (req.json ? moe_report_json(req, per_rank, report).dump(2) + "\n"
                       : moe_report_text(req, per_rank, report));
  return report.numerics && !report.numerics->pass ? kExitNumericsFailed : kExitOk;
}

int run_on_world(const MoeRequest& req, const LaunchEnv& env, const CommandContext& ctx) {
  const std::unique_ptr<RunWorld> world = make_run_world(env);
  const int ranks = req.layer.ranks();
  if (world->size() != ranks) {
    if (world->rank() == 0) {
      ctx.err << fmt::format(
          "meshsim: error: this layer has {} ranks ({}) but MPI started {} processes: run {}\n",
          ranks, ranks_flags(req.layer), world->size(), mpirun_command(ranks, ctx.command_line));
    }
    return 2;
  }
  if (world->rank() == 0 && !req.json) {
    ctx.out << memory_line(req.memory, req.limit);
    ctx.out.flush();
  }
  MoeRankResult mine;
  {
    const std::unique_ptr<MoeComm> comm =
        world->size() > 1 ? make_mpi_moe_comm(req.layer.etp) : make_solo_moe_comm();
    try {
      world->barrier();
      mine = run_moe_layer(req.layer, req.seed, world->rank(), *comm, req.fault,
                           std::chrono::steady_clock::now());
    } catch (const std::exception& e) {
      ctx.err << fmt::format("meshsim: error: rank {}: {}\n", world->rank(), e.what());
      ctx.err.flush();
      // A rank that failed to run is not a numerics verdict: an internal error, as before.
      if (world->size() > 1) world->abort(kExitInternalError);
      return kExitInternalError;
    }
  }
  const auto packed = world->gather_bytes(pack_moe_result(mine));
  if (world->rank() != 0) return 0;
  std::vector<MoeRankResult> per_rank;
  for (const auto& bytes : packed)
    per_rank.push_back(unpack_moe_result(req.layer, bytes, mine.phases));
  return report_on_root(req, std::move(per_rank), world->describe(), ctx);
}

}  // namespace

int run_validate_moe_command(std::span<const std::string> argv, const CommandContext& ctx) {
  const LaunchEnv env = detect_launch_env();
  const auto bad_input = [&](const std::string& what) {
    if (env.rank == 0) ctx.err << "meshsim: error: " << in_flag_words("validate moe", what) << "\n";
    return 2;
  };
  MoeRequest req;
  try {
    const Args args("validate moe", moe_validate_options(), argv);
    if (args.help_requested()) {
      if (env.rank == 0) {
        ctx.out << args.help_text(
            "Run one MoE layer for real on the CPU under MPI (one process per rank): router and "
            "top-k, permute, dispatch by MPI all-to-all-v over EP (all-gather over ETP), the "
            "local experts' GEMMs around SwiGLU, combine, unpermute with the router weights; "
            "forward and backward, checked against a float64 one-rank reference.",
            kExample);
      }
      return 0;
    }
    req = parse_moe_request(args, env);
    if (!env.under_launcher && req.layer.ranks() > 1) {
      throw InputError(fmt::format(
          "this layer has {} ranks ({}): run one process per rank under MPI: {}", req.layer.ranks(),
          ranks_flags(req.layer), mpirun_command(req.layer.ranks(), ctx.command_line)));
    }
  } catch (const InputError& e) {
    return bad_input(e.what());
  }
  return run_on_world(req, env, ctx);
}

}  // namespace meshsim
