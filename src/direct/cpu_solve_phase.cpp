// The solve phase on the CPU through BLAS, in FP64, FP32 and emulated FP16.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <type_traits>

#include "arch/number_formats.h"
#include "core/error.h"
#include "direct/dense.h"
#include "direct/solve_phase.h"

namespace tcfem::direct {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp64:
      return "fp64";
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::tf32x3:
      return "tf32x3";
    case Precision::fp16:
      return "fp16";
  }
  return "?";
}

const char* to_string(SolveComponent c) {
  switch (c) {
    case SolveComponent::gemm_pi:
      return "GEMM Pi^-1";
    case SolveComponent::gemm_classes:
      return "GEMM C_k^-1";
    case SolveComponent::sparse:
      return "sparse B, D";
    case SolveComponent::copies:
      return "copies, conversions";
  }
  return "?";
}

Precision parse_precision(const std::string& name, const std::string& option) {
  for (auto p : {Precision::fp64, Precision::fp32, Precision::tf32, Precision::tf32x3, Precision::fp16})
    if (name == to_string(p)) return p;
  throw InputError(option + ": value " + name + " is not allowed; allowed: fp64, fp32, tf32, tf32x3, fp16");
}

int matrix_bytes(Precision p) {
  return p == Precision::fp64 || p == Precision::tf32x3 ? 8 : p == Precision::fp16 ? 2 : 4;
}

Tf32Split split_tf32(double v) {
  const float hi = arch::Tf32Format::round(static_cast<float>(v));
  return {hi, arch::Tf32Format::round(static_cast<float>(v - double(hi)))};
}
int vector_bytes(Precision p) { return p == Precision::fp64 ? 8 : 4; }

std::vector<double> column_scales(const BlockVectors<double>& b) {
  std::vector<double> scale(static_cast<std::size_t>(b.nrhs), 1.0);
  for (std::int64_t r = 0; r < b.nrhs; ++r) {
    double m = 0.0;
    auto scan = [&](const std::vector<double>& v) {
      const std::int64_t rows = static_cast<std::int64_t>(v.size()) / b.nrhs;
      for (std::int64_t i = 0; i < rows; ++i) m = std::max(m, std::abs(v[i + r * rows]));
    };
    scan(b.c);
    scan(b.e);
    for (const auto& blk : b.i) scan(blk);
    if (m > 0 && std::isfinite(m)) scale[r] = std::ldexp(1.0, -std::ilogb(m) - 1);
  }
  return scale;
}

double cuda_solve_phase_bytes(const PrehandledSystem& s, Precision p, std::int64_t nrhs) {
  const double mb = matrix_bytes(p), vb = vector_bytes(p);
  double bytes = mb * (double(s.n_edge) * double(s.n_edge) +
                       double(s.n_classes()) * double(s.nodes_per_cell) * double(s.nodes_per_cell));
  const double sparse_nnz = 2.0 * double(s.b.nnz() + s.nnz_d());
  bytes += sparse_nnz * (mb + 4) + 8.0 * 2.0 * double(s.n_coarse + s.n_edge + s.n_interior);
  // b, x and scratch (y_k / t_k, r_E) blocks; FP16 adds a half copy of the largest GEMM input,
  // tf32x3 its hi and lo parts
  bytes += double(nrhs) * double(s.n()) * (3 * vb + (p == Precision::fp16 ? 2 : p == Precision::tf32x3 ? 8 : 0));
  return bytes + 64e6;
}

namespace {

using clock_type = std::chrono::steady_clock;

template <typename Number>
struct TypedCsr {
  const CsrMatrix* pattern = nullptr;
  std::vector<Number> values;
};

/// y -= A x for nrhs columns.
template <typename Number>
void spmm_subtract(const TypedCsr<Number>& a, std::int64_t nrhs, const Number* x, std::int64_t ldx, Number* y,
                   std::int64_t ldy) {
  const auto& m = *a.pattern;
  for (std::int64_t r = 0; r < nrhs; ++r) {
    const Number* xr = x + r * ldx;
    Number* yr = y + r * ldy;
    for (std::int64_t i = 0; i < m.n_rows; ++i) {
      Number s = 0;
      for (std::int64_t p = m.row_ptr[i]; p < m.row_ptr[i + 1]; ++p) s += a.values[p] * xr[m.cols[p]];
      yr[i] -= s;
    }
  }
}

template <typename Number>
class CpuSolvePhase final : public SolvePhase {
 public:
  CpuSolvePhase(const PrehandledSystem& s, Precision p) : s_(s), precision_(p) {
    const auto t = clock_type::now();
    // FP64 uses the system's matrices in place; the other precisions hold converted copies
    if constexpr (std::is_same_v<Number, double>) {
      pi_ptr_ = s.pi_inverse.data();
      for (const auto& c : s.class_inverse) class_ptr_.push_back(c.data());
    } else {
      pi_ = convert_dense(s.pi_inverse);
      for (const auto& c : s.class_inverse) class_.push_back(convert_dense(c));
      if (p == Precision::tf32x3) {
        pi_lo_ = split_low(s.pi_inverse);
        for (const auto& c : s.class_inverse) class_lo_.push_back(split_low(c));
      }
      pi_ptr_ = pi_.data();
      for (const auto& c : class_) class_ptr_.push_back(c.data());
    }
    b_ = typed(s.b);
    bt_ = typed(s.bt);
    for (const auto& m : s.d) d_.push_back(typed(m));
    for (const auto& m : s.dt) dt_.push_back(typed(m));
    setup_seconds_ = std::chrono::duration<double>(clock_type::now() - t).count();
  }

  void load(const BlockVectors<double>& b) override {
    nrhs_ = b.nrhs;
    scale_ = column_scales(b);
    bc_ = convert_scaled(b.c, s_.n_coarse);
    be_ = convert_scaled(b.e, s_.n_edge);
    bi_.clear();
    for (std::size_t k = 0; k < b.i.size(); ++k) bi_.push_back(convert_scaled(b.i[k], s_.class_size(k)));
    xc_.assign(bc_.size(), 0);
    xe_.assign(be_.size(), 0);
    re_.assign(be_.size(), 0);
    xi_.assign(bi_.size(), {});
    yi_.assign(bi_.size(), {});
    for (std::size_t k = 0; k < bi_.size(); ++k) {
      xi_[k].assign(bi_[k].size(), 0);
      yi_[k].assign(bi_[k].size(), 0);
    }
    std::size_t largest = std::max(be_.size(), bc_.size());
    for (const auto& v : bi_) largest = std::max(largest, v.size());
    const bool rounds = precision_ == Precision::fp16 || precision_ == Precision::tf32 || precision_ == Precision::tf32x3;
    rounded_.assign(rounds ? largest : 0, 0);
  }

  double run() override {
    const auto t = clock_type::now();
    times_ = {};
    last_ = t;
    const std::int64_t nc = s_.n_coarse, ne = s_.n_edge, npc = s_.nodes_per_cell;
    // (4): y_k = C_k^{-1} b_k; r_E = b_E - B^T b_C - sum_k D_k y_k; x_E = Pi^{-1} r_E
    std::copy(be_.begin(), be_.end(), re_.begin());
    mark(SolveComponent::copies);
    spmm_subtract(bt_, nrhs_, bc_.data(), nc, re_.data(), ne);
    mark(SolveComponent::sparse);
    for (std::size_t k = 0; k < class_ptr_.size(); ++k) {
      const Number* in = gemm_input(bi_[k]);
      mark(SolveComponent::copies);
      product(class_ptr_[k], k, npc, s_.class_cells[k] * nrhs_, in, yi_[k].data());
      mark(SolveComponent::gemm_classes);
      const Number* y = sparse_input(yi_[k]);
      mark(SolveComponent::copies);
      spmm_subtract(d_[k], nrhs_, y, s_.class_size(k), re_.data(), ne);
      mark(SolveComponent::sparse);
    }
    const Number* r = gemm_input(re_);
    mark(SolveComponent::copies);
    product(pi_ptr_, -1, ne, nrhs_, r, xe_.data());
    mark(SolveComponent::gemm_pi);
    // (5): x_C = b_C - B x_E
    std::copy(bc_.begin(), bc_.end(), xc_.begin());
    const Number* x = sparse_input(xe_);
    mark(SolveComponent::copies);
    spmm_subtract(b_, nrhs_, x, ne, xc_.data(), nc);
    mark(SolveComponent::sparse);
    // (6): x_k = C_k^{-1} (b_k - D_k^T x_E)
    for (std::size_t k = 0; k < class_ptr_.size(); ++k) {
      std::copy(bi_[k].begin(), bi_[k].end(), yi_[k].begin());
      mark(SolveComponent::copies);
      spmm_subtract(dt_[k], nrhs_, x, ne, yi_[k].data(), s_.class_size(k));
      mark(SolveComponent::sparse);
      const Number* in = gemm_input(yi_[k]);
      mark(SolveComponent::copies);
      product(class_ptr_[k], k, npc, s_.class_cells[k] * nrhs_, in, xi_[k].data());
      mark(SolveComponent::gemm_classes);
    }
    return std::chrono::duration<double>(clock_type::now() - t).count();
  }

  ComponentSeconds breakdown() const override { return times_; }

  BlockVectors<double> result() const override {
    BlockVectors<double> x;
    x.nrhs = nrhs_;
    x.c = unscale(xc_, s_.n_coarse);
    x.e = unscale(xe_, s_.n_edge);
    for (std::size_t k = 0; k < xi_.size(); ++k) x.i.push_back(unscale(xi_[k], s_.class_size(k)));
    return x;
  }

  std::string description() const override {
    const std::string blas = std::string("cpu, ") + blas_library_name();
    switch (precision_) {
      case Precision::fp64:
        return blas + " dgemm";
      case Precision::fp32:
        return blas + " sgemm";
      case Precision::tf32:
        return blas + " sgemm on TF32-rounded GEMM inputs (TF32 emulated, FP32 accumulation)";
      case Precision::tf32x3:
        return blas + " 3 sgemm per product on TF32 hi/lo splits (3xTF32 emulated, FP32 accumulation)";
      case Precision::fp16:
        return blas + " sgemm on FP16-rounded inputs (FP16 emulated, FP32 accumulation)";
    }
    return blas;
  }
  double setup_seconds() const override { return setup_seconds_; }

 private:
  /// Rounding of the dense matrices and GEMM inputs: FP16 or TF32 (emulated formats), else none.
  Number round_dense(double v) const {
    if (precision_ == Precision::fp16) return arch::Fp16Format::round(static_cast<float>(v));
    if (precision_ == Precision::tf32) return arch::Tf32Format::round(static_cast<float>(v));
    if (precision_ == Precision::tf32x3) return split_tf32(v).hi;
    return static_cast<Number>(v);
  }
  /// Rounding of the sparse matrices, sparse inputs and right-hand sides: FP16 only (TF32 is a
  /// tensor-core format; the sparse products run in FP32).
  Number round_sparse(double v) const {
    if (precision_ == Precision::fp16) return arch::Fp16Format::round(static_cast<float>(v));
    return static_cast<Number>(v);
  }
  std::vector<Number> split_low(const std::vector<double>& v) const {
    std::vector<Number> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = split_tf32(v[i]).lo;
    return out;
  }
  std::vector<Number> convert_dense(const std::vector<double>& v) const {
    std::vector<Number> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = round_dense(v[i]);
    return out;
  }
  TypedCsr<Number> typed(const CsrMatrix& m) const {
    TypedCsr<Number> t{&m, std::vector<Number>(m.values.size())};
    for (std::size_t i = 0; i < m.values.size(); ++i) t.values[i] = round_sparse(m.values[i]);
    return t;
  }
  std::vector<Number> convert_scaled(const std::vector<double>& v, std::int64_t rows) const {
    std::vector<Number> out(v.size());
    for (std::int64_t r = 0; r < nrhs_; ++r)
      for (std::int64_t i = 0; i < rows; ++i) out[i + r * rows] = round_sparse(v[i + r * rows] * scale_[r]);
    return out;
  }
  std::vector<double> unscale(const std::vector<Number>& v, std::int64_t rows) const {
    std::vector<double> out(v.size());
    for (std::int64_t r = 0; r < nrhs_; ++r)
      for (std::int64_t i = 0; i < rows; ++i) out[i + r * rows] = double(v[i + r * rows]) / scale_[r];
    return out;
  }
  /// The vector as a GEMM input: itself, or its FP16/TF32 rounding in a scratch buffer.
  /// (tf32x3: the hi part; the lo part goes to rounded_lo_.)
  const Number* gemm_input(const std::vector<Number>& v) {
    if (precision_ == Precision::tf32x3) {
      rounded_lo_.resize(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        const auto sp = split_tf32(v[i]);
        rounded_[i] = sp.hi;
        rounded_lo_[i] = sp.lo;
      }
      return rounded_.data();
    }
    if (precision_ != Precision::fp16 && precision_ != Precision::tf32) return v.data();
    for (std::size_t i = 0; i < v.size(); ++i) rounded_[i] = round_dense(v[i]);
    return rounded_.data();
  }
  /// c = A b for the square dense matrix A (m x m; class k, or Pi^{-1} for k = -1) and the GEMM
  /// input b (m x n) from gemm_input; tf32x3: A_hi b_hi + A_hi b_lo + A_lo b_hi.
  void product(const Number* a, long k, std::int64_t m, std::int64_t n, const Number* b, Number* c) {
    gemm(Transpose::no, Transpose::no, m, n, m, Number(1), a, m, b, m, Number(0), c, m);
    if (precision_ != Precision::tf32x3) return;
    const Number* a_lo = k < 0 ? pi_lo_.data() : class_lo_[static_cast<std::size_t>(k)].data();
    gemm(Transpose::no, Transpose::no, m, n, m, Number(1), a, m, rounded_lo_.data(), m, Number(1), c, m);
    gemm(Transpose::no, Transpose::no, m, n, m, Number(1), a_lo, m, b, m, Number(1), c, m);
  }
  /// The vector as a sparse-product input: itself, or its FP16 rounding in a scratch buffer
  /// (its own: x_E stays the input of several sparse products while GEMM inputs are rounded).
  const Number* sparse_input(const std::vector<Number>& v) {
    if (precision_ != Precision::fp16) return v.data();
    sparse_rounded_.resize(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) sparse_rounded_[i] = round_sparse(v[i]);
    return sparse_rounded_.data();
  }
  /// Adds the time since the last mark to component c.
  void mark(SolveComponent c) {
    const auto now = clock_type::now();
    times_[static_cast<int>(c)] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }

  const PrehandledSystem& s_;
  Precision precision_;
  std::vector<Number> pi_, pi_lo_;
  std::vector<std::vector<Number>> class_, class_lo_;
  const Number* pi_ptr_ = nullptr;
  std::vector<const Number*> class_ptr_;
  TypedCsr<Number> b_, bt_;
  std::vector<TypedCsr<Number>> d_, dt_;
  std::int64_t nrhs_ = 0;
  std::vector<double> scale_;
  std::vector<Number> bc_, be_, xc_, xe_, re_, rounded_, rounded_lo_, sparse_rounded_;
  ComponentSeconds times_{};
  clock_type::time_point last_{};
  std::vector<std::vector<Number>> bi_, xi_, yi_;
  double setup_seconds_ = 0.0;
};

}  // namespace

std::unique_ptr<SolvePhase> make_cpu_solve_phase(const PrehandledSystem& system, Precision precision) {
  if (precision == Precision::fp64) return std::make_unique<CpuSolvePhase<double>>(system, precision);
  return std::make_unique<CpuSolvePhase<float>>(system, precision);
}

}  // namespace tcfem::direct
