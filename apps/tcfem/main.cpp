// tcfem: matrix-free finite element solvers.  Usage: tcfem <command> [options]; tcfem <command> --help
#include <cstdlib>
#include <iostream>

#include "commands.h"
#include "core/communicator.h"
#include "core/error.h"

namespace {
/// Whether an MPI launcher (mpirun, mpiexec, srun) started this process: its environment names the
/// world's size. A plain start runs on one process without initializing MPI.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(name)) return true;
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace tcfem;
  MpiSession mpi(argc, argv, launched_by_mpi());
  const Communicator world = Communicator::world();
  // rank 0 reports; an error every rank raised together ends each rank with its exit code, one
  // raised on some ranks only ends all of them (MPI_Abort), so that none waits forever
  auto fail = [&](const std::exception& e, const char* prefix, int code) {
    const bool together = dynamic_cast<const CollectiveInputError*>(&e) || dynamic_cast<const CollectiveError*>(&e);
    if (!world.distributed()) {
      std::cerr << prefix << e.what() << "\n";
      return code;
    }
    if (together) {
      if (world.rank() == 0) std::cerr << prefix << e.what() << "\n";
      return code;
    }
    std::cerr << prefix << "rank " << world.rank() << ": " << e.what() << "\n" << std::flush;
    world.abort(code);
  };
  CLI::App app{"tcfem: high-order matrix-free finite element solvers for the Poisson equation and acoustic-gravity waves", "tcfem"};
  app.set_version_flag("--version", "tcfem 0.1.0");
  app.require_subcommand(1);
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string(e.what()) + "\n"; });
  auto run_solve = app::add_solve_command(app);
  auto run_bench = app::add_bench_command(app);
  auto run_direct = app::add_direct_command(app);
  auto run_wave = app::add_wave_command(app);
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
      msg = "a command is required: solve, bench, direct, wave";
    if (world.rank() == 0) std::cerr << "tcfem: error: " << msg << " (see tcfem --help)\n";
    return app::exit_bad_input;
  }
  try {
    if (app.got_subcommand("solve")) return run_solve();
    if (app.got_subcommand("bench")) return run_bench();
    if (world.distributed())  // every rank sees the same command line
      throw CollectiveInputError(std::string(app.got_subcommand("wave") ? "wave" : "direct") +
                                 ": runs on one process; of the commands solve and bench run on several MPI ranks");
    if (app.got_subcommand("direct")) return run_direct();
    if (app.got_subcommand("wave")) return run_wave();
  } catch (const InputError& e) {
    return fail(e, "tcfem: error: ", app::exit_bad_input);
  } catch (const std::bad_alloc&) {
    return fail(std::runtime_error("out of memory"), "tcfem: error: ", app::exit_internal);
  } catch (const std::exception& e) {
    return fail(e, "tcfem: internal error: ", app::exit_internal);
  }
  return app::exit_internal;
}
