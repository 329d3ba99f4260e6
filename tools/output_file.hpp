#pragma once
// Output files appear whole or not at all: content goes to a temporary file in the same folder
// that is renamed over the destination only after it was fully written.
#include <string>
#include <string_view>

namespace meshsim {

// Throws InputError naming `flag` and the path when the file cannot be written.
void write_file_atomically(const std::string& path, std::string_view content,
                           std::string_view flag);

}  // namespace meshsim
