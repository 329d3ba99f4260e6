#pragma once
// meshsim's exit codes, one per outcome a script may need to tell apart (README "Exit codes").
namespace meshsim {

inline constexpr int kExitOk = 0;
inline constexpr int kExitOutOfMemory = 1;      // an allocation failed
inline constexpr int kExitBadInput = 2;         // one line on stderr naming the flag or field
inline constexpr int kExitInternalError = 3;    // a bug: names the source file and line
inline constexpr int kExitNumericsFailed = 4;   // validate: a tensor outside its tolerance (FAIL)
inline constexpr int kExitUnsteadyMachine = 5;  // calibrate: refused, the machine was not steady

}  // namespace meshsim
