// meshsim collective: nccl-tests for the simulator. K identical collectives (or ring send/recv
// exchanges) over N ranks, timed with the analytical or the flow-level network, reported as time,
// algorithm bandwidth and bus bandwidth with the nccl-tests definitions.
#include <charconv>
#include <chrono>
#include <numeric>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/collective.hpp"
#include "sim/error.hpp"
#include "sim/mesh.hpp"
#include "sim/network_analytical.hpp"
#include "sim/size_math.hpp"
#include "tools/commands.hpp"
#include "tools/output_file.hpp"
#include "tools/simulate_outputs.hpp"

namespace meshsim {
namespace {

// "1048576", "64K", "128M", "1G" (binary multiples, as nccl-tests reads -b/-e).
std::int64_t parse_size(const std::string& text, std::string_view flag) {
  std::int64_t scale = 1;
  std::string digits = text;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K':
      case 'k':
        scale = std::int64_t{1} << 10;
        break;
      case 'M':
      case 'm':
        scale = std::int64_t{1} << 20;
        break;
      case 'G':
      case 'g':
        scale = std::int64_t{1} << 30;
        break;
      default:
        break;
    }
    if (scale > 1) digits.pop_back();
  }
  std::int64_t v = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, v);
  constexpr std::int64_t kMax = std::int64_t{1} << 44;
  if (digits.empty() || ec != std::errc() || ptr != end || v < 0 || v > kMax / scale) {
    throw InputError(
        fmt::format("{} expects a size in bytes such as 1048576, 64K, 128M or 1G "
                    "(at most 16T), got '{}'",
                    flag, text));
  }
  return v * scale;
}

struct Row {
  std::int64_t bytes = 0;
  double time_s = 0, algbw = 0, busbw = 0;
  std::string algorithm;
};

// How one call runs as the analytical model costs it: "ring LL", "ring LL128", "ring Simple",
// "tree LL", ..., or "NVLS" for all-reduce, all-gather and reduce-scatter (what NCCL's model picks
// under a "collective_model": "nccl" profile); "pairwise" for all-to-all, "p2p" for send/recv.
std::string algorithm_of(const CollectiveConfig& run, std::optional<CollectiveKind> kind,
                         std::int64_t bytes, const NetworkProfile& net) {
  if (!kind) return "p2p";
  if (*kind == CollectiveKind::all_to_all) return "pairwise";
  std::vector<int> ranks(static_cast<std::size_t>(run.ranks));
  std::iota(ranks.begin(), ranks.end(), 0);
  const Mesh mesh({{"ranks", run.ranks}}, run.gpus_per_node);
  const CommCost c = collective_cost(net, *kind, placement_of(mesh, ranks), bytes, run.algo);
  if (c.algorithm == NcclAlgorithm::nvls) return "NVLS";
  return fmt::format("{} {}", to_string(c.algorithm), to_string(c.protocol));
}

std::vector<OptionSpec> collective_options() {
  std::vector<OptionSpec> specs = {
      {"--op", "allreduce|allgather|reducescatter|alltoall|sendrecv", "the operation [allreduce]"},
      {"--ranks", "N", "ranks taking part [8]"},
      {"--bytes", "SIZE",
       "per-rank buffer (all-reduce, send/recv) or gathered total (all-gather, reduce-scatter, "
       "all-to-all), as in nccl-tests; K/M/G suffixes [1G]"},
      {"--sweep", "MIN:MAX", "sizes from MIN to MAX, doubling, as an nccl-tests table"},
      {"--gpus-per-node", "G", "GPUs per node [the hardware profile's]"},
      {"--algo", "auto|ring|tree|nvls",
       "all-reduce algorithm: NVLS inside a node where the profile has it, else ring (auto); "
       "or force the ring, NCCL's tree, NVLS [auto]"},
      {"--concurrent", "K", "K identical operations at once on the same ranks [1]"},
  };
  for (auto& o : simulate_output_options()) specs.push_back(std::move(o));
  return specs;
}

// The operation of the flags: op, ranks, GPUs per node, concurrency and all-reduce algorithm.
CollectiveConfig collective_config(const Args& args, const OutputRequest& out) {
  CollectiveConfig run;
  run.op = args.get_choice("--op", "allreduce",
                           {"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"});
  run.ranks = static_cast<int>(args.get_int("--ranks", 8, 1, 1 << 16));
  run.gpus_per_node =
      static_cast<int>(args.get_int("--gpus-per-node", out.hardware.gpus_per_node, 1, 1024));
  run.concurrent = static_cast<int>(args.get_int("--concurrent", 1, 1, 1024));
  const std::string algo = args.get_choice("--algo", "auto", {"auto", "ring", "tree", "nvls"});
  run.algo = algo == "auto" ? CollectiveAlgo::automatic : *parse_collective_algo(algo);
  if (run.algo != CollectiveAlgo::automatic && run.op != "allreduce") {
    throw InputError(fmt::format("--algo {} is for --op allreduce only (as in NCCL)", algo));
  }
  if (run.op == "sendrecv" && run.ranks < 2) {
    throw InputError("--op sendrecv needs --ranks of at least 2");
  }
  if (product_exceeds({run.ranks, run.concurrent}, 1 << 20)) {
    throw InputError("--ranks x --concurrent exceeds 1048576 operations");
  }
  return run;
}

// The buffer sizes: --bytes, or --sweep MIN:MAX doubling from MIN.
std::vector<std::int64_t> collective_sizes(const Args& args) {
  std::vector<std::int64_t> sizes;
  if (args.has("--sweep")) {
    if (args.has("--bytes")) throw InputError("--bytes and --sweep exclude each other");
    const std::string sweep = args.get("--sweep", "");
    const auto colon = sweep.find(':');
    if (colon == std::string::npos) {
      throw InputError(fmt::format("--sweep expects MIN:MAX such as 1M:1G, got '{}'", sweep));
    }
    const std::int64_t lo = parse_size(sweep.substr(0, colon), "--sweep");
    const std::int64_t hi = parse_size(sweep.substr(colon + 1), "--sweep");
    if (lo < 1 || hi < lo) {
      throw InputError(fmt::format("--sweep expects 1 <= MIN <= MAX, got '{}'", sweep));
    }
    for (std::int64_t s = lo; s <= hi; s *= 2) sizes.push_back(s);
  } else {
    sizes.push_back(parse_size(args.get("--bytes", "1G"), "--bytes"));
  }
  return sizes;
}

// One simulation per size: time, algorithm bandwidth and bus bandwidth (algbw x `factor`); the
// trace, when asked for, is staged in `files`.
std::vector<Row> time_sizes(const CollectiveConfig& run, const std::vector<std::int64_t>& sizes,
                            std::optional<CollectiveKind> kind, const OutputRequest& out,
                            OutputFiles& files) {
  const double factor = kind ? busbw_factor(*kind, run.ranks) : 1.0;  // send/recv: busbw = algbw
  std::vector<Row> rows;
  for (std::int64_t bytes : sizes) {
    const TracedSimulation r = run_traced_simulation(build_collective(run, bytes), out.hardware,
                                                     out.provenance, !out.trace_path.empty(),
                                                     std::chrono::steady_clock::now(), out.network);
    if (r.trace) files.stage(out.trace_path, *r.trace, "--trace");
    Row row;
    row.bytes = bytes;
    row.time_s = ns_to_seconds(r.metrics.makespan);
    row.algbw = row.time_s > 0 ? static_cast<double>(bytes) / row.time_s * 1e-9 : 0.0;
    row.busbw = row.algbw * factor;
    row.algorithm = algorithm_of(run, kind, bytes, out.hardware.network);
    rows.push_back(row);
  }
  return rows;
}

// The JSON report: the run's settings, then one row's fields (--bytes) or the rows (--sweep).
nlohmann::ordered_json collective_json(const CollectiveConfig& run, const std::vector<Row>& rows,
                                       bool sweep, const OutputRequest& out,
                                       const CommandContext& ctx) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["meshsim_version"] = MESHSIM_VERSION;
  j["command"] = ctx.command_line;
  j["hardware"] = {{"name", out.provenance.hardware_name}, {"hash", out.provenance.hardware_hash}};
  j["op"] = run.op;
  j["ranks"] = run.ranks;
  j["gpus_per_node"] = run.gpus_per_node;
  j["concurrent"] = run.concurrent;
  j["network"] = out.network.flow ? "flow" : "analytical";
  auto row_json = [](const Row& row) {
    return nlohmann::ordered_json{{"bytes", row.bytes},
                                  {"time_s", row.time_s},
                                  {"algbw_GBps", row.algbw},
                                  {"busbw_GBps", row.busbw},
                                  {"algorithm", row.algorithm}};
  };
  if (sweep) {
    auto list = nlohmann::ordered_json::array();
    for (const auto& row : rows) list.push_back(row_json(row));
    j["rows"] = list;
  } else {
    const Row& row = rows.front();
    j["bytes"] = row.bytes;
    j["time_s"] = row.time_s;
    j["algbw_GBps"] = row.algbw;
    j["busbw_GBps"] = row.busbw;
    j["algorithm"] = row.algorithm;
  }
  return j;
}

// The nccl-tests style table.
void print_collective_table(std::ostream& os, const CollectiveConfig& run,
                            const std::vector<Row>& rows, const OutputRequest& out) {
  os << fmt::format("# {} over {} ranks ({} per node), {} at once, {} network, {}\n", run.op,
                    run.ranks, run.gpus_per_node, run.concurrent,
                    out.network.flow ? "flow" : "analytical", out.provenance.hardware_name);
  os << fmt::format("#{:>14} {:>12} {:>12} {:>12}  {}\n", "size (B)", "time (us)", "algbw (GB/s)",
                    "busbw (GB/s)", "algorithm");
  for (const auto& row : rows) {
    os << fmt::format(" {:>14} {:>12.2f} {:>12.2f} {:>12.2f}  {}\n", row.bytes, row.time_s * 1e6,
                      row.algbw, row.busbw, row.algorithm);
  }
}

}  // namespace

int run_collective_command(std::span<const std::string> argv, const CommandContext& ctx) {
  const Args args("collective", collective_options(), argv);
  if (args.help_requested()) {
    ctx.out << args.help_text(
        "Time one collective the way nccl-tests measures it: time, algorithm bandwidth "
        "(bytes / time) and bus bandwidth (algbw x 2(n-1)/n for all-reduce, x (n-1)/n for "
        "all-gather, reduce-scatter and all-to-all, x 1 for send/recv).",
        "meshsim collective --op allreduce --ranks 16 --sweep 1M:1G --network flow");
    return 0;
  }
  const OutputRequest out = read_output_request(args, ctx);
  const CollectiveConfig run = collective_config(args, out);
  const std::vector<std::int64_t> sizes = collective_sizes(args);

  const auto kind = collective_kind_of(run.op);
  if (!out.trace_path.empty() && sizes.size() > 1) {
    throw InputError("--trace needs one size (--bytes), not --sweep");
  }
  OutputFiles files;
  const std::vector<Row> rows = time_sizes(run, sizes, kind, out, files);
  files.commit();
  if (out.json) {
    ctx.out << collective_json(run, rows, args.has("--sweep"), out, ctx).dump(2) << "\n";
    return 0;
  }
  print_collective_table(ctx.out, run, rows, out);
  return 0;
}

}  // namespace meshsim
