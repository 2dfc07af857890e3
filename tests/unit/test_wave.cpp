// The acoustic-gravity wave operator on the CPU: the normal modes and their dispersion relation,
// the operator's structure (skew coupling, exact gradients of linear fields, the pairing with the
// domain's volume), mass conservation with seafloor data, energy, the RK4 step's stability bound,
// convergence in space (k + 1 for p) and time (order 4), and the two forms of RK4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>
#include <type_traits>

#include "core/error.h"
#include "wave/dispersion.h"
#include "wave/time_stepping.h"
#include "wave/wave_operator.h"
#include "wave/wave_problem.h"
#include "wave/wave_stepper.h"

using namespace tcfem;
using namespace tcfem::wave;

namespace {

WaveFile basin(int dim, int degree, std::vector<int> cells, std::vector<int> mode = {}) {
  WaveFile f;
  f.dim = dim;
  f.degree = degree;
  if (dim == 2) f.box = {{0.0, 2.0}, {-1.0, 0.0}};
  else f.box = {{0.0, 2.0}, {0.0, 1.0}, {-1.0, 0.0}};
  f.cells = std::move(cells);
  f.mode = std::move(mode);
  return f;
}

/// a curved basin: the box under a smooth map that keeps det J > 0
WaveFile curved(int dim, int degree, std::vector<int> cells) {
  WaveFile f = basin(dim, degree, std::move(cells));
  if (dim == 2) f.map = {"x + 0.1*sin(pi*x)*sin(pi*y)", "y*(1 - 0.2*sin(pi*x/2)) + 0.05*sin(2*pi*x)*(y+1)"};
  else f.map = {"x + 0.1*sin(pi*x)*sin(pi*z)", "y + 0.05*sin(pi*x)*sin(pi*y)", "z*(1 - 0.2*sin(pi*x/2)*cos(pi*y))"};
  f.rho = "1 + 0.3*x";
  f.K = "2 + cos(y)";
  return f;
}

template <int dim>
std::vector<double> random_state(const WaveOperator<dim>& op, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> x(op.n_dofs());
  for (auto& v : x) v = dist(gen);
  return x;
}

}  // namespace

TEST(WaveDispersion, RootsSolveTheRelation) {
  const double H = 1.5, g = 9.81, rho = 1000, K = 2.25e9;
  const auto m = basin_mode<3>({0, 0, -H}, {3, 2, 0}, {2, 1}, 0, rho, K, g);
  const double c = std::sqrt(K / rho), kappa = std::hypot(2 * std::numbers::pi / 3, std::numbers::pi / 2);
  const double gamma = std::sqrt(kappa * kappa - m.omega * m.omega / (c * c));
  EXPECT_NEAR(m.omega * m.omega, g * gamma * std::tanh(gamma * H), 1e-12 * m.omega * m.omega);
  // nearly incompressible water: the classical gravity-wave dispersion omega^2 = g kappa tanh(kappa H)
  EXPECT_NEAR(m.omega, std::sqrt(g * kappa * std::tanh(kappa * H)), 1e-6 * m.omega);
  for (int j = 1; j <= 3; ++j) {
    const auto a = basin_mode<2>({0, -H}, {4, 0}, {1}, j, 1.0, 1.0, 1.0);
    const double beta = a.vertical;
    EXPECT_GT(beta * H, (j - 0.5) * std::numbers::pi);
    EXPECT_LT(beta * H, j * std::numbers::pi);
    EXPECT_NEAR(a.omega * a.omega, -1.0 * beta * std::tan(beta * H), 1e-10 * a.omega * a.omega);
  }
  EXPECT_THROW((basin_mode<2>({0, -1}, {1, 0}, {0}, 0, 1, 1, 1)), InputError);
}

TEST(WaveDispersion, ModesSolveThePde) {
  // finite differences of the mode: rho u_t + grad p = 0, p_t / K + div u = 0, and at the top
  // p_t = rho g u_z; at the walls u . n = 0
  for (int branch : {0, 1, 2}) {
    const auto m = basin_mode<3>({0, 0, -1}, {2, 1, 0}, {1, 1}, branch, 1.3, 2.0, 0.7);
    const double h = 1e-5, t = 0.37;
    const double x[3] = {0.3, 0.55, -0.4};
    for (int d = 0; d < 3; ++d) {
      double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]};
      xp[d] += h;
      xm[d] -= h;
      const double dpdx = (m.pressure(xp, t) - m.pressure(xm, t)) / (2 * h);
      const double dudt = (m.velocity(x, t + h, d) - m.velocity(x, t - h, d)) / (2 * h);
      EXPECT_NEAR(m.rho * dudt + dpdx, 0.0, 1e-7 * (1 + std::abs(dpdx))) << branch << " " << d;
    }
    double div = 0;
    for (int d = 0; d < 3; ++d) {
      double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]};
      xp[d] += h;
      xm[d] -= h;
      div += (m.velocity(xp, t, d) - m.velocity(xm, t, d)) / (2 * h);
    }
    const double dpdt = (m.pressure(x, t + h) - m.pressure(x, t - h)) / (2 * h);
    EXPECT_NEAR(dpdt / m.K + div, 0.0, 1e-7 * (1 + std::abs(div)));
    const double top[3] = {0.3, 0.55, 0.0}, wall[3] = {0.0, 0.55, -0.4}, bottom[3] = {0.3, 0.55, -1.0};
    const double ptop = (m.pressure(top, t + h) - m.pressure(top, t - h)) / (2 * h);
    EXPECT_NEAR(ptop, m.rho * m.g * m.velocity(top, t, 2), 1e-7 * (1 + std::abs(ptop)));
    EXPECT_NEAR(m.velocity(wall, t, 0), 0.0, 1e-14);
    EXPECT_NEAR(m.velocity(bottom, t, 2), 0.0, 1e-14);
  }
}

template <int dim>
void check_structure(const WaveFile& file) {
  const auto problem = make_wave_problem<dim>(file);
  const WaveOperator<dim> op(problem);
  // skew coupling: (x, L y)_M = -(L x, y)_M
  const auto x = random_state(op, 1), y = random_state(op, 2);
  std::vector<double> lx(op.n_dofs()), ly(op.n_dofs());
  op.rate(0, x.data(), lx.data(), true);
  op.rate(0, y.data(), ly.data(), true);
  const double a = op.inner(x.data(), ly.data()), b = op.inner(lx.data(), y.data());
  const double scale = std::sqrt(op.inner(x.data(), x.data()) * op.inner(ly.data(), ly.data()));
  EXPECT_LT(std::abs(a + b), 1e-13 * scale) << a << " " << b;
  // a linear pressure's gradient is exact on the isoparametric cells: du/dt = -grad p / rho
  const double grad[3] = {0.7, -1.1, 0.4};
  SpaceFunction p = [&](const double* z) {
    double v = 0.3;
    for (int d = 0; d < dim; ++d) v += grad[d] * z[d];
    return v;
  };
  const auto state = op.interpolate(p, {});
  std::vector<double> r(op.n_dofs());
  op.rate(0, state.data(), r.data(), true);
  const auto problem_rho = problem.rho;
  // the velocity nodes' coordinates: interpolate x_d as the velocity's exact value
  std::array<SpaceFunction, dim> coords;
  for (int d = 0; d < dim; ++d) coords[d] = [d, problem_rho](const double* z) { return 1.0 / problem_rho(z); };
  const auto inv_rho = op.interpolate({}, coords);
  double worst = 0;
  for (std::size_t c = 0; c < op.n_cells(); ++c)
    for (int d = 0; d < dim; ++d)
      for (int q = 0; q < op.points_per_cell(); ++q) {
        const std::size_t i = (c * dim + d) * op.points_per_cell() + q;
        worst = std::max(worst, std::abs(r[i] + grad[d] * inv_rho[i]));
      }
  EXPECT_LT(worst, 1e-11);
  // pairing: p^T G^T u = (u, grad p) = |Omega| (b . a) for constant u = b, p linear with gradient a
  const double bvec[3] = {0.2, 0.9, -0.5};
  std::array<SpaceFunction, dim> u;
  for (int d = 0; d < dim; ++d) u[d] = [d, bvec](const double*) { return bvec[d]; };
  const auto su = op.interpolate({}, u), ones = op.interpolate([](const double*) { return 1.0; }, {});
  op.rate(0, su.data(), r.data(), true);
  // M_p dp/dt = G^T u; so (p, dp/dt)_Mp = p^T G^T u
  double pairing = 0;
  std::vector<double> pstate(op.n_dofs(), 0.0), rstate(op.n_dofs(), 0.0);
  for (std::size_t i = op.n_u(); i < op.n_dofs(); ++i) {
    pstate[i] = state[i];
    rstate[i] = r[i];
  }
  pairing = op.inner(pstate.data(), rstate.data());
  // the volume from the pressure mass of 1 (K varies: use the velocity mass of rho: sum w det J)
  double ab = 0;
  for (int d = 0; d < dim; ++d) ab += bvec[d] * grad[d];
  std::array<SpaceFunction, dim> unit;
  for (int d = 0; d < dim; ++d) unit[d] = [d, problem_rho](const double* z) { return d == 0 ? std::sqrt(1.0 / problem_rho(z)) : 0.0; };
  const auto uu = op.interpolate({}, unit);
  const double volume = op.inner(uu.data(), uu.data());  // sum rho w det J / rho
  EXPECT_NEAR(pairing, volume * ab, 1e-11 * std::abs(volume * ab));
  (void)ones;
}

TEST(WaveOperator, StructureOnBoxes) {
  for (int k : {2, 4, 7}) {
    check_structure<2>(basin(2, k, {3, 2}));
    check_structure<3>(basin(3, k, {3, 2, 2}));
  }
}

TEST(WaveOperator, StructureOnCurvedBasins) {
  for (int k : {2, 3, 5, 8}) {
    check_structure<2>(curved(2, k, {4, 3}));
    check_structure<3>(curved(3, k, {3, 2, 2}));
  }
}

TEST(WaveOperator, RefusesBadInput) {
  auto f = basin(2, 3, {2, 2});
  f.map = {"x", "-y"};  // inverted
  try {
    WaveOperator<2> op(make_wave_problem<2>(f));
    FAIL() << "an inverted map was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("inverted or degenerate"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cell (0, 0)"), std::string::npos) << e.what();
  }
  auto g = basin(2, 3, {2, 2});
  g.K = "y + 0.5";  // negative in the lower half
  try {
    WaveOperator<2> op(make_wave_problem<2>(g));
    FAIL() << "a negative K was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("K: must be positive"), std::string::npos) << e.what();
  }
  auto h = basin(3, 3, {2, 2, 2}, {1, 0, 0});
  h.boundary["xmin"] = "absorbing";
  EXPECT_THROW(make_wave_problem<3>(h), InputError);  // a mode needs a closed basin
  auto s = basin(3, 3, {2, 2, 2});
  s.boundary["zmin"] = "seafloor";
  EXPECT_THROW(make_wave_problem<3>(s), InputError);  // seafloor without its velocity
  s.seafloor_velocity = "t*";
  EXPECT_THROW(make_wave_problem<3>(s), InputError);  // malformed expression
}

TEST(WaveOperator, SeafloorVolumeBalance) {
  // a uniform uplift rate v on the bottom of a closed basin: d/dt sum M_p p = v |bottom|, exactly
  // (RK4 integrates the linear growth exactly)
  for (bool curved_map : {false, true}) {
    auto f = curved_map ? curved(3, 3, {3, 2, 2}) : basin(3, 3, {3, 2, 2});
    f.boundary["zmin"] = "seafloor";
    f.seafloor_velocity = "0.25";
    const auto problem = make_wave_problem<3>(f);
    const WaveOperator<3> op(problem);
    std::vector<double> x(op.n_dofs(), 0.0), ones(op.n_dofs(), 0.0), b(op.n_p());
    for (std::size_t i = op.n_u(); i < op.n_dofs(); ++i) ones[i] = 1;
    op.seafloor_data(0.0, b.data());
    double area_rate = 0;
    for (double v : b) area_rate += v;
    if (!curved_map) {
      EXPECT_NEAR(area_rate, 0.25 * 2.0, 1e-13);
    }
    Rk4Stepper<3> rk(op);
    const double dt = 0.5 * rk4_imaginary_limit / op.spectral_radius();
    for (int n = 0; n < 20; ++n) rk.step(n * dt, dt, x);
    EXPECT_NEAR(op.inner(ones.data(), x.data()), area_rate * 20 * dt, 1e-12 * area_rate * 20 * dt);
  }
}

TEST(WaveOperator, EnergyAndStability) {
  // closed basin: RK4 loses energy only at order (lambda dt)^6 per step, never gains; with an
  // absorbing side it falls; above the spectral bound the step blows up
  auto f = curved(2, 4, {6, 4});
  f.initial_p = "exp(-10*((x-1)^2 + (y+0.5)^2))";
  const auto problem = make_wave_problem<2>(f);
  const WaveOperator<2> op(problem);
  const double rho_max = op.spectral_radius(), limit = rk4_imaginary_limit / rho_max;
  auto x = op.interpolate(problem.initial_p, {});
  const double e0 = op.energy(x.data());
  Rk4Stepper<2> rk(op);
  double previous = e0;
  for (int n = 0; n < 200; ++n) {
    rk.step(n * 0.5 * limit, 0.5 * limit, x);
    const double e = op.energy(x.data());
    EXPECT_LE(e, previous * (1 + 1e-14));
    previous = e;
  }
  EXPECT_GT(previous, 0.97 * e0);
  auto fa = f;
  fa.boundary["xmax"] = "absorbing";
  const auto pa = make_wave_problem<2>(fa);
  const WaveOperator<2> opa(pa);
  auto xa = opa.interpolate(pa.initial_p, {});
  Rk4Stepper<2> rka(opa);
  const double la = rk4_imaginary_limit / opa.spectral_radius();
  for (int n = 0; n < 200; ++n) rka.step(n * 0.5 * la, 0.5 * la, xa);
  EXPECT_LT(opa.energy(xa.data()), 0.9 * opa.energy(opa.interpolate(pa.initial_p, {}).data()));
  // stability: 0.95 of the limit stays bounded, 1.2 of it grows without bound
  for (double factor : {0.95, 1.2}) {
    auto y = op.interpolate(problem.initial_p, {});
    std::mt19937_64 gen(3);
    std::uniform_real_distribution<double> dist(-1e-3, 1e-3);
    for (auto& v : y) v += dist(gen);  // every eigenvector present
    const double ey = op.energy(y.data());
    Rk4Stepper<2> r(op);
    for (int n = 0; n < 400; ++n) r.step(n * factor * limit, factor * limit, y);
    if (factor < 1) EXPECT_LE(op.energy(y.data()), ey * (1 + 1e-12));
    else EXPECT_GT(op.energy(y.data()), 1e3 * ey);
  }
}

template <int dim>
WaveOperator<dim>::Errors run_mode(const WaveFile& f, double t_end, int steps, double* omega_measured = nullptr) {
  const auto problem = make_wave_problem<dim>(f);
  const WaveOperator<dim> op(problem);
  auto x = op.interpolate(problem.initial_p, problem.initial_u);
  const auto x0 = x;
  Rk4Stepper<dim> rk(op);
  const double dt = t_end / steps;
  EXPECT_LT(dt, rk4_imaginary_limit / op.spectral_radius());
  std::vector<double> ts{0.0}, cs{1.0};
  const double norm0 = op.inner(x0.data(), x0.data());
  for (int n = 0; n < steps; ++n) {
    rk.step(n * dt, dt, x);
    ts.push_back((n + 1) * dt);
    cs.push_back(op.inner(x.data(), x0.data()) / norm0);
  }
  if (omega_measured) *omega_measured = frequency_from_crossings(ts, cs);
  return op.errors(x.data(), problem.exact_p, problem.exact_u, t_end);
}

TEST(WaveConvergence, SpaceRatesOfTheNormalMode) {
  // 2D basin at 0.4 periods: p converges at k + 1 in L2 for odd k with the free surface (gravity
  // branch), and for every k in the rigid-lid limit (g large, acoustic branch); with a free
  // surface of g ~ 1 and even k the lumped surface mass limits p to order k (measured, docs)
  struct Case {
    int k, branch;
    const char* g;
    double rate;
  };
  for (const Case& c : {Case{3, 0, "1", 4.0}, Case{2, 1, "1e6", 3.0}, Case{4, 1, "1e6", 5.0}, Case{2, 0, "1", 2.0},
                        Case{4, 0, "1", 4.0}}) {
    std::vector<double> errors;
    for (int n : {2, 4, 8}) {
      auto f = basin(2, c.k, {2 * n, n}, {1, c.branch});
      f.g = c.g;
      const auto p = make_wave_problem<2>(f);
      const auto e = run_mode<2>(f, 0.4 * p.mode->period(), 24 * n * c.k);
      errors.push_back(e.p_l2);
    }
    const double rate = std::log2(errors[1] / errors[2]);
    std::printf("k = %d, branch %d, g = %s: p rate %.2f\n", c.k, c.branch, c.g, rate);
    EXPECT_GT(rate, c.rate - 0.3) << "k = " << c.k << " branch " << c.branch << ": " << errors[0] << " " << errors[1]
                                  << " " << errors[2];
  }
}

TEST(WaveConvergence, TimeOrderFour) {
  // both forms of RK4 (the mode's rate is linear and autonomous)
  auto f = basin(2, 3, {4, 2}, {1, 1});  // acoustic branch 1: fast enough for large time errors
  const auto p = make_wave_problem<2>(f);
  const WaveOperator<2> op(p);
  const double T = 0.5 * p.mode->period();
  const double limit = rk4_imaginary_limit / op.spectral_radius();
  const int n0 = static_cast<int>(std::ceil(T / limit)) + 1;
  for (auto form : {Rk4Form::classic, Rk4Form::nested}) {
    auto solve = [&](int steps) {
      auto x = op.interpolate(p.initial_p, p.initial_u);
      Rk4Stepper<2> rk(op, form);
      EXPECT_EQ(rk.form(), form);
      for (int n = 0; n < steps; ++n) rk.step(n * T / steps, T / steps, x);
      return x;
    };
    const auto ref = solve(16 * n0);
    std::vector<double> err;
    for (int m : {1, 2}) {
      auto x = solve(m * n0);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] -= ref[i];
      err.push_back(std::sqrt(op.inner(x.data(), x.data())));
    }
    const double rate = std::log2(err[0] / err[1]);
    std::printf("RK4 (%s) order measured: %.3f\n", to_string(form), rate);
    EXPECT_GT(rate, 3.7) << to_string(form) << " " << err[0] << " " << err[1];
  }
}

TEST(WaveTimeStepping, NestedFormEqualsClassic) {
  // curved basins with an absorbing side (not skew), without and with a moving seafloor (the
  // nested form's combined stage forcing): ten steps of both forms from a random state agree to
  // rounding; automatic is nested
  for (int dim : {2, 3}) {
    auto run = [&](auto tag) {
      constexpr int d = decltype(tag)::value;
      auto f = curved(d, 3, d == 2 ? std::vector<int>{5, 3} : std::vector<int>{3, 2, 2});
      f.boundary["xmax"] = "absorbing";
      for (bool floor : {false, true}) {
        if (floor) {
          f.boundary[d == 2 ? "ymin" : "zmin"] = "seafloor";
          f.seafloor_velocity = "sin(3*t)*x + t*t";
        }
        const auto problem = make_wave_problem<d>(f);
        const WaveOperator<d> op(problem);
        EXPECT_EQ(op.has_seafloor(), floor);
        const auto x0 = random_state(op, 17);
        const double dt = 0.5 * rk4_imaginary_limit / op.spectral_radius();
        auto classic = x0, nested = x0;
        Rk4Stepper<d> rc(op, Rk4Form::classic), rn(op, Rk4Form::nested);
        for (int n = 0; n < 10; ++n) {
          rc.step(0.3 + n * dt, dt, classic);
          rn.step(0.3 + n * dt, dt, nested);
        }
        double diff = 0, norm = 0, change = 0;
        for (std::size_t i = 0; i < x0.size(); ++i) {
          diff = std::max(diff, std::abs(classic[i] - nested[i]));
          norm = std::max(norm, std::abs(classic[i]));
          change = std::max(change, std::abs(classic[i] - x0[i]));
        }
        EXPECT_LT(diff, 1e-12 * norm) << dim << "D, seafloor " << floor;
        EXPECT_GT(diff, 0.0) << "the two forms round differently; equal states mean one form ran twice";
        EXPECT_GT(change, 1e-3 * norm);  // the steps moved the state
        EXPECT_EQ(rn.operator_applies(), 40u);
        if (!floor) {
          EXPECT_LT(op.energy(nested.data()), op.energy(x0.data()));  // the absorbing side takes energy
        }
        EXPECT_EQ(Rk4Stepper<d>(op).form(), Rk4Form::nested);
        EXPECT_EQ(make_cpu_wave_stepper<d>(op)->rk4_form(), Rk4Form::nested);
        EXPECT_EQ(make_cpu_wave_stepper<d>(op, Rk4Form::classic)->rk4_form(), Rk4Form::classic);
      }
    };
    if (dim == 2) run(std::integral_constant<int, 2>{});
    else run(std::integral_constant<int, 3>{});
  }
  EXPECT_EQ(resolve_rk4_form(Rk4Form::automatic), Rk4Form::nested);
  EXPECT_EQ(resolve_rk4_form(Rk4Form::classic), Rk4Form::classic);
}

TEST(WaveTimeStepping, NestedForcingWeightsReproduceClassicRk4) {
  // the scalar problem y' = lambda y + b(t): one nested step against one classic step, for
  // polynomial and oscillating b (the weights rk4_nested_forcing, not just a vector identity)
  const double lambda = -0.7, h = 0.3, t = 0.4;
  for (int which = 0; which < 3; ++which) {
    auto b = [which](double s) { return which == 0 ? 1.0 + s : which == 1 ? s * s * s : std::sin(5 * s); };
    const double y = 0.9;
    const double k1 = lambda * y + b(t), k2 = lambda * (y + h / 2 * k1) + b(t + h / 2),
                 k3 = lambda * (y + h / 2 * k2) + b(t + h / 2), k4 = lambda * (y + h * k3) + b(t + h);
    const double classic = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4);
    const double bs[3] = {b(t), b(t + h / 2), b(t + h)}, c[4] = {h / 4, h / 3, h / 2, h};
    double w = y;
    for (int stage = 0; stage < 4; ++stage) {
      const double* f = rk4_nested_forcing[stage];
      w = y + c[stage] * (lambda * w + f[0] * bs[0] + f[1] * bs[1] + f[2] * bs[2]);
    }
    EXPECT_NEAR(w, classic, 1e-15) << which;
  }
}

TEST(WaveConvergence, MeasuredFrequencyMatchesTheDispersionRelation) {
  auto f = basin(2, 5, {8, 4}, {1, 0});
  const auto p = make_wave_problem<2>(f);
  double omega = 0;
  const auto e = run_mode<2>(f, 3 * p.mode->period(), 2000, &omega);
  EXPECT_NEAR(omega, p.mode->omega, 1e-5 * p.mode->omega);
  EXPECT_LT(e.p_l2 / e.p_norm, 1e-5);
  auto f3 = basin(3, 4, {4, 2, 2}, {1, 1, 0});
  const auto p3 = make_wave_problem<3>(f3);
  const auto e3 = run_mode<3>(f3, 2.2 * p3.mode->period(), 880, &omega);
  EXPECT_NEAR(omega, p3.mode->omega, 1e-4 * p3.mode->omega);
  EXPECT_LT(e3.p_l2 / e3.p_norm, 3e-3);  // 4 x 2 x 2 cells: 1.3e-3 measured
  EXPECT_LT(e3.u_l2 / e3.u_norm, 1e-2);
}

TEST(WaveOperator, DeviceSetupKeepsTheHostsBoundaryTermsAndPostProcessing) {
  // WaveSetup::device: the operator holds no cell data, but its boundary terms, initial state,
  // errors and output are the host operator's (computed from the map at each cell's nodes)
  auto f = curved(3, 3, {4, 3, 2});
  f.boundary["xmax"] = "absorbing";
  f.boundary["ymin"] = "absorbing";
  f.boundary["zmin"] = "seafloor";
  f.seafloor_velocity = "sin(3*t)*x";
  f.initial_p = "exp(-4*((x-1)^2 + y^2))";
  f.initial_u = {"0.1*z", "x*y", "cos(x)"};
  f.exact_p = "cos(t)*x";
  f.exact_u = {"t*y", "0", "sin(x*t)"};
  const auto problem = make_wave_problem<3>(f);
  const WaveOperator<3> host(problem), light(problem, WaveSetup::device);
  EXPECT_TRUE(host.has_cell_data());
  EXPECT_FALSE(light.has_cell_data());
  auto same_terms = [](const std::vector<NodeTerm>& a, const std::vector<NodeTerm>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].node, b[i].node);
      EXPECT_EQ(a[i].value, b[i].value);
      if (i) {
        EXPECT_LT(a[i - 1].node, a[i].node);  // by node, each node once
      }
    }
  };
  ASSERT_FALSE(host.surface_mass_terms().empty());
  ASSERT_FALSE(host.absorbing_terms().empty());
  same_terms(host.surface_mass_terms(), light.surface_mass_terms());
  same_terms(host.absorbing_terms(), light.absorbing_terms());
  // the host's mass and damping contain the terms: at an absorbing node the damping is its term
  for (const auto& t : host.absorbing_terms()) EXPECT_EQ(host.absorbing()[t.node], t.value);
  EXPECT_EQ(host.seafloor_nodes(), light.seafloor_nodes());
  std::vector<double> a(host.seafloor_nodes().size()), b(a.size());
  host.seafloor_values(0.7, a.data());
  light.seafloor_values(0.7, b.data());
  EXPECT_EQ(a, b);
  const auto x = host.interpolate(problem.initial_p, problem.initial_u);
  EXPECT_EQ(x, light.interpolate(problem.initial_p, problem.initial_u));
  const auto e1 = host.errors(x.data(), problem.exact_p, problem.exact_u, 0.4);
  const auto e2 = light.errors(x.data(), problem.exact_p, problem.exact_u, 0.4);
  EXPECT_NEAR(e2.p_l2, e1.p_l2, 1e-13 * e1.p_l2);
  EXPECT_NEAR(e2.u_l2, e1.u_l2, 1e-13 * e1.u_l2);
  EXPECT_NEAR(e2.u_norm, e1.u_norm, 1e-13 * e1.u_norm);
  std::vector<double> p1, p2;
  std::vector<std::vector<double>> f1, f2;
  host.cell_output(x.data(), p1, f1);
  light.cell_output(x.data(), p2, f2);
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(f1, f2);
  // what needs the cell data refuses
  std::vector<double> r(light.n_dofs());
  EXPECT_THROW(light.rate(0.0, x.data(), r.data()), Error);
  EXPECT_THROW(light.inner(x.data(), x.data()), Error);
  EXPECT_THROW(light.mass_p(), Error);
  EXPECT_THROW(make_cpu_wave_stepper<3>(light), Error);
  // the CPU stepper's initial state is the interpolated one
  auto stepper = make_cpu_wave_stepper<3>(host);
  stepper->set_initial_state();
  std::vector<double> y;
  stepper->get_state(y);
  EXPECT_EQ(y, x);
}

TEST(WaveSpectralBound, TridiagonalEigenvalue) {
  // zero diagonal, off-diagonal 1, size n: eigenvalues 2 cos(j pi / (n + 1))
  for (int n : {1, 2, 3, 10, 57}) {
    const std::vector<double> beta(n - 1, 1.0);
    EXPECT_NEAR(largest_eigenvalue_zero_diagonal(beta), n == 1 ? 0.0 : 2 * std::cos(std::numbers::pi / (n + 1)), 1e-14);
  }
  // a 2 x 2 block: +-|b|
  EXPECT_NEAR(largest_eigenvalue_zero_diagonal({-3.5}), 3.5, 1e-14);
  // a split matrix (a zero off-diagonal): the larger block's value
  EXPECT_NEAR(largest_eigenvalue_zero_diagonal({1.0, 0.0, 2.0}), 2.0, 1e-14);
}

TEST(WaveSpectralBound, SkewLanczosFindsTheLargestFrequency) {
  // the operator's skew part assembled column by column on a small basin; S = M^1/2 L M^-1/2 is
  // skew-symmetric and its largest |eigenvalue| squared is the largest eigenvalue of S^T S (power
  // iteration to convergence on the dense matrix)
  for (bool curved_map : {false, true}) {
    const auto f = curved_map ? curved(2, 3, {3, 2}) : basin(2, 2, {3, 2});
    const auto problem = make_wave_problem<2>(f);
    const WaveOperator<2> op(problem);
    const std::size_t n = op.n_dofs();
    std::vector<double> mass(n), e(n, 0.0), col(n), S(n * n);
    for (std::size_t i = 0; i < n; ++i) {
      e[i] = 1;
      mass[i] = op.inner(e.data(), e.data());
      e[i] = 0;
    }
    for (std::size_t j = 0; j < n; ++j) {
      e[j] = 1;
      op.rate(0.0, e.data(), col.data(), true);
      e[j] = 0;
      for (std::size_t i = 0; i < n; ++i) S[i * n + j] = std::sqrt(mass[i]) * col[i] / std::sqrt(mass[j]);
    }
    double skew = 0, size = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        skew = std::max(skew, std::abs(S[i * n + j] + S[j * n + i]));
        size = std::max(size, std::abs(S[i * n + j]));
      }
    EXPECT_LT(skew, 1e-12 * size);
    std::vector<double> x(n, 1.0), y(n), z(n);
    double lambda = 0;
    for (int it = 0; it < 20000; ++it) {
      for (std::size_t i = 0; i < n; ++i) {
        y[i] = 0;
        for (std::size_t j = 0; j < n; ++j) y[i] += S[i * n + j] * x[j];
      }
      for (std::size_t i = 0; i < n; ++i) {
        z[i] = 0;
        for (std::size_t j = 0; j < n; ++j) z[i] += S[j * n + i] * y[j];
      }
      double norm = 0, xz = 0;
      for (std::size_t i = 0; i < n; ++i) {
        norm += z[i] * z[i];
        xz += x[i] * z[i];
      }
      norm = std::sqrt(norm);
      double xx = 0;
      for (double v : x) xx += v * v;
      lambda = xz / xx;
      for (std::size_t i = 0; i < n; ++i) x[i] = z[i] / norm;
    }
    const double sigma = std::sqrt(lambda);
    const auto bound = op.spectral_bound(int(n) + 20);
    EXPECT_NEAR(bound.lanczos.sigma, sigma, 1e-9 * sigma) << (curved_map ? "curved" : "box");
    EXPECT_LT(bound.lanczos.applies, int(n) + 20);  // converged, stopped early
    for (std::size_t i = 1; i < bound.lanczos.ritz.size(); ++i) {  // Ritz values grow towards sigma from below
      EXPECT_GE(bound.lanczos.ritz[i], bound.lanczos.ritz[i - 1] * (1 - 1e-12));
      EXPECT_LE(bound.lanczos.ritz[i], sigma * (1 + 1e-10));
    }
    // at 20 applies Lanczos is already near sigma (power iteration on L^2 takes many more)
    EXPECT_GT(op.spectral_bound(20).lanczos.sigma, 0.95 * sigma);
    EXPECT_EQ(bound.radius, bound.lanczos.sigma + bound.damping);
  }
}
