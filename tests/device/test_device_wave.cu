// The device wave operator and stepper against the CPU reference: the rate of random states
// (poisoned outputs) for every degree, 2D and 3D, boxes and curved basins with variable rho and K,
// absorbing and seafloor faces; RK4 steps, energies, projections and the spectral bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "wave/device_wave.h"
#include "wave/time_stepping.h"

using namespace tcfem;
using namespace tcfem::wave;

namespace {

bool have_device() { return query_device(0).available; }

/// Whether the GPU has the sm_90 FP64 mma shapes of the tensor-core kernels.
bool have_fp64_tensor_cores() {
  const auto info = query_device(0);
  return info.available && info.sm_major == 9;
}

/// The units to test: CUDA cores, and tensor cores where the GPU has them.
std::vector<WaveCores> cores_to_test() {
  std::vector<WaveCores> c{WaveCores::cuda_core};
  if (have_fp64_tensor_cores()) c.push_back(WaveCores::tensor_core);
  return c;
}

WaveFile basin_file(int dim, int k, bool curved) {
  WaveFile f;
  f.dim = dim;
  f.degree = k;
  if (dim == 2) {
    f.box = {{0.0, 2.0}, {-1.0, 0.0}};
    f.cells = {5, 3};
  } else {
    f.box = {{0.0, 2.0}, {0.0, 1.0}, {-1.0, 0.0}};
    f.cells = {3, 2, 3};
  }
  if (curved) {
    if (dim == 2) f.map = {"x + 0.1*sin(pi*x)*sin(pi*y)", "y*(1 - 0.2*sin(pi*x/2)) + 0.05*sin(2*pi*x)*(y+1)"};
    else f.map = {"x + 0.1*sin(pi*x)*sin(pi*z)", "y + 0.05*sin(pi*x)*sin(pi*y)", "z*(1 - 0.2*sin(pi*x/2)*cos(pi*y))"};
    f.rho = "1 + 0.3*x";
    f.K = "2 + cos(y)";
    f.boundary["xmax"] = "absorbing";
    f.boundary[dim == 2 ? "ymin" : "zmin"] = "seafloor";
    f.seafloor_velocity = "sin(3*t)*x";
  }
  return f;
}

/// max |a - b| and max |a| (b not finite: an infinite difference)
std::pair<double, double> difference(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = a.size() == b.size() ? 0.0 : std::numeric_limits<double>::infinity(), norm = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff = std::max(diff, std::isfinite(b[i]) ? std::abs(a[i] - b[i]) : std::numeric_limits<double>::infinity());
    norm = std::max(norm, std::abs(a[i]));
  }
  return {diff, norm};
}

/// max |a - b| and max |a| over the states of two steppers
std::pair<double, double> state_difference(WaveStepper& cpu, WaveStepper& gpu) {
  std::vector<double> a, b;
  cpu.get_state(a);
  gpu.get_state(b);
  return difference(a, b);
}

/// The device rate against the CPU's; `setup` device: the device stepper computes its data from
/// an operator without cell data.
template <int dim>
void compare_rate(const WaveFile& f, WaveGeometryForm form, WaveCores cores, WaveStorage storage = WaveStorage::fp64,
                  WaveSetup setup = WaveSetup::host) {
  const auto problem = make_wave_problem<dim>(f);
  const WaveOperator<dim> op(problem);
  std::unique_ptr<WaveOperator<dim>> device_op;
  if (setup == WaveSetup::device) device_op = std::make_unique<WaveOperator<dim>>(problem, setup);
  std::mt19937_64 gen(f.degree * 7 + dim);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> x(op.n_dofs()), cpu(op.n_dofs()), gpu(op.n_dofs(), std::numeric_limits<double>::quiet_NaN());
  for (auto& v : x) v = dist(gen);
  op.rate(0.3, x.data(), cpu.data());
  device_wave_rate<dim>(device_op ? *device_op : op, 0.3, x.data(), gpu.data(), form, cores, storage);
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_TRUE(std::isfinite(gpu[i])) << "entry " << i << " not written";
    diff = std::max(diff, std::abs(gpu[i] - cpu[i]));
    norm = std::max(norm, std::abs(cpu[i]));
  }
  // mf recomputes the geometry in another order of operations than the host's stored data; fp32
  // storage rounds C and s (relative 6e-8 each). The host differentiates the absolute node
  // coordinates (rounded to their magnitude, about 1) over cells of size 1 / n: on fine meshes its
  // rounding, eps k^2 n, exceeds the fixed bounds (the device's setup differentiates coordinates
  // relative to each cell's first node).
  int n_max = 1;
  for (int c : f.cells) n_max = std::max(n_max, c);
  const double rounding = 4 * std::numeric_limits<double>::epsilon() * f.degree * f.degree * n_max;
  const double tolerance =
      std::max(rounding, storage == WaveStorage::fp32 ? 1e-6 : form == WaveGeometryForm::pa ? 1e-12 : 1e-11);
  EXPECT_LT(diff, tolerance * norm)
      << dim << "D k = " << f.degree << (f.map.empty() ? " box" : " curved") << " " << to_string(form) << " "
      << to_string(cores) << " " << to_string(storage) << (device_op ? " device setup" : "");
}

/// Ten RK4 steps of the device stepper (its RK4 form `rk4`) against the CPU's classic form.
template <int dim>
void compare_steps(const WaveFile& f, WaveCores cores, WaveGeometryForm form = WaveGeometryForm::pa,
                   WaveSetup setup = WaveSetup::host, Rk4Form rk4 = Rk4Form::automatic) {
  const auto problem = make_wave_problem<dim>(f);
  const WaveOperator<dim> op(problem), device_op(problem, setup);
  auto cpu = make_cpu_wave_stepper<dim>(op, Rk4Form::classic);
  DeviceWaveOptions options;
  options.geometry_form = form;
  options.cores = cores;
  options.rk4 = rk4;
  auto gpu = make_device_wave_stepper<dim>(device_op, options);
  EXPECT_EQ(gpu->cores(), to_string(cores));
  EXPECT_EQ(gpu->rk4_form(), resolve_rk4_form(rk4));
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> x(op.n_dofs());
  for (auto& v : x) v = dist(gen);
  cpu->set_state(x);
  gpu->set_state(x);
  cpu->set_reference();
  gpu->set_reference();
  const auto bound_cpu = cpu->spectral_bound(40), bound_gpu = gpu->spectral_bound(40);
  const double radius_cpu = bound_cpu.radius;
  EXPECT_NEAR(bound_gpu.radius, radius_cpu, 1e-8 * radius_cpu);
  EXPECT_EQ(bound_gpu.lanczos.applies, bound_cpu.lanczos.applies);
  const double dt = 0.5 * rk4_imaginary_limit / radius_cpu;
  for (int n = 0; n < 10; ++n) {
    cpu->step(n * dt, dt);
    gpu->step(n * dt, dt);
  }
  EXPECT_NEAR(gpu->energy(), cpu->energy(), 1e-12 * cpu->energy());
  EXPECT_NEAR(gpu->projection(), cpu->projection(), 1e-12);
  const auto [diff, norm] = state_difference(*cpu, *gpu);
  EXPECT_LT(diff, 1e-11 * norm);
  EXPECT_EQ(gpu->operator_applies(), std::size_t(bound_gpu.lanczos.applies));  // the spectral bound's applies are the timed ones
}

}  // namespace

TEST(DeviceWave, RateMatchesCpuEveryDegree) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (auto cores : cores_to_test())
    for (int k = 2; k <= 8; ++k)
      for (bool curved : {false, true})
        for (auto form : {WaveGeometryForm::pa, WaveGeometryForm::mf}) {
          compare_rate<2>(basin_file(2, k, curved), form, cores);
          compare_rate<3>(basin_file(3, k, curved), form, cores);
        }
}

TEST(DeviceWave, RateOnLargerMeshesMatchesCpu) {
  // several full blocks of cells and a partial last one for every kernel's block shape
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (auto cores : cores_to_test())
    for (int k : {2, 3, 4, 6, 8}) {
      auto f2 = basin_file(2, k, true);
      f2.cells = {13, 7};
      compare_rate<2>(f2, WaveGeometryForm::pa, cores);
      auto f3 = basin_file(3, k, true);
      f3.cells = {7, 5, 3};
      compare_rate<3>(f3, WaveGeometryForm::pa, cores);
      compare_rate<3>(f3, WaveGeometryForm::mf, cores);
    }
}

TEST(DeviceWave, StepsMatchCpu) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (auto cores : cores_to_test()) {
    for (int k : {2, 4, 7}) {
      compare_steps<2>(basin_file(2, k, true), cores);
      compare_steps<3>(basin_file(3, k, true), cores);
    }
    compare_steps<3>(basin_file(3, 4, false), cores);
    compare_steps<3>(basin_file(3, 4, true), cores, WaveGeometryForm::mf);
    compare_steps<2>(basin_file(2, 5, true), cores, WaveGeometryForm::mf);
    // the nested form (the default: the curved basins above have a moving seafloor) without a
    // seafloor, with an absorbing side, both geometry forms; the classic form with and without
    for (int k : {3, 4}) {
      auto f3 = basin_file(3, k, true), f2 = basin_file(2, k + 1, true);
      f3.boundary.erase("zmin");
      f2.boundary.erase("ymin");
      f3.seafloor_velocity.reset();
      f2.seafloor_velocity.reset();
      for (auto form : {WaveGeometryForm::pa, WaveGeometryForm::mf}) {
        compare_steps<3>(f3, cores, form, WaveSetup::host, Rk4Form::nested);
        compare_steps<2>(f2, cores, form, WaveSetup::host, Rk4Form::nested);
      }
      compare_steps<3>(f3, cores, WaveGeometryForm::pa, WaveSetup::host, Rk4Form::classic);
    }
    compare_steps<3>(basin_file(3, 4, true), cores, WaveGeometryForm::pa, WaveSetup::host, Rk4Form::classic);
    compare_steps<2>(basin_file(2, 4, true), cores, WaveGeometryForm::pa, WaveSetup::host, Rk4Form::classic);
  }
}

TEST(DeviceWave, Fp32StoredGeometry) {
  // the rate within the rounding of the geometry, every degree, both units; ten RK4 steps, the
  // energy (with the same rounded velocity mass) and the spectral bound likewise
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (auto cores : cores_to_test())
    for (int k = 2; k <= 8; ++k) {
      compare_rate<2>(basin_file(2, k, true), WaveGeometryForm::pa, cores, WaveStorage::fp32);
      compare_rate<3>(basin_file(3, k, true), WaveGeometryForm::pa, cores, WaveStorage::fp32);
    }
  const auto problem = make_wave_problem<3>(basin_file(3, 4, true));
  const WaveOperator<3> op(problem);
  auto cpu = make_cpu_wave_stepper<3>(op);
  DeviceWaveOptions options;
  options.geometry_storage = WaveStorage::fp32;
  auto gpu = make_device_wave_stepper<3>(op, options);
  EXPECT_NE(gpu->description().find("in fp32"), std::string::npos);
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> x(op.n_dofs());
  for (auto& v : x) v = dist(gen);
  cpu->set_state(x);
  gpu->set_state(x);
  EXPECT_NEAR(gpu->energy(), cpu->energy(), 1e-6 * cpu->energy());
  const double radius = cpu->spectral_radius(40);
  EXPECT_NEAR(gpu->spectral_radius(40), radius, 1e-6 * radius);
  const double dt = 0.5 * rk4_imaginary_limit / radius;
  for (int n = 0; n < 10; ++n) {
    cpu->step(n * dt, dt);
    gpu->step(n * dt, dt);
  }
  const auto [diff, norm] = state_difference(*cpu, *gpu);
  EXPECT_LT(diff, 1e-6 * norm);
  options.geometry_form = WaveGeometryForm::mf;
  EXPECT_THROW(make_device_wave_stepper<3>(op, options), InputError);
}

TEST(DeviceWave, TensorCoresWhereTheGpuHasThem) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (int k : {4, 8}) {  // automatic: the CUDA-core kernel at k = 4, the tensor-core one at k = 8 (measured faster)
    const auto problem = make_wave_problem<3>(basin_file(3, k, false));
    const WaveOperator<3> op(problem);
    DeviceWaveOptions options;
    EXPECT_EQ(make_device_wave_stepper<3>(op, options)->cores(),
              have_fp64_tensor_cores() && k == 8 ? "tensor-core" : "cuda-core");
  }
  const auto problem = make_wave_problem<3>(basin_file(3, 4, false));
  const WaveOperator<3> op(problem);
  DeviceWaveOptions options;
  options.cores = WaveCores::tensor_core;
  if (have_fp64_tensor_cores()) {
    EXPECT_NE(make_device_wave_stepper<3>(op, options)->description().find("tensor cores"), std::string::npos);
  } else {
    EXPECT_THROW(make_device_wave_stepper<3>(op, options), InputError);
  }
}

TEST(DeviceWave, DeviceSetupMatchesTheHostsData) {
  // the geometry, masses and boundary terms computed on the device (WaveSetup::device): the rate
  // of random states against the CPU operator's for every degree, 2D and 3D, boxes and curved
  // basins (variable rho and K, absorbing and seafloor faces), pa (fp64 and fp32) and mf; RK4 steps,
  // energies and the spectral bound
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const auto cores = WaveCores::cuda_core;
  for (int k = 2; k <= 8; ++k)
    for (bool curved : {false, true})
      for (auto form : {WaveGeometryForm::pa, WaveGeometryForm::mf}) {
        compare_rate<2>(basin_file(2, k, curved), form, cores, WaveStorage::fp64, WaveSetup::device);
        compare_rate<3>(basin_file(3, k, curved), form, cores, WaveStorage::fp64, WaveSetup::device);
      }
  for (int k : {2, 5, 8}) {
    compare_rate<2>(basin_file(2, k, true), WaveGeometryForm::pa, cores, WaveStorage::fp32, WaveSetup::device);
    compare_rate<3>(basin_file(3, k, true), WaveGeometryForm::pa, cores, WaveStorage::fp32, WaveSetup::device);
  }
  for (auto c : cores_to_test()) {
    compare_steps<3>(basin_file(3, 4, true), c, WaveGeometryForm::pa, WaveSetup::device);
    compare_steps<2>(basin_file(2, 3, true), c, WaveGeometryForm::mf, WaveSetup::device);
  }
}

TEST(DeviceWave, DeviceSetupInChunksOfCells) {
  // more cells than one chunk of the device setup holds (4M velocity nodes: 65,536 cells of 2D
  // k = 8): the rate and the initial state against the host's
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  auto f = basin_file(2, 8, true);
  f.cells = {300, 221};
  compare_rate<2>(f, WaveGeometryForm::pa, WaveCores::cuda_core, WaveStorage::fp64, WaveSetup::device);
  f.initial_p = "exp(-((x-1)^2 + y^2))";
  f.initial_u = {"x*y", "sin(2*x)"};
  const auto problem = make_wave_problem<2>(f);
  const WaveOperator<2> host(problem), light(problem, WaveSetup::device);
  const auto expected = host.interpolate(problem.initial_p, problem.initial_u);
  auto gpu = make_device_wave_stepper<2>(light, DeviceWaveOptions{});
  gpu->set_initial_state();
  std::vector<double> x;
  gpu->get_state(x);
  const auto [diff, norm] = difference(expected, x);
  EXPECT_LT(diff, 1e-13 * norm);
}

TEST(DeviceWave, DeviceSetupInitialState) {
  // the initial data interpolated on the device (compiled expressions, and the normal mode's
  // host callables) against the host's interpolation; a set_state then replaces it, and
  // set_initial_state after steps interpolates again
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  auto check = [](const auto& problem, const auto& host, const auto& light) {
    const auto expected = host.interpolate(problem.initial_p, problem.initial_u);
    DeviceWaveOptions options;
    for (auto form : {WaveGeometryForm::pa, WaveGeometryForm::mf}) {
      options.geometry_form = form;
      auto gpu = make_device_wave_stepper(light, options);
      gpu->set_initial_state();
      std::vector<double> x;
      gpu->get_state(x);
      const auto [diff, norm] = difference(expected, x);  // entries not written (NaN): infinite
      EXPECT_GT(norm, 0.1);
      EXPECT_LT(diff, 1e-13 * norm) << to_string(form);
      // the energy of the device's initial state is the host's
      auto cpu = make_cpu_wave_stepper(host);
      cpu->set_state(expected);
      EXPECT_NEAR(gpu->energy(), cpu->energy(), 1e-12 * cpu->energy());
      gpu->step(0.0, 1e-3);
      gpu->set_initial_state();
      gpu->get_state(x);
      for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], expected[i], 1e-13 * norm) << "entry " << i;
    }
  };
  auto f = basin_file(3, 4, true);
  f.initial_p = "exp(-4*((x-1)^2 + (y-0.5)^2 + z^2))";
  f.initial_u = {"0.1*z", "x*y", "cos(x)"};
  {
    const auto problem = make_wave_problem<3>(f);
    check(problem, WaveOperator<3>(problem), WaveOperator<3>(problem, WaveSetup::device));
  }
  WaveFile mode;  // the normal mode: host callables
  mode.dim = 2;
  mode.degree = 5;
  mode.box = {{0.0, 2.0}, {-1.0, 0.0}};
  mode.cells = {6, 3};
  mode.mode = {1, 0};
  const auto problem = make_wave_problem<2>(mode);
  check(problem, WaveOperator<2>(problem), WaveOperator<2>(problem, WaveSetup::device));
}

TEST(DeviceWave, DeviceSetupRefusesBadInput) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  auto expect_refusal = [](const WaveFile& f, const std::vector<std::string>& parts) {
    const auto problem = make_wave_problem<2>(f);
    try {
      const WaveOperator<2> op(problem, WaveSetup::device);
      auto gpu = make_device_wave_stepper<2>(op, DeviceWaveOptions{});
      FAIL() << "accepted";
    } catch (const InputError& e) {
      for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  };
  auto f = basin_file(2, 3, false);
  f.cells = {2, 2};
  f.map = {"x", "-y"};  // inverted
  expect_refusal(f, {"inverted or degenerate", "cell (0, 0)", "at the point"});
  f.map = {"x", "y*(1.2 - x)"};  // folds over at x = 1.2, in the second column of cells
  expect_refusal(f, {"inverted or degenerate", "cell (1, "});
  auto g = basin_file(2, 3, false);
  g.K = "x - 0.5";  // negative on the left
  expect_refusal(g, {"K", "at the point", "positive"});
  g.K = "1";
  g.rho = "2*y + 1.5";  // negative near the bottom, positive on the surface
  expect_refusal(g, {"rho", "at the point", "positive"});
}
