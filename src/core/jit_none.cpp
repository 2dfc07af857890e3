#include "core/jit.h"

#include "core/error.h"

namespace tcfem::jit {

struct PointFunctions::Module {};

PointFunctions::PointFunctions() = default;
PointFunctions::~PointFunctions() = default;

int PointFunctions::add(const std::string& expression, int dim) {
  functions_.push_back({expression, dim});
  return size() - 1;
}

void PointFunctions::compile(const std::string&) {
  throw InputError("device expressions: this tcfem was built without the CUDA backend");
}

std::int64_t PointFunctions::launch(const char*, int, const double*, std::size_t, std::size_t, double*) const {
  throw InputError("device expressions: this tcfem was built without the CUDA backend");
}

std::int64_t PointFunctions::evaluate_tensor(int, const TensorPoints&, std::int64_t, std::size_t, double*) const {
  throw InputError("device expressions: this tcfem was built without the CUDA backend");
}

std::int64_t PointFunctions::evaluate(int f, const double* p, std::size_t stride, std::size_t n, double* out) const {
  return launch("value", f, p, stride, n, out);
}

std::int64_t PointFunctions::gradient(int f, const double* p, std::size_t stride, std::size_t n, double* out) const {
  return launch("gradient", f, p, stride, n, out);
}

}  // namespace tcfem::jit
