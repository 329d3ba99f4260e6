#pragma once
// Program <-> JSON with a schema version. save -> load -> save is byte-identical.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sim/json_fields.hpp"
#include "sim/program.hpp"

namespace meshsim {

inline constexpr int kProgramSchemaVersion = 1;

nlohmann::ordered_json program_to_json(const Program& program);
std::string program_to_text(const Program& program);
// Throws InputError naming `origin` and the field path on malformed input. The result has the
// structure of a Program but is not yet validated: run validate_program() on it.
Program program_from_json(const nlohmann::json& j, std::string_view origin);
Program load_program_file(const std::string& path);

// One kernel call as the Program file writes it (its "kernel" object); the Chakra trace writer
// and reader carry it in a node attribute.
nlohmann::ordered_json kernel_to_json(const KernelCall& k);
KernelCall kernel_from_json(const JsonField& f);

}  // namespace meshsim
