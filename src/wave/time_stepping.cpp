#include "wave/time_stepping.h"

#include <chrono>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "core/parallel.h"

namespace tcfem::wave {

const char* to_string(Rk4Form form) {
  switch (form) {
    case Rk4Form::classic: return "classic";
    case Rk4Form::nested: return "nested";
    case Rk4Form::automatic: break;
  }
  return "auto";
}

template <int dim>
Rk4Stepper<dim>::Rk4Stepper(const WaveOperator<dim>& op, Rk4Form form)
    : op_(&op), form_(resolve_rk4_form(form)), k_(op.n_dofs()), y_(op.n_dofs()) {
  if (form_ == Rk4Form::classic) acc_.resize(op.n_dofs());
  if (form_ == Rk4Form::nested && op.has_seafloor()) {
    for (auto& v : floor_) v.resize(op.seafloor_nodes().size());
    forcing_.resize(floor_[0].size());
  }
}

template <int dim>
void Rk4Stepper<dim>::step(double t, double dt, std::vector<double>& x) {
  const std::size_t n = x.size();
  auto apply = [&](double time, const double* in) {
    const auto t0 = std::chrono::steady_clock::now();
    op_->rate(time, in, k_.data());
    operator_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++applies_;
  };
  if (form_ == Rk4Form::nested) {
    // w = x + c dt (L w + f) for c = 1/4, 1/3, 1/2 (w = x first), then x += dt (L w + f)
    const bool floor = !forcing_.empty();
    if (floor) {
      op_->seafloor_values(t, floor_[0].data());
      op_->seafloor_values(t + dt / 2, floor_[1].data());
      op_->seafloor_values(t + dt, floor_[2].data());
    }
    const double c[4] = {dt / 4, dt / 3, dt / 2, dt};
    for (int stage = 0; stage < 4; ++stage) {
      const double* in = stage == 0 ? x.data() : y_.data();
      const auto t0 = std::chrono::steady_clock::now();
      if (floor) {
        const double* w = rk4_nested_forcing[stage];
        for (std::size_t i = 0; i < forcing_.size(); ++i)
          forcing_[i] = w[0] * floor_[0][i] + w[1] * floor_[1][i] + w[2] * floor_[2][i];
        op_->rate_with_seafloor(in, k_.data(), forcing_.data());
      } else {
        op_->rate(t, in, k_.data());
      }
      operator_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++applies_;
      double* out = stage == 3 ? x.data() : y_.data();
      parallel_chunks(0, n, [&](std::size_t lo, std::size_t hi, int) {
        for (std::size_t i = lo; i < hi; ++i) out[i] = x[i] + c[stage] * k_[i];
      }, host_threads(), 1 << 15);
    }
    return;
  }
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
  CpuWaveStepper(const WaveOperator<dim>& op, Rk4Form form) : op_(op), rk_(op, form), x_(op.n_dofs()) {}
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
  Rk4Form rk4_form() const override { return rk_.form(); }
  std::size_t memory_bytes() const override {
    const std::size_t vectors = rk_.form() == Rk4Form::classic ? 5 : 4;  // x, x0, k, y (, acc)
    return sizeof(double) * (vectors * op_.n_dofs() + op_.geometry_c().size() + 2 * op_.geometry_s().size() + 3 * op_.n_p());
  }

 private:
  const WaveOperator<dim>& op_;
  Rk4Stepper<dim> rk_;
  std::vector<double> x_, x0_;
  double norm0_ = 0;
};
}  // namespace

template <int dim>
std::unique_ptr<WaveStepper> make_cpu_wave_stepper(const WaveOperator<dim>& op, Rk4Form form) {
  if (!op.has_cell_data()) throw Error("the CPU wave stepper needs the operator's cell data on the host (WaveSetup::host)");
  return std::make_unique<CpuWaveStepper<dim>>(op, form);
}
template std::unique_ptr<WaveStepper> make_cpu_wave_stepper<2>(const WaveOperator<2>&, Rk4Form);
template std::unique_ptr<WaveStepper> make_cpu_wave_stepper<3>(const WaveOperator<3>&, Rk4Form);

}  // namespace tcfem::wave
