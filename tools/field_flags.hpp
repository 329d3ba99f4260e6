#pragma once
// The CLI's words for the configuration fields library messages name (`field`, see sim/error):
// by default the flag of the same name (`kv_heads` -> --kv-heads), with the exceptions of each
// sub-command (meshsim step has no --chunks: a pipeline's chunks are its --vp).
#include <string>
#include <string_view>

namespace meshsim {

std::string flag_of_field(std::string_view command, std::string_view field);

// A library message in the words of a sub-command's flags.
std::string in_flag_words(std::string_view command, std::string_view message);

}  // namespace meshsim
