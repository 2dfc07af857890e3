#pragma once
// `--tuning FILE.json`: kernel choices of the device kernel families, read from a JSON file with
// documented keys (docs/user_guide.md, "Tuning"); an unknown key or value is an InputError (exit
// 2). Every field left out keeps the measured default of its kernel family for the (dim, degree,
// precision) of each operator.
#include <nlohmann/json.hpp>
#include <string>

#include "multigrid/multigrid_config.h"
#include "operators/tuning.h"

namespace tcfem::app {

struct Tuning {
  operators::DeviceTuning device;
  multigrid::PatchKernelTuning patch;
};

/// Reads and checks a tuning file; `option` names the option in messages.
Tuning read_tuning_file(const std::string& path, const std::string& option = "--tuning");
/// Parses the JSON text of a tuning file (`source` names it in messages).
Tuning parse_tuning(const std::string& text, const std::string& source);
/// The whole tuning with every key ("auto" where the kernel family's default applies).
nlohmann::json to_json(const Tuning& t);

}  // namespace tcfem::app
