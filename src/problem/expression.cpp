#include "problem/expression.h"

#include <muParser.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace tcfem::problem {

namespace {
std::atomic<unsigned long> next_id{1};

// The functions of the expression language. They are defined here (not taken from muparser's
// defaults) so that every function of a parsed expression is known by its address, which is how
// the device translation (Expression::source) names it.
double f_sin(double a) { return std::sin(a); }
double f_cos(double a) { return std::cos(a); }
double f_tan(double a) { return std::tan(a); }
double f_asin(double a) { return std::asin(a); }
double f_acos(double a) { return std::acos(a); }
double f_atan(double a) { return std::atan(a); }
double f_sinh(double a) { return std::sinh(a); }
double f_cosh(double a) { return std::cosh(a); }
double f_tanh(double a) { return std::tanh(a); }
double f_asinh(double a) { return std::asinh(a); }
double f_acosh(double a) { return std::acosh(a); }
double f_atanh(double a) { return std::atanh(a); }
double f_exp(double a) { return std::exp(a); }
double f_log(double a) { return std::log(a); }
double f_log2(double a) { return std::log2(a); }
double f_log10(double a) { return std::log10(a); }
double f_sqrt(double a) { return std::sqrt(a); }
double f_abs(double a) { return std::fabs(a); }
double f_rint(double a) { return std::rint(a); }
double f_sign(double a) { return a < 0.0 ? -1.0 : (a > 0.0 ? 1.0 : 0.0); }
double f_minus(double a) { return -a; }
double f_plus(double a) { return a; }
double f_atan2(double a, double b) { return std::atan2(a, b); }
double f_pow(double a, double b) { return std::pow(a, b); }
double f_min(const double* a, int n) {
  double r = a[0];
  for (int i = 1; i < n; ++i) r = a[i] < r ? a[i] : r;
  return r;
}
double f_max(const double* a, int n) {
  double r = a[0];
  for (int i = 1; i < n; ++i) r = r < a[i] ? a[i] : r;
  return r;
}
double f_sum(const double* a, int n) {
  double r = a[0];
  for (int i = 1; i < n; ++i) r += a[i];
  return r;
}
double f_avg(const double* a, int n) { return f_sum(a, n) / n; }

/// A function of the language: its name in expressions, its host implementation, and how the
/// device translation writes it.
template <typename F>
struct Function {
  const char* name;
  F host;
  const char* device;
};
using Unary = Function<double (*)(double)>;
using Binary = Function<double (*)(double, double)>;
using Variadic = Function<double (*)(const double*, int)>;

constexpr Unary unary_functions[] = {
    {"sin", f_sin, "sin"},       {"cos", f_cos, "cos"},        {"tan", f_tan, "tan"},
    {"asin", f_asin, "asin"},    {"acos", f_acos, "acos"},     {"atan", f_atan, "atan"},
    {"sinh", f_sinh, "sinh"},    {"cosh", f_cosh, "cosh"},     {"tanh", f_tanh, "tanh"},
    {"asinh", f_asinh, "asinh"}, {"acosh", f_acosh, "acosh"},  {"atanh", f_atanh, "atanh"},
    {"exp", f_exp, "exp"},       {"log", f_log, "log"},        {"ln", f_log, "log"},
    {"log2", f_log2, "log2"},    {"log10", f_log10, "log10"},  {"sqrt", f_sqrt, "sqrt"},
    {"abs", f_abs, "fabs"},      {"rint", f_rint, "rint"},     {"sign", f_sign, "tcfem_sign"},
};
constexpr Binary binary_functions[] = {{"atan2", f_atan2, "atan2"}, {"pow", f_pow, "pow"}};
// device: the binary function that folds the arguments (sum: +; avg: + and a division)
constexpr Variadic variadic_functions[] = {
    {"min", f_min, "tcfem_min"}, {"max", f_max, "tcfem_max"}, {"sum", f_sum, "+"}, {"avg", f_avg, "+"}};

/// A parser of the language with the coordinates bound to x[0..dim-1].
void define_language(mu::Parser& p, double* x, int dim, bool time) {
  p.ClearFun();
  p.ClearConst();
  p.ClearInfixOprt();
  p.ClearPostfixOprt();
  p.ClearOprt();
  static const char* names[3] = {"x", "y", "z"};
  for (int d = 0; d < dim; ++d) p.DefineVar(names[d], &x[d]);
  if (time) p.DefineVar("t", &x[3]);
  p.DefineConst("pi", std::numbers::pi);
  p.DefineConst("e", std::numbers::e);
  p.DefineConst("_pi", std::numbers::pi);
  p.DefineConst("_e", std::numbers::e);
  p.DefineInfixOprt("-", f_minus);
  p.DefineInfixOprt("+", f_plus);
  for (const auto& f : unary_functions) p.DefineFun(f.name, f.host);
  for (const auto& f : binary_functions) p.DefineFun(f.name, f.host);
  for (const auto& f : variadic_functions) p.DefineFun(f.name, f.host);
}

}  // namespace

struct Expression::Evaluator {
  double x[4] = {0.0, 0.0, 0.0, 0.0};  // the coordinates, then t
  mu::Parser parser;
  Evaluator(const std::string& text, int dim, bool time) {
    define_language(parser, x, dim, time);
    parser.SetExpr(text);
  }
};

Expression::Expression(std::string key, std::string text, int dim) : Expression(std::move(key), std::move(text), dim, false) {}

Expression::Expression(std::string key, std::string text, int dim, bool time)
    : key_(std::move(key)), text_(std::move(text)), dim_(dim), time_(time), id_(next_id++) {
  if (dim < 1 || dim > 3) throw InputError(key_ + ": expressions have 1 to 3 coordinates");
  if (text_.find_first_not_of(" \t\n\r") == std::string::npos) throw InputError(key_ + ": the expression is empty");
  try {
    Evaluator e(text_, dim_, time_);
    e.x[0] = e.x[1] = e.x[2] = e.x[3] = 0.5;
    e.parser.Eval();  // parses: syntax errors and unknown names surface here
    if (e.parser.GetNumResults() != 1)
      throw InputError(key_ + ": one expression expected, found " + std::to_string(e.parser.GetNumResults()) +
                       " separated by commas (in \"" + text_ + "\")");
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
  if (!slot) slot = std::make_unique<Evaluator>(text_, dim_, time_);
  return *slot;
}

double Expression::operator()(const double* x) const { return (*this)(x, 0.0); }

double Expression::operator()(const double* x, double t) const {
  auto& e = evaluator();
  for (int d = 0; d < dim_; ++d) e.x[d] = x[d];
  e.x[3] = t;
  double v;
  try {
    v = e.parser.Eval();
  } catch (const mu::Parser::exception_type& err) {
    throw InputError(key_ + ": " + err.GetMsg() + " at the point " + point_text(x, dim_));
  }
  if (!std::isfinite(v)) throw not_finite(v, x);
  return v;
}

InputError Expression::not_finite(double value, const double* x) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return InputError(key_ + ": the value is " + buf + " at the point " + point_text(x, dim_) + " (\"" + text_ + "\")");
}

namespace {
std::string number_text(double v, ExpressionDialect dialect) {
  const bool cuda = dialect == ExpressionDialect::cuda;
  if (std::isnan(v)) return cuda ? "(0.0 / 0.0)" : "(0 / 0)";
  if (std::isinf(v)) return v > 0 ? (cuda ? "(1.0 / 0.0)" : "(1 / 0)") : (cuda ? "(-1.0 / 0.0)" : "(-1 / 0)");
  char buf[64];
  // hexadecimal (exact) in CUDA C++; 17 significant digits (exact on reading) for muparser
  std::snprintf(buf, sizeof buf, cuda ? "%a" : "%.17g", v);
  return std::string("(") + buf + ")";
}

template <typename Table>
const auto* find_function(const Table& table, mu::erased_fun_type address) {
  for (const auto& f : table)
    if (reinterpret_cast<mu::erased_fun_type>(f.host) == address) return &f;
  return static_cast<decltype(&table[0])>(nullptr);
}
}  // namespace

std::string Expression::source(ExpressionDialect dialect) const {
  const bool cuda = dialect == ExpressionDialect::cuda;
  Evaluator e(text_, dim_, time_);
  e.x[0] = e.x[1] = e.x[2] = 0.5;
  try {
    e.parser.Eval();  // builds the byte code
  } catch (const mu::Parser::exception_type& err) {
    throw InputError(key_ + ": " + err.GetMsg() + " (in \"" + text_ + "\")");
  }
  static const char* names[3] = {"x", "y", "z"};
  static const char* cuda_names[3] = {"x[0]", "x[1]", "x[2]"};
  auto untranslatable = [&](const char* what) {
    return Error(key_ + ": the expression \"" + text_ + "\" has " + what + ", which has no device translation");
  };
  auto variable = [&](const double* p) -> std::string {
    for (int d = 0; d < dim_; ++d)
      if (p == &e.x[d]) return cuda ? cuda_names[d] : names[d];
    if (time_ && p == &e.x[3]) return "t";
    throw untranslatable("an unknown variable");
  };
  // the byte code is a postfix program: translate it by running it on a stack of source texts
  std::vector<std::string> stack;
  std::vector<std::array<std::string, 2>> branches;  // condition, value if true
  auto pop = [&] {
    if (stack.empty()) throw untranslatable("a malformed program");
    std::string s = std::move(stack.back());
    stack.pop_back();
    return s;
  };
  auto binary = [&](const char* op) {
    const std::string b = pop(), a = pop();
    stack.push_back("(" + a + " " + op + " " + b + ")");
  };
  auto logical = [&](const char* op) {  // 1 or 0, as muparser gives
    const std::string b = pop(), a = pop();
    stack.push_back(cuda ? "((" + a + " " + op + " " + b + ") ? 1.0 : 0.0)" : "(" + a + " " + op + " " + b + ")");
  };
  for (const mu::SToken* tok = e.parser.GetByteCode().GetBase(); tok->Cmd != mu::cmEND; ++tok) {
    switch (tok->Cmd) {
      case mu::cmLE: logical("<="); break;
      case mu::cmGE: logical(">="); break;
      case mu::cmNEQ: logical("!="); break;
      case mu::cmEQ: logical("=="); break;
      case mu::cmLT: logical("<"); break;
      case mu::cmGT: logical(">"); break;
      case mu::cmLAND: logical("&&"); break;
      case mu::cmLOR: logical("||"); break;
      case mu::cmADD: binary("+"); break;
      case mu::cmSUB: binary("-"); break;
      case mu::cmMUL: binary("*"); break;
      case mu::cmDIV: binary("/"); break;
      case mu::cmPOW: {
        const std::string b = pop(), a = pop();
        stack.push_back(cuda ? "pow(" + a + ", " + b + ")" : "(" + a + " ^ " + b + ")");
        break;
      }
      case mu::cmIF: branches.push_back({pop(), ""}); break;
      case mu::cmELSE:
        if (branches.empty()) throw untranslatable("a malformed condition");
        branches.back()[1] = pop();
        break;
      case mu::cmENDIF: {
        if (branches.empty()) throw untranslatable("a malformed condition");
        const std::string otherwise = pop();
        const auto [cond, then] = branches.back();
        branches.pop_back();
        stack.push_back(cuda ? "((" + cond + " != 0.0) ? " + then + " : " + otherwise + ")"
                             : "(" + cond + " ? " + then + " : " + otherwise + ")");
        break;
      }
      case mu::cmVAR: stack.push_back(variable(tok->Val.ptr)); break;
      case mu::cmVAL: stack.push_back(number_text(tok->Val.data2, dialect)); break;
      case mu::cmVARPOW2:
      case mu::cmVARPOW3:
      case mu::cmVARPOW4: {
        const std::string v = variable(tok->Val.ptr);
        std::string s = "(" + v;
        for (int i = mu::cmVARPOW2 - 1; i < int(tok->Cmd); ++i) s += " * " + v;
        stack.push_back(s + ")");
        break;
      }
      case mu::cmVARMUL:
        stack.push_back("((" + variable(tok->Val.ptr) + " * " + number_text(tok->Val.data, dialect) + ") + " +
                        number_text(tok->Val.data2, dialect) + ")");
        break;
      case mu::cmFUNC: {
        const auto address = tok->Fun.cb._pRawFun;
        if (tok->Fun.cb._pUserData) throw untranslatable("a function with user data");
        const int argc = tok->Fun.argc;
        if (argc == 1) {
          const std::string a = pop();
          if (address == reinterpret_cast<mu::erased_fun_type>(&f_minus)) {
            stack.push_back("(-" + a + ")");
          } else if (address == reinterpret_cast<mu::erased_fun_type>(&f_plus)) {
            stack.push_back(a);
          } else if (const auto* f = find_function(unary_functions, address)) {
            stack.push_back(std::string(cuda ? f->device : f->name) + "(" + a + ")");
          } else {
            throw untranslatable("an unknown function");
          }
        } else if (argc == 2) {
          const auto* f = find_function(binary_functions, address);
          if (!f) throw untranslatable("an unknown function");
          const std::string b = pop(), a = pop();
          stack.push_back(std::string(cuda ? f->device : f->name) + "(" + a + ", " + b + ")");
        } else if (argc < 0) {
          const auto* f = find_function(variadic_functions, address);
          if (!f) throw untranslatable("an unknown function");
          std::vector<std::string> args(-argc);
          for (int i = -argc - 1; i >= 0; --i) args[i] = pop();
          std::string s;
          if (!cuda) {
            s = std::string(f->name) + "(";
            for (std::size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
            s += ")";
          } else if (std::string(f->device) == "+") {
            s = "(" + args[0];
            for (std::size_t i = 1; i < args.size(); ++i) s += " + " + args[i];
            s += ")";
            if (std::string(f->name) == "avg") s = "(" + s + " / " + number_text(double(args.size()), dialect) + ")";
          } else {
            s = args[0];
            for (std::size_t i = 1; i < args.size(); ++i) s = std::string(f->device) + "(" + s + ", " + args[i] + ")";
          }
          stack.push_back(s);
        } else {
          throw untranslatable("a function of several fixed arguments");
        }
        break;
      }
      default: throw untranslatable("an operation");
    }
  }
  if (stack.size() != 1 || !branches.empty()) throw untranslatable("a malformed program");
  return stack.front();
}

const char* Expression::device_prelude() {
  return "__device__ inline double tcfem_sign(double a) { return a < 0.0 ? -1.0 : (a > 0.0 ? 1.0 : 0.0); }\n"
         "__device__ inline double tcfem_min(double a, double b) { return b < a ? b : a; }\n"
         "__device__ inline double tcfem_max(double a, double b) { return a < b ? b : a; }\n";
}

std::array<double, 3> numerical_gradient(const Expression& u, const double* x) {
  return numerical_gradient([&u](const double* p) { return u(p); }, u.dim(), x);
}

std::array<double, 3> numerical_gradient(const std::function<double(const double*)>& u, int dim, const double* x) {
  std::array<double, 3> g{0.0, 0.0, 0.0};
  double p[3];
  for (int d = 0; d < dim; ++d) {
    for (int e = 0; e < dim; ++e) p[e] = x[e];
    const double h = gradient_step(x[d]);
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
