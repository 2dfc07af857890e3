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

namespace {
[[noreturn]] void no_cuda() { throw InputError("device expressions: this tcfem was built without the CUDA backend"); }
}  // namespace

void PointFunctions::launch(bool, int, const double*, std::size_t, std::size_t, double*, unsigned long long*) const {
  no_cuda();
}

std::int64_t PointFunctions::evaluate_tensor(int, const TensorPoints&, std::int64_t, std::size_t, double*) const {
  no_cuda();
}

std::int64_t PointFunctions::evaluate(int, const double*, std::size_t, std::size_t, double*) const { no_cuda(); }

std::int64_t PointFunctions::gradient(int, const double*, std::size_t, std::size_t, double*) const { no_cuda(); }

void PointFunctions::evaluate_async(int, const double*, std::size_t, std::size_t, double*, unsigned long long*) const {
  no_cuda();
}

void PointFunctions::evaluate_tensor_async(int, const TensorPoints&, std::int64_t, std::size_t, double*,
                                           unsigned long long*) const {
  no_cuda();
}

void PointFunctions::gradient_async(int, const double*, std::size_t, std::size_t, double*, unsigned long long*) const {
  no_cuda();
}

}  // namespace tcfem::jit
