#include "tools/published_configs.hpp"

#include <set>
#include <utility>

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/json_fields.hpp"

namespace meshsim {
namespace {

using json = nlohmann::json;

struct ConfigEntry {
  std::string source, model, from, ref;
  json model_fields = json::object(), parallel_fields = json::object();
};

ConfigEntry read_entry(const JsonField& e, const json& sources) {
  e.expect_keys({"source", "model", "from", "ref", "model_fields", "parallel_fields"});
  ConfigEntry c;
  c.source = e["source"].as_string();
  c.model = e["model"].as_string();
  c.from = e["from"].as_string();
  c.ref = e["ref"].as_string();
  if (!sources.contains(c.from)) {
    e["from"].fail("the id of an entry of the file's 'sources'");
  }
  for (const auto& [key, target] : {std::pair{"model_fields", &c.model_fields},
                                    std::pair{"parallel_fields", &c.parallel_fields}}) {
    if (!e.has(key)) continue;
    if (!e[key].raw().is_object()) e[key].fail("an object of field values");
    *target = e[key].raw();
  }
  return c;
}

// Fills the null fields of `part` (a row's model or parallel object) from `fields`.
void fill_part(json& part, const json& fields, const ConfigEntry& c, std::string_view part_name,
               std::string_view origin, std::vector<std::string>& filled) {
  for (const auto& [key, value] : fields.items()) {
    if (part.contains(key) && !part.at(key).is_null()) {
      if (part.at(key) != value) {
        throw InputError(fmt::format(
            "{}: entry {} / {}: field '{}.{}': the row prints {}, the entry says {}", origin,
            c.source, c.model, part_name, key, part.at(key).dump(), value.dump()));
      }
      continue;
    }
    if (!value.is_number() && !value.is_string() && !value.is_boolean()) {
      throw InputError(
          fmt::format("{}: entry {} / {}: field '{}.{}': expected a number, string or "
                      "boolean, got {}",
                      origin, c.source, c.model, part_name, key, value.dump()));
    }
    part[key] = value;
    filled.push_back(
        fmt::format("{}.{} = {} ({}, {})", part_name, key, value.dump(), c.from, c.ref));
  }
}

}  // namespace

int apply_published_configs(PublishedRuns& runs, const json& doc, std::string_view origin) {
  const JsonField file(doc, std::string(origin));
  if (!doc.is_object()) file.fail("a JSON object with 'sources' and 'configs'");
  file.expect_keys({"description", "sources", "configs"});
  const json& sources = file["sources"].raw();
  if (!sources.is_object()) file["sources"].fail("an object of publications by id");
  const JsonField configs = file["configs"];
  configs.expect_array();
  int matched = 0;
  std::set<std::string> file_sources;  // an entry of another source is not for this runs file
  for (const PublishedRun& run : runs.rows) file_sources.insert(run.source);
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const ConfigEntry c = read_entry(configs.at(i), sources);
    if (!seen.emplace(c.source, c.model).second) {
      throw InputError(fmt::format("{}: field 'configs[{}]': a second entry for {} / {}", origin, i,
                                   c.source, c.model));
    }
    if (!file_sources.contains(c.source)) continue;
    int rows = 0;
    for (PublishedRun& run : runs.rows) {
      if (run.source != c.source || !run.model.is_object() ||
          run.model.value("name", std::string()) != c.model) {
        continue;
      }
      fill_part(run.model, c.model_fields, c, "model", origin, run.filled);
      fill_part(run.parallel, c.parallel_fields, c, "parallel", origin, run.filled);
      ++rows;
    }
    if (rows == 0) {
      throw InputError(fmt::format(
          "{}: field 'configs[{}]': entry {} / {} matches no row (source id and model name)",
          origin, i, c.source, c.model));
    }
    matched += rows;
  }
  return matched;
}

}  // namespace meshsim
