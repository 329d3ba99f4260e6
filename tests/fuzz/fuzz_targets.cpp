#include "tests/fuzz/fuzz_targets.hpp"

#include <csignal>
#include <iostream>
#include <new>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include "schedules/model_catalog.hpp"
#include "schedules/ring_attention.hpp"
#include "sim/comm_plan.hpp"
#include "sim/cost_model.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/json_fields.hpp"
#include "sim/program_json.hpp"
#include "sim/run.hpp"
#include "tools/commands.hpp"
#include "tools/published_runs.hpp"
#include "tools/report_sweep.hpp"
#include "traces/chakra_codec.hpp"
#include "traces/chakra_reader.hpp"
#include "traces/chakra_writer.hpp"
#include "traces/kineto_timeline.hpp"
#include "validate/calibrate/kineto_samples.hpp"

namespace meshsim::fuzz {
namespace {

constexpr const char* kOrigin = "fuzz.json";

// Runs `parse` on the input, sorting what it throws into the outcomes.
template <class Parse>
Outcome guarded(Parse&& parse) {
  try {
    parse();
    return {Outcome::accepted, ""};
  } catch (const InputError&) {
    return {Outcome::rejected, ""};
  } catch (const std::bad_alloc&) {
    return {Outcome::failed, "out of memory (an allocation sized by the input?)"};
  } catch (const std::exception& e) {
    return {Outcome::failed, std::string("internal error: ") + e.what()};
  }
}

Outcome hardware(const std::string& text) {
  return guarded([&] { hardware_from_json(parse_json_text(text, kOrigin), kOrigin); });
}

Outcome model(const std::string& text) {
  return guarded([&] { model_from_json(parse_json_text(text, kOrigin), kOrigin); });
}

// A Program that loads and validates is also simulated when it is small (the engine and the cost
// model then see the mutated durations, shapes and groups).
Outcome program(const std::string& text) {
  return guarded([&] {
    Program p = program_from_json(parse_json_text(text, kOrigin), kOrigin);
    validate_program(p);
    if (p.ops.size() <= 4096 && p.world_size() <= 4096) {
      run_simulation(std::move(p), *builtin_hardware("h100-sxm"));
    }
  });
}

Outcome sweep_rows(const std::string& text) {
  return guarded([&] { report::parse_sweep(parse_json_text(text, kOrigin), kOrigin); });
}

Outcome published_runs(const std::string& text) {
  return guarded([&] { read_published_runs(parse_json_text(text, kOrigin), kOrigin); });
}

// A PyTorch profiler trace: read, matched, set out as a timeline and, with samples, fitted (what
// calibrate --from-trace and compare --kineto do with it).
Outcome kineto(const std::string& text) {
  return guarded([&] {
    std::istringstream in(text);
    const KinetoTrace trace = read_kineto_trace(in, kOrigin);
    const KinetoSamples s = kineto_calibration_samples(trace, 8);
    (void)kineto_timeline(trace, kOrigin);
    if (!s.samples.compute.empty() || !s.samples.comm.empty()) {
      (void)fit_profile(*builtin_hardware("h100-sxm"), s.samples, FitOptions{.keep_peaks = true});
    }
  });
}

// A Chakra trace as one input: each rank's file preceded by its length (4 bytes, little-endian).
std::string join_ranks(const std::vector<std::string>& ranks) {
  std::string out;
  for (const auto& r : ranks) {
    const auto n = static_cast<std::uint32_t>(r.size());
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((n >> (8 * b)) & 0xffu));
    out += r;
  }
  return out;
}

ChakraInput split_ranks(const std::string& input) {
  ChakraInput in;
  std::size_t at = 0;
  while (at < input.size()) {
    if (input.size() - at < 4 || in.ranks.size() >= 64) throw InputError("bad rank framing");
    std::uint32_t n = 0;
    for (int b = 0; b < 4; ++b) {
      n |= std::uint32_t{static_cast<unsigned char>(input[at + static_cast<std::size_t>(b)])}
           << (8 * b);
    }
    at += 4;
    if (n > input.size() - at) throw InputError("bad rank framing");
    in.ranks.push_back({"fuzz." + std::to_string(in.ranks.size()) + ".et", input.substr(at, n)});
    at += n;
  }
  return in;
}

// The Chakra reader on a mutated trace; a trace that reads and validates is simulated when small.
Outcome chakra(const std::string& input) {
  static const HardwareProfile hw = *builtin_hardware("h100-sxm");
  return guarded([&] {
    Program p = program_from_chakra(split_ranks(input), hw);
    validate_program(p);
    if (p.ops.size() <= 4096) run_simulation(std::move(p), hw);
  });
}

// Seeds: a 2-rank ring attention as meshsim writes it, the same without its Program header (read
// as any other Chakra trace), and ASTRA-sim's all-reduce microbenchmark layout.
std::vector<std::string> chakra_seeds() {
  RingAttentionConfig c;
  c.cp = 2;
  c.seq = 64;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 8;
  const Program program = build_ring_attention(c);
  const HardwareProfile hw = *builtin_hardware("h100-sxm");
  const Durations d = estimate_durations(program, validate_program(program), hw);
  const ChakraTrace trace = program_to_chakra(program, d.ops);
  chakra::pb::GlobalMetadata bare;
  bare.set_version("0.0.4");
  std::vector<std::string> plain, all_reduce;
  for (const auto& rank : trace.ranks) {
    chakra::DelimitedReader in(rank, "seed");
    chakra::pb::GlobalMetadata meta;
    in.next(meta, "GlobalMetadata");
    std::string file;
    chakra::append_delimited(file, bare);
    plain.push_back(file + rank.substr(in.offset()));
    chakra::pb::Node n;
    n.set_id(all_reduce.size());
    n.set_name("all_reduce");
    n.set_type(chakra::pb::COMM_COLL_NODE);
    chakra::add_int64(n, "comm_type", chakra::pb::ALL_REDUCE);
    chakra::add_int64(n, "comm_size", 1 << 20);
    chakra::append_delimited(file, n);
    all_reduce.push_back(file);
  }
  return {join_ranks(trace.ranks), join_ranks(plain), join_ranks(all_reduce)};
}

using Command = int (*)(std::span<const std::string>, const CommandContext&);

Command command_named(const std::string& name) {
  if (name == "ring-attention") return run_ring_attention_command;
  if (name == "tp-linear") return run_tp_linear_command;
  if (name == "pipeline") return run_pipeline_command;
  if (name == "collective") return run_collective_command;
  if (name == "hardware") return run_hardware_command;
  return nullptr;
}

// One command line in a child process (a run that a mutated size makes long is ended by an alarm
// after kSecondsPerRun and counted as timed out, not failed): exit 0 or 2 is fine, 3 (internal
// error), any other exit or a signal fails.
constexpr unsigned kSecondsPerRun = 10;

[[noreturn]] void run_child(const std::vector<std::string>& argv) {
  std::ostringstream out, err;
  const CommandContext ctx{"meshsim fuzz", out, err};
  const Command command = argv.empty() ? nullptr : command_named(argv[0]);
  if (command == nullptr) ::_exit(2);
  ::alarm(kSecondsPerRun);
  try {
    const int code = command(std::span<const std::string>(argv).subspan(1), ctx);
    ::_exit(code == 0 || code == 2 ? code : 10 + code);
  } catch (const InputError&) {
    ::_exit(2);
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    ::_exit(3);
  }
}

Outcome cli(const std::string& text) {
  std::vector<std::string> argv;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) argv.push_back(line);
  std::cout.flush();
  std::cerr.flush();
  const pid_t child = ::fork();
  if (child < 0) return {Outcome::failed, "fork failed"};
  if (child == 0) run_child(argv);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) return {Outcome::timed_out, ""};
  if (WIFSIGNALED(status)) {
    return {Outcome::failed, "killed by signal " + std::to_string(WTERMSIG(status))};
  }
  const int code = WEXITSTATUS(status);
  if (code == 0) return {Outcome::accepted, ""};
  if (code == 2) return {Outcome::rejected, ""};
  return {Outcome::failed, "exit code " + std::to_string(code)};
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"cli", InputKind::argv, cli},
      {"hardware", InputKind::json, hardware},
      {"model", InputKind::json, model},
      {"program", InputKind::json, program},
      {"sweep", InputKind::json, sweep_rows},
      {"published", InputKind::json, published_runs},
      {"chakra", InputKind::bytes, chakra, chakra_seeds},
      {"kineto", InputKind::json, kineto},
  };
  return all;
}

const Target* target_named(const std::string& name) {
  for (const Target& t : targets()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

}  // namespace meshsim::fuzz
