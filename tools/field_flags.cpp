#include "tools/field_flags.hpp"

#include <algorithm>
#include <array>

#include "sim/error.hpp"

namespace meshsim {
namespace {

struct Override {
  std::string_view command, field, words;
};

// meshsim step and sweep build the pipeline from --pp, --vp and --gbs / (--dp x --mbs).
constexpr std::array<Override, 8> kOverrides{{
    {"step", "stages", "--pp"},
    {"step", "group_size", "--microbatch-group-size"},
    {"step", "chunks", "--vp"},
    {"step", "microbatches", "the microbatch count (--gbs / (--dp x --mbs))"},
    {"sweep", "stages", "--pp"},
    {"sweep", "chunks", "--vp"},
    {"sweep", "microbatches", "the microbatch count (--gbs / (dp x --mbs))"},
    {"sweep", "dp", "dp"},  // what is left of the GPUs: the sweep has no --dp
}};

}  // namespace

std::string flag_of_field(std::string_view command, std::string_view field) {
  for (const Override& o : kOverrides) {
    if (o.command == command && o.field == field) return std::string(o.words);
  }
  std::string flag = "--";
  flag.append(field);
  std::replace(flag.begin() + 2, flag.end(), '_', '-');
  return flag;
}

std::string in_flag_words(std::string_view command, std::string_view message) {
  return render_fields(message,
                       [command](std::string_view field) { return flag_of_field(command, field); });
}

}  // namespace meshsim
