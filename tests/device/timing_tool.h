#pragma once
// Command-line helpers shared by the device timing tools (cuda_core_timing, patch_smoother_timing):
// comma-separated lists, degree lists with ranges ("3-7,9"), and the median of event timings.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace tcfem::timing_tool {

inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t b = 0;
  while (true) {
    const auto e = s.find(',', b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

inline std::vector<int> degrees(const std::string& s) {
  std::vector<int> out;
  for (const auto& item : split(s)) {
    const auto dash = item.find('-');
    if (dash == std::string::npos)
      out.push_back(std::atoi(item.c_str()));
    else
      for (int k = std::atoi(item.substr(0, dash).c_str()); k <= std::atoi(item.substr(dash + 1).c_str()); ++k)
        out.push_back(k);
  }
  return out;
}

inline float median(std::vector<float> t) {
  std::sort(t.begin(), t.end());
  return t.size() % 2 ? t[t.size() / 2] : 0.5f * (t[t.size() / 2 - 1] + t[t.size() / 2]);
}

}  // namespace tcfem::timing_tool
