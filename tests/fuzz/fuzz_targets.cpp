#include "tests/fuzz/fuzz_targets.hpp"

#include <csignal>
#include <iostream>
#include <new>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include "schedules/model_catalog.hpp"
#include "sim/comm_plan.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "sim/json_fields.hpp"
#include "sim/program_json.hpp"
#include "sim/run.hpp"
#include "tools/commands.hpp"
#include "tools/published_runs.hpp"
#include "tools/report_sweep.hpp"

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
      {"cli", InputKind::argv, cli},          {"hardware", InputKind::json, hardware},
      {"model", InputKind::json, model},      {"program", InputKind::json, program},
      {"sweep", InputKind::json, sweep_rows}, {"published", InputKind::json, published_runs},
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
