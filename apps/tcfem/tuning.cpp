#include "tuning.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace tcfem::app {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw InputError(where + ": " + what); }

/// Checks that every key of `object` is one of `allowed`.
void check_keys(const json& object, const std::string& where, const std::vector<std::string>& allowed) {
  if (!object.is_object()) bad(where, "must be a JSON object");
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (const auto& a : allowed) known = known || key == a;
    if (!known) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      bad(where, "unknown key \"" + key + "\"; allowed: " + list);
    }
  }
}

/// A number in [lo, hi] or "auto" (0).
double number_or_auto(const json& v, const std::string& where, double lo, double hi, bool integer) {
  if (v.is_string() && v.get<std::string>() == "auto") return 0;
  if (!v.is_number()) bad(where, "must be \"auto\" or a number");
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi) || (integer && x != std::floor(x))) {
    std::ostringstream s;
    s << "value " << v.dump() << " is not allowed; allowed: \"auto\" or " << (integer ? "integers " : "numbers ") << lo
      << ".." << hi;
    bad(where, s.str());
  }
  return x;
}

/// The object j[name] with its keys checked (where: its name in messages), or nullptr if absent.
const json* section(const json& j, const std::string& source, const std::string& name,
                    const std::vector<std::string>& keys, std::string& where) {
  if (!j.contains(name)) return nullptr;
  where = source + ": " + name;
  check_keys(j[name], where, keys);
  return &j[name];
}

}  // namespace

Tuning parse_tuning(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    bad(source, std::string("not valid JSON (") + e.what() + ")");
  }
  check_keys(j, source, {"cuda_core", "cuda_core_geometry", "patch_smoother"});
  Tuning t;
  std::string where;
  if (const json* p = section(j, source, "cuda_core", {"items_per_worker", "waves"}, where)) {
    const auto& c = *p;
    if (c.contains("items_per_worker"))
      t.device.cuda_core_items_per_worker =
          number_or_auto(c["items_per_worker"], where + ".items_per_worker", 0.001, 1e6, false);
    if (c.contains("waves")) t.device.cuda_core_waves = number_or_auto(c["waves"], where + ".waves", 0.01, 64, false);
  }
  if (const json* p =
          section(j, source, "cuda_core_geometry", {"min_blocks_per_sm", "cells_per_block", "prefetch"}, where)) {
    const auto& c = *p;
    if (c.contains("min_blocks_per_sm")) {
      const auto& v = c["min_blocks_per_sm"];
      const double m = number_or_auto(v, where + ".min_blocks_per_sm", 1, 4, true);
      if (m == 2) bad(where + ".min_blocks_per_sm", "value 2 is not allowed; allowed: \"auto\", 1, 3, 4");
      t.device.geometry_min_blocks_per_sm = int(m);
    }
    if (c.contains("cells_per_block"))
      t.device.geometry_cells_per_block = int(number_or_auto(c["cells_per_block"], where + ".cells_per_block", 1, 1024, true));
    if (c.contains("prefetch")) {
      const auto& v = c["prefetch"];
      if (v.is_boolean()) t.device.geometry_prefetch = v.get<bool>() ? 1 : -1;
      else if (v.is_string() && v.get<std::string>() == "auto") t.device.geometry_prefetch = 0;
      else bad(where + ".prefetch", "value " + v.dump() + " is not allowed; allowed: \"auto\", true, false");
    }
  }
  if (const json* p = section(j, source, "patch_smoother", {"contraction", "carveout"}, where)) {
    const auto& c = *p;
    if (c.contains("contraction")) {
      const auto& v = c["contraction"];
      const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
      if (s == "auto") t.patch.contraction = multigrid::PatchContraction::automatic;
      else if (s == "dense") t.patch.contraction = multigrid::PatchContraction::dense;
      else if (s == "even-odd") t.patch.contraction = multigrid::PatchContraction::even_odd;
      else if (s == "tensor-core") t.patch.contraction = multigrid::PatchContraction::tensor_core;
      else bad(where + ".contraction", "value " + v.dump() + " is not allowed; allowed: auto, dense, even-odd, tensor-core");
    }
    if (c.contains("carveout")) {
      const auto& v = c["carveout"];
      if (v.is_string() && v.get<std::string>() == "driver") {
        t.patch.carveout = -1;
      } else {
        if (!v.is_number_integer() || v.get<long>() < 0 || v.get<long>() > 100)
          bad(where + ".carveout", "value " + v.dump() + " is not allowed; allowed: integers 0..100 (percent) or \"driver\"");
        t.patch.carveout = int(v.get<long>());
      }
    }
  }
  return t;
}

Tuning read_tuning_file(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(option + " " + path + ": cannot open the file");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw InputError(option + " " + path + ": cannot read the file");
  return parse_tuning(s.str(), option + " " + path);
}

json to_json(const Tuning& t) {
  auto num = [](double v) { return v > 0 ? json(v) : json("auto"); };
  const char* contraction = "auto";
  switch (t.patch.contraction) {
    case multigrid::PatchContraction::automatic: contraction = "auto"; break;
    case multigrid::PatchContraction::dense: contraction = "dense"; break;
    case multigrid::PatchContraction::even_odd: contraction = "even-odd"; break;
    case multigrid::PatchContraction::tensor_core: contraction = "tensor-core"; break;
  }
  return {{"cuda_core",
           {{"items_per_worker", num(t.device.cuda_core_items_per_worker)}, {"waves", num(t.device.cuda_core_waves)}}},
          {"cuda_core_geometry",
           {{"min_blocks_per_sm", num(t.device.geometry_min_blocks_per_sm)},
            {"cells_per_block", num(t.device.geometry_cells_per_block)},
            {"prefetch", t.device.geometry_prefetch == 0 ? json("auto") : json(t.device.geometry_prefetch > 0)}}},
          {"patch_smoother",
           {{"contraction", contraction},
            {"carveout", t.patch.carveout < 0 ? json("driver") : json(t.patch.carveout)}}}};
}

}  // namespace tcfem::app
