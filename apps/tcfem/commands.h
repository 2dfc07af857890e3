#pragma once
// Sub-commands of the tcfem tool. Each registers its options on a CLI11 sub-app and returns an
// exit code when run: 0 success, 1 internal or device error, 2 bad input, 3 no convergence.
#include <CLI/CLI.hpp>
#include <functional>

namespace tcfem::app {

enum ExitCode { exit_ok = 0, exit_internal = 1, exit_bad_input = 2, exit_not_converged = 3 };

/// Adds `solve` to `app`; the returned function runs it after parsing.
std::function<int()> add_solve_command(CLI::App& app);
/// Adds `bench` (operator throughput measurements) to `app`.
std::function<int()> add_bench_command(CLI::App& app);
/// Adds `direct` (the prehandled hierarchical-basis direct solver, 2D P1/Q1) to `app`.
std::function<int()> add_direct_command(CLI::App& app);
/// Adds `wave` (acoustic-gravity waves, RK4 in time) to `app`.
std::function<int()> add_wave_command(CLI::App& app);

}  // namespace tcfem::app
