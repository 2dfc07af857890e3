#pragma once
// Reading a problem file's JSON (tcfem solve --problem, tcfem wave --problem): typed values with
// one-line errors that name the file and the key.
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"

namespace tcfem::problem {

/// "a, b, c"
inline std::string join(const std::set<std::string>& s) {
  std::string r;
  for (const auto& k : s) r += (r.empty() ? "" : ", ") + k;
  return r;
}

struct JsonReader {
  using json = nlohmann::json;
  std::string path;
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError("problem file " + path + ": " + key + ": " + what);
  }
  /// The file at `path`, parsed: an object with only the `top_keys`.
  json read(const std::set<std::string>& top_keys) const {
    std::ifstream in(path);
    if (!in) throw InputError("--problem: cannot read the file " + path);
    json j;
    try {
      j = json::parse(in, nullptr, true, /*ignore_comments=*/false);
    } catch (const json::parse_error& e) {
      throw InputError("problem file " + path + ": malformed JSON: " + e.what());
    }
    if (!j.is_object()) throw InputError("problem file " + path + ": expected a JSON object at the top level");
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!top_keys.count(it.key())) fail(it.key(), "unknown key; allowed: " + join(top_keys));
    return j;
  }
  /// "dim": 2 or 3
  int dimension(const json& j) const {
    if (!j.contains("dim")) fail("dim", "missing (2 or 3)");
    const int dim = integer(j["dim"], "dim");
    if (dim != 2 && dim != 3) fail("dim", "must be 2 or 3");
    return dim;
  }
  /// A number or a string: expressions may be given as numbers.
  std::string expression(const json& v, const std::string& key) const {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number()) {
      std::ostringstream s;
      s.precision(17);
      s << v.get<double>();
      return s.str();
    }
    fail(key, "expected an expression (a string or a number)");
  }
  /// n expressions in an array
  std::vector<std::string> expressions(const json& v, const std::string& key, int n) const {
    if (!v.is_array() || int(v.size()) != n) fail(key, "expected " + std::to_string(n) + " expressions");
    std::vector<std::string> r;
    for (int d = 0; d < n; ++d) r.push_back(expression(v[d], key + "[" + std::to_string(d) + "]"));
    return r;
  }
  int integer(const json& v, const std::string& key) const {
    if (!v.is_number_integer()) fail(key, "expected an integer");
    return v.get<int>();
  }
  double number(const json& v, const std::string& key) const {
    if (!v.is_number()) fail(key, "expected a number");
    return v.get<double>();
  }
  double positive(const json& v, const std::string& key) const {
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) fail(key, "expected a positive number");
    return v.get<double>();
  }
  /// An object with only the `allowed` keys.
  void only(const json& v, const std::string& key, const std::set<std::string>& allowed) const {
    if (!v.is_object()) fail(key, "expected an object with the keys " + join(allowed));
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!allowed.count(it.key())) fail(key + "." + it.key(), "unknown key; allowed: " + join(allowed));
  }
  /// An object of boundary parts and expressions.
  std::map<std::string, std::string> parts(const json& v, const std::string& key) const {
    if (!v.is_object()) fail(key, "expected an object of boundary parts and expressions");
    std::map<std::string, std::string> r;
    for (auto it = v.begin(); it != v.end(); ++it) r[it.key()] = expression(it.value(), key + "." + it.key());
    return r;
  }
};

}  // namespace tcfem::problem
