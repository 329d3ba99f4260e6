#pragma once
// Temporary files that never outlive the process: every registered path is unlinked when the
// process exits normally (atexit) or is ended by SIGINT, SIGTERM or SIGHUP (handlers installed on
// the first registration; they unlink with async-signal-safe calls only, then end the process by
// the same signal). A path that was renamed into place or removed is unregistered first.
#include <string>

namespace meshsim {

// Registers `path` for removal; at most kMaxTemporaries at a time (more are still removed by
// their owner, only not by the handlers).
void register_temporary(const std::string& path);
// Forgets `path` (it was renamed into place or already removed).
void unregister_temporary(const std::string& path);
// How many paths are registered now (for tests).
int registered_temporaries();

inline constexpr int kMaxTemporaries = 4096;

}  // namespace meshsim
