#include "wave/time_stepping.h"

#include <chrono>
#include <cmath>
#include <numbers>

#include "core/parallel.h"

namespace tcfem::wave {

template <int dim>
Rk4Stepper<dim>::Rk4Stepper(const WaveOperator<dim>& op)
    : op_(&op), k_(op.n_dofs()), y_(op.n_dofs()), acc_(op.n_dofs()) {}

template <int dim>
void Rk4Stepper<dim>::step(double t, double dt, std::vector<double>& x) {
  const std::size_t n = x.size();
  auto apply = [&](double time, const double* in) {
    const auto t0 = std::chrono::steady_clock::now();
    op_->rate(time, in, k_.data());
    operator_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++applies_;
  };
  // acc = x + b_i dt k_i (accumulated), y = x + a_i dt k_i (the next stage's input), one pass each
  auto update = [&](double b, double a, bool first) {
    parallel_chunks(0, n, [&](std::size_t lo, std::size_t hi, int) {
      for (std::size_t i = lo; i < hi; ++i) {
        acc_[i] = (first ? x[i] : acc_[i]) + b * k_[i];
        y_[i] = x[i] + a * k_[i];
      }
    }, host_threads(), 1 << 15);
  };
  apply(t, x.data());
  update(dt / 6, dt / 2, true);
  apply(t + dt / 2, y_.data());
  update(dt / 3, dt / 2, false);
  apply(t + dt / 2, y_.data());
  update(dt / 3, dt, false);
  apply(t + dt, y_.data());
  parallel_chunks(0, n, [&](std::size_t lo, std::size_t hi, int) {
    for (std::size_t i = lo; i < hi; ++i) x[i] = acc_[i] + dt / 6 * k_[i];
  }, host_threads(), 1 << 15);
}

double frequency_from_crossings(const std::vector<double>& t, const std::vector<double>& c, int* crossings) {
  double first = 0, last = 0;
  int n = 0;
  for (std::size_t i = 1; i < c.size() && i < t.size(); ++i) {
    if ((c[i - 1] > 0) == (c[i] > 0) || c[i - 1] == c[i]) continue;
    const double tc = t[i - 1] + (t[i] - t[i - 1]) * c[i - 1] / (c[i - 1] - c[i]);
    if (n == 0) first = tc;
    last = tc;
    ++n;
  }
  if (crossings) *crossings = n;
  if (n < 2) return 0.0;
  return std::numbers::pi * (n - 1) / (last - first);
}

template class Rk4Stepper<2>;
template class Rk4Stepper<3>;

}  // namespace tcfem::wave

#include "core/error.h"
#include "wave/wave_stepper.h"

namespace tcfem::wave {
namespace {
template <int dim>
class CpuWaveStepper final : public WaveStepper {
 public:
  explicit CpuWaveStepper(const WaveOperator<dim>& op) : op_(op), rk_(op), x_(op.n_dofs()) {}
  void set_state(const std::vector<double>& x) override { x_ = x; }
  void set_initial_state() override { x_ = op_.interpolate(op_.problem().initial_p, op_.problem().initial_u); }
  void get_state(std::vector<double>& x) override { x = x_; }
  void step(double t, double dt) override { rk_.step(t, dt, x_); }
  double energy() override { return op_.energy(x_.data()); }
  void set_reference() override {
    x0_ = x_;
    norm0_ = op_.inner(x0_.data(), x0_.data());
  }
  double projection() override { return norm0_ > 0 ? op_.inner(x_.data(), x0_.data()) / norm0_ : 0.0; }
  SpectralBound spectral_bound(int max_applies) override { return op_.spectral_bound(max_applies); }
  double operator_seconds() const override { return rk_.operator_seconds(); }
  std::size_t operator_applies() const override { return rk_.operator_applies(); }
  std::string description() const override { return "cpu, fp64, stored geometry (host threads)"; }
  std::size_t memory_bytes() const override {
    return sizeof(double) * (5 * op_.n_dofs() + op_.geometry_c().size() + 2 * op_.geometry_s().size() + 3 * op_.n_p());
  }

 private:
  const WaveOperator<dim>& op_;
  Rk4Stepper<dim> rk_;
  std::vector<double> x_, x0_;
  double norm0_ = 0;
};
}  // namespace

template <int dim>
std::unique_ptr<WaveStepper> make_cpu_wave_stepper(const WaveOperator<dim>& op) {
  if (!op.has_cell_data()) throw Error("the CPU wave stepper needs the operator's cell data on the host (WaveSetup::host)");
  return std::make_unique<CpuWaveStepper<dim>>(op);
}
template std::unique_ptr<WaveStepper> make_cpu_wave_stepper<2>(const WaveOperator<2>&);
template std::unique_ptr<WaveStepper> make_cpu_wave_stepper<3>(const WaveOperator<3>&);

}  // namespace tcfem::wave
