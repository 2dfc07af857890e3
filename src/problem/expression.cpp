#include "problem/expression.h"

#include <muParser.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <unordered_map>

#include "core/error.h"

namespace tcfem::problem {

namespace {
std::atomic<unsigned long> next_id{1};

double pow_function(double a, double b) { return std::pow(a, b); }

}  // namespace

struct Expression::Evaluator {
  double x[3] = {0.0, 0.0, 0.0};
  mu::Parser parser;
  Evaluator(const std::string& text, int dim) {
    static const char* names[3] = {"x", "y", "z"};
    for (int d = 0; d < dim; ++d) parser.DefineVar(names[d], &x[d]);
    parser.DefineConst("pi", std::numbers::pi);
    parser.DefineConst("e", std::numbers::e);
    parser.DefineFun("pow", pow_function);
    parser.SetExpr(text);
  }
};

Expression::Expression(std::string key, std::string text, int dim)
    : key_(std::move(key)), text_(std::move(text)), dim_(dim), id_(next_id++) {
  if (dim < 1 || dim > 3) throw InputError(key_ + ": expressions have 1 to 3 coordinates");
  if (text_.find_first_not_of(" \t\n\r") == std::string::npos) throw InputError(key_ + ": the expression is empty");
  try {
    Evaluator e(text_, dim_);
    e.x[0] = e.x[1] = e.x[2] = 0.5;
    e.parser.Eval();  // parses: syntax errors and unknown names surface here
    constant_ = e.parser.GetUsedVar().empty();
  } catch (const mu::Parser::exception_type& err) {
    std::string msg = err.GetMsg();
    if (dim_ == 2 && err.GetToken() == "z") msg += " (z is not a coordinate in 2D)";
    throw InputError(key_ + ": " + msg + " (in \"" + text_ + "\")");
  }
}

Expression::Evaluator& Expression::evaluator() const {
  thread_local std::unordered_map<unsigned long, std::unique_ptr<Evaluator>> cache;
  auto& slot = cache[id_];
  if (!slot) slot = std::make_unique<Evaluator>(text_, dim_);
  return *slot;
}

double Expression::operator()(const double* x) const {
  auto& e = evaluator();
  for (int d = 0; d < dim_; ++d) e.x[d] = x[d];
  double v;
  try {
    v = e.parser.Eval();
  } catch (const mu::Parser::exception_type& err) {
    throw InputError(key_ + ": " + err.GetMsg() + " at the point " + point_text(x, dim_));
  }
  if (!std::isfinite(v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    throw InputError(key_ + ": the value is " + buf + " at the point " + point_text(x, dim_) + " (\"" + text_ + "\")");
  }
  return v;
}

std::array<double, 3> numerical_gradient(const Expression& u, const double* x) {
  return numerical_gradient([&u](const double* p) { return u(p); }, u.dim(), x);
}

std::array<double, 3> numerical_gradient(const std::function<double(const double*)>& u, int dim, const double* x) {
  std::array<double, 3> g{0.0, 0.0, 0.0};
  double p[3];
  for (int d = 0; d < dim; ++d) {
    for (int e = 0; e < dim; ++e) p[e] = x[e];
    const double h = 1e-3 * std::max(1.0, std::abs(x[d]));
    double f[4];
    const double offsets[4] = {-2.0, -1.0, 1.0, 2.0};
    for (int i = 0; i < 4; ++i) {
      p[d] = x[d] + offsets[i] * h;
      f[i] = u(p);
    }
    g[d] = (f[0] - 8.0 * f[1] + 8.0 * f[2] - f[3]) / (12.0 * h);
  }
  return g;
}

}  // namespace tcfem::problem
