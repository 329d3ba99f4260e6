// The meshsim Python module (README "Python"): meshsim.step(...), meshsim.sweep(...) and
// meshsim.explain(...) run the CLI's own commands in-process and return their --json output as
// objects; meshsim.model(...) and meshsim.hardware(...) return models and profiles as objects that
// can be changed and passed back. Keyword arguments are the commands' flags: tp=4 is --tp 4,
// no_fold=True is --no-fold, a list is a comma-separated list (sweep), None or False leaves the
// flag out.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <nlohmann/json.hpp>

#include "schedules/hf_config.hpp"
#include "schedules/model_catalog.hpp"
#include "sim/error.hpp"
#include "sim/hardware_profile.hpp"
#include "tools/commands.hpp"
#include "tools/field_flags.hpp"

namespace py = pybind11;

namespace meshsim::python {
namespace {

// The CLI's own sub-commands run in-process (the same plan building, simulation and JSON as
// `meshsim step --json`); bad input throws InputError, its message in the command's flag words
// as the CLI prints it.
std::string run_command(std::string_view command, const std::vector<std::string>& args) {
  using Run = int (*)(std::span<const std::string>, const CommandContext&);
  Run run = nullptr;
  if (command == "step") run = run_step_command;
  if (command == "sweep") run = run_sweep_command;
  if (command == "explain") run = run_explain_command;
  if (run == nullptr) throw InputError(fmt::format("unknown command '{}'", command));
  std::string command_line = fmt::format("meshsim {}", command);
  for (const auto& a : args) command_line += " " + a;
  std::ostringstream out, err;
  const CommandContext ctx{command_line, out, err};
  try {
    run(args, ctx);
  } catch (const InputError& e) {
    throw InputError(in_flag_words(command, e.what()));
  }
  return out.str();
}

std::string model_json(std::string_view name_or_path) {
  return to_json(load_any_model(name_or_path).model).dump();
}

nlohmann::json parse(const std::string& text, std::string_view what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: not JSON: {}", what, e.what()));
  }
}

std::string checked_model_json(const std::string& model_json_text) {
  return to_json(model_from_json(parse(model_json_text, "model"), "model")).dump();
}

std::int64_t model_parameters(const std::string& model_json_text) {
  return count_parameters(model_from_json(parse(model_json_text, "model"), "model")).total;
}

std::vector<std::string> model_names() {
  return builtin_model_names();
}

std::string hardware_json(std::string_view name_or_path) {
  return to_json(load_hardware(name_or_path)).dump();
}

std::string checked_hardware_json(const std::string& hardware_json_text) {
  return to_json(hardware_from_json(parse(hardware_json_text, "hardware"), "hardware")).dump();
}

std::vector<std::string> hardware_names() {
  return builtin_hardware_names();
}

// A JSON object as a Python dict, its fields readable as attributes.
struct Record {
  py::dict data;
};
struct Result : Record {};   // meshsim step --json
struct Model : Record {};    // the model JSON schema
struct Profile : Record {};  // the hardware profile JSON schema
struct Sweep : Record {};    // meshsim sweep --json: {"model", ..., "rows": [...]}

py::dict json_loads(const std::string& text) {
  return py::module_::import("json").attr("loads")(text).cast<py::dict>();
}

std::string json_dumps(const py::handle& value) {
  return py::module_::import("json").attr("dumps")(value).cast<std::string>();
}

// A field by name; "step_time" also finds "step_time_s" (the JSON's seconds suffix).
py::object field(const Record& r, const std::string& name) {
  if (r.data.contains(name)) return r.data[py::str(name)];
  if (r.data.contains(name + "_s")) return r.data[py::str(name + "_s")];
  throw py::attribute_error(fmt::format("meshsim: no field '{}'", name));
}

// Model and profile objects passed as flags are written to temporary JSON files, removed when the
// call returns.
class TemporaryFiles {
 public:
  TemporaryFiles() = default;
  TemporaryFiles(const TemporaryFiles&) = delete;
  TemporaryFiles& operator=(const TemporaryFiles&) = delete;
  ~TemporaryFiles() {
    std::error_code ec;
    for (const auto& p : paths_) std::filesystem::remove(p, ec);
  }
  std::string write(const std::string& content) {
    static std::atomic<int> counter{0};
    const auto path = std::filesystem::temp_directory_path() /
                      fmt::format("meshsim-python-{}-{}.json", getpid(), counter++);
    std::ofstream(path) << content;
    paths_.push_back(path.string());
    return paths_.back();
  }

 private:
  std::vector<std::string> paths_;
};

std::string flag_value(const py::handle& v, TemporaryFiles& files) {
  if (py::isinstance<Record>(v)) return files.write(json_dumps(v.cast<const Record&>().data));
  if (py::isinstance<py::dict>(v)) return files.write(json_dumps(v));
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    std::string out;
    for (const auto& item : v) out += (out.empty() ? "" : ",") + py::str(item).cast<std::string>();
    return out;
  }
  return py::str(v).cast<std::string>();
}

// Keyword arguments as the command's flags.
// --json goes first, so that a switch given to a flag that takes a value (tp=True) is refused
// as a missing value rather than taking --json as its value.
std::vector<std::string> flags_of(const py::kwargs& kwargs, TemporaryFiles& files) {
  std::vector<std::string> args{"--json"};
  for (const auto& [key, value] : kwargs) {
    std::string flag = "--" + key.cast<std::string>();
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (flag == "--help" || flag == "--json") {
      throw InputError(
          fmt::format("{}: not a keyword of the Python module (help(meshsim) and the "
                      "CLI's --help describe the flags; results are always JSON)",
                      key.cast<std::string>()));
    }
    if (value.is_none()) continue;
    if (py::isinstance<py::bool_>(value)) {
      if (value.cast<bool>()) args.push_back(flag);
      continue;
    }
    args.push_back(flag);
    args.push_back(flag_value(value, files));
  }
  return args;
}

py::dict run_json(const std::string& command, const py::kwargs& kwargs) {
  TemporaryFiles files;
  const std::vector<std::string> args = flags_of(kwargs, files);
  std::string text;
  {
    py::gil_scoped_release unlocked;
    text = run_command(command, args);
  }
  return json_loads(text);
}

py::object to_pandas(const py::object& records) {
  return py::module_::import("pandas").attr("json_normalize")(records);
}

template <class T>
T make(py::dict data) {
  T r;
  r.data = std::move(data);
  return r;
}

Model make_model(const py::dict& fields) {
  return make<Model>(json_loads(checked_model_json(json_dumps(fields))));
}

Profile make_profile(const py::dict& fields) {
  return make<Profile>(json_loads(checked_hardware_json(json_dumps(fields))));
}

// A copy of `r`'s fields with `changes` applied.
py::dict replaced(const Record& r, const py::kwargs& changes) {
  py::dict out = py::module_::import("copy").attr("deepcopy")(r.data);
  for (const auto& [k, v] : changes) out[k] = v;
  return out;
}

void bind_record(py::module_& m) {
  py::class_<Record>(m, "Record", "A JSON object; its fields read as attributes or items.")
      .def("__getattr__", &field)
      .def("__getitem__", [](const Record& r, const std::string& k) { return field(r, k); })
      .def("__contains__", [](const Record& r, const std::string& k) { return r.data.contains(k); })
      .def("keys", [](const Record& r) { return py::list(r.data.attr("keys")()); })
      .def("__dir__",
           [](const py::object& self) {
             py::list names = py::list(self.attr("data").attr("keys")());
             for (const char* name : {"data", "keys", "to_dict", "to_json", "to_pandas"}) {
               names.append(name);
             }
             return names;
           })
      .def_readonly("data", &Record::data)
      .def("to_dict", [](const Record& r) { return py::dict(r.data); })
      .def("to_json", [](const Record& r) { return json_dumps(r.data); })
      .def(
          "to_pandas", [](const Record& r) { return to_pandas(r.data); },
          "One row, nested fields flattened (memory.peak_bytes); needs pandas.")
      .def("__repr__", [](const py::object& self) {
        return fmt::format("meshsim.{}({})",
                           py::type::of(self).attr("__name__").cast<std::string>(),
                           py::repr(self.attr("data")).cast<std::string>());
      });
}

void bind_classes(py::module_& m) {
  bind_record(m);
  py::class_<Result, Record>(m, "Result", "meshsim step --json as an object");
  py::class_<Model, Record>(m, "Model", "A transformer model (the model JSON schema)")
      .def(py::init(&make_model), py::arg("fields"))
      .def_property_readonly(
          "parameters", [](const Model& r) { return model_parameters(json_dumps(r.data)); },
          "exact parameter count")
      .def("replace",
           [](const Model& r, const py::kwargs& kw) { return make_model(replaced(r, kw)); });
  py::class_<Profile, Record>(m, "Profile", "A hardware profile (the --hardware JSON schema)")
      .def(py::init(&make_profile), py::arg("fields"))
      .def("replace",
           [](const Profile& r, const py::kwargs& kw) { return make_profile(replaced(r, kw)); });
  py::class_<Sweep, Record>(m, "Sweep", "meshsim sweep --json: every plan's row")
      .def("__len__", [](const Sweep& s) { return py::len(s.data["rows"]); })
      .def("__getitem__",
           [](const Sweep& s, py::ssize_t i) {
             py::list rows = s.data["rows"];
             const py::ssize_t n = static_cast<py::ssize_t>(rows.size());
             if (i < 0) i += n;
             if (i < 0 || i >= n) throw py::index_error("sweep row index out of range");
             return make<Result>(rows[static_cast<std::size_t>(i)].cast<py::dict>());
           })
      .def(
          "to_pandas", [](const Sweep& s) { return to_pandas(s.data["rows"]); },
          "One row per plan; needs pandas.");
}

}  // namespace
}  // namespace meshsim::python

PYBIND11_MODULE(meshsim, m) {
  using namespace meshsim::python;
  m.doc() = "meshsim: simulate distributed LLM training steps (the meshsim CLI as a module)";
  m.attr("__version__") = MESHSIM_VERSION;
  py::register_exception<meshsim::InputError>(m, "InputError", PyExc_ValueError);
  bind_classes(m);
  m.def(
      "step", [](const py::kwargs& kw) { return make<Result>(run_json("step", kw)); },
      "meshsim step with these flags (model='llama3-8b', gpus=8, tp=8, ...): a Result with the "
      "fields of `meshsim step --json`");
  m.def(
      "sweep", [](const py::kwargs& kw) { return make<Sweep>(run_json("sweep", kw)); },
      "meshsim sweep with these flags (lists for tp, pp, cp, vp, mbs, schedule): its rows");
  m.def(
      "explain", [](const py::kwargs& kw) { return make<Result>(run_json("explain", kw)); },
      "meshsim explain with these flags (step's): each input's effect on the step time, ranked");
  m.def(
      "model", [](const std::string& name) { return make<Model>(json_loads(model_json(name))); },
      py::arg("name_or_path"), "a built-in model or a model JSON file");
  m.def(
      "hardware",
      [](const std::string& name) { return make<Profile>(json_loads(hardware_json(name))); },
      py::arg("name_or_path"), "a built-in hardware profile or a profile JSON file");
  m.def("models", &model_names, "the built-in models' names");
  m.def("hardware_profiles", &hardware_names, "the built-in hardware profiles' names");
}
