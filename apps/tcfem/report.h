#pragma once
// The fields every JSON report of the tcfem commands opens with.
#include <ctime>
#include <nlohmann/json.hpp>

#ifndef TCFEM_GIT_SHA
#define TCFEM_GIT_SHA "unknown"
#endif

namespace tcfem::app {

inline constexpr const char* tcfem_version = "0.1.0";

/// command, version, git_sha and the date (UTC, ISO 8601).
inline nlohmann::json report_header(const char* command) {
  nlohmann::json j;
  j["command"] = command;
  j["version"] = tcfem_version;
  j["git_sha"] = TCFEM_GIT_SHA;
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  j["date"] = date;
  return j;
}

}  // namespace tcfem::app
