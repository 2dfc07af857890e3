#pragma once
// Expressions of the coordinates x, y (and z in 3D) given by the user as text: coefficients,
// right-hand sides, boundary data, maps and exact solutions. Parsed and evaluated by muparser,
// with the constants pi and e and the functions sin cos tan asin acos atan atan2 sinh cosh tanh
// exp log (natural) ln log2 log10 sqrt abs sign pow min max (and muparser's other built-ins).
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "core/error.h"

namespace tcfem::problem {

/// The languages an expression can be written back in: CUDA C++ (a device expression in the
/// coordinates x[0], x[1], x[2], constants in hexadecimal, exact) and the expression language
/// itself (used to check the translation against the parsed expression).
enum class ExpressionDialect { cuda, muparser };

class Expression {
 public:
  /// Parses `text` as an expression of the first `dim` coordinates. `key` names it in messages
  /// (e.g. "rhs" or "dirichlet.xmin"). Throws InputError for a malformed expression or an unknown
  /// name, with the position.
  Expression(std::string key, std::string text, int dim);
  /// With `time`: an expression of the coordinates and the time t (time-dependent data).
  Expression(std::string key, std::string text, int dim, bool time);

  /// The value at x (dim coordinates). Thread-safe. Throws InputError naming the key and the
  /// point when the value is NaN or infinite.
  double operator()(const double* x) const;
  /// The value at x and time t (an expression made with `time`; others ignore t).
  double operator()(const double* x, double t) const;
  /// Whether the expression may use t.
  bool has_time() const { return time_; }
  /// Whether the expression uses no coordinate (a constant).
  bool is_constant() const { return constant_; }
  const std::string& key() const { return key_; }
  const std::string& text() const { return text_; }
  int dim() const { return dim_; }
  /// The expression as muparser compiled it (constants folded, every operation parenthesized),
  /// written in `dialect`. CUDA text calls the helpers of device_prelude(); it computes the same
  /// operations in the same order as the host evaluation (the math functions are the device's).
  std::string source(ExpressionDialect dialect) const;
  /// Device definitions of the helper functions that CUDA sources call (sign, min, max).
  static const char* device_prelude();
  /// The error for a value that is NaN or infinite at x: names the key, the value and the point.
  InputError not_finite(double value, const double* x) const;

 private:
  struct Evaluator;
  Evaluator& evaluator() const;  // this thread's parser of the expression
  std::string key_, text_;
  int dim_;
  bool time_ = false;
  bool constant_ = false;
  unsigned long id_;
};

/// The step of numerical_gradient along a coordinate whose value is x_d.
inline double gradient_step(double x_d) { return 1e-3 * std::max(1.0, std::abs(x_d)); }

/// The gradient of an expression by fourth-order central differences with the step
/// h = 1e-3 max(1, |x_d|) (truncation error about h^4 |u^(5)| / 30, rounding about 1e-13 |u| / h).
std::array<double, 3> numerical_gradient(const Expression& u, const double* x);
/// The same for any function u of dim coordinates.
std::array<double, 3> numerical_gradient(const std::function<double(const double*)>& u, int dim, const double* x);

}  // namespace tcfem::problem
