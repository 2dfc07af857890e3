// tcfem: matrix-free finite element solvers.  Usage: tcfem <command> [options]; tcfem <command> --help
#include <iostream>

#include "commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  using namespace tcfem;
  CLI::App app{"tcfem: high-order matrix-free finite element solvers for the Poisson equation", "tcfem"};
  app.set_version_flag("--version", "tcfem 0.1.0");
  app.require_subcommand(1);
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string(e.what()) + "\n"; });
  auto run_solve = app::add_solve_command(app);
  auto run_bench = app::add_bench_command(app);
  auto run_direct = app::add_direct_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    if (msg.rfind("A subcommand is required", 0) == 0 || msg.find("subcommand") != std::string::npos)
      msg = "a command is required: solve, bench, direct";
    std::cerr << "tcfem: error: " << msg << " (see tcfem --help)\n";
    return app::exit_bad_input;
  }
  try {
    if (app.got_subcommand("solve")) return run_solve();
    if (app.got_subcommand("bench")) return run_bench();
    if (app.got_subcommand("direct")) return run_direct();
  } catch (const InputError& e) {
    std::cerr << "tcfem: error: " << e.what() << "\n";
    return app::exit_bad_input;
  } catch (const std::bad_alloc&) {
    std::cerr << "tcfem: error: out of memory\n";
    return app::exit_internal;
  } catch (const std::exception& e) {
    std::cerr << "tcfem: internal error: " << e.what() << "\n";
    return app::exit_internal;
  }
  return app::exit_internal;
}
