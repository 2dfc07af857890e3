#pragma once
// Scalar functions of points compiled for the GPU at run time (NVRTC): each is a CUDA C++
// expression in the coordinates x[0] .. x[dim-1] (e.g. a user's expression translated by
// problem::Expression::source). One module holds them all; evaluate() and gradient() apply one to
// device arrays of points. Declared without CUDA headers; builds without CUDA throw InputError.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tcfem::jit {

/// A scalar function of points as CUDA C++ for the device setup: an expression in x[0] ..
/// x[dim-1] and the device helpers it calls (`prelude`). Empty: the function has no device
/// form (a C++ callable), and the device setup evaluates it on the host threads.
struct DeviceSource {
  std::string expression, prelude;
  bool empty() const { return expression.empty(); }
};

class PointFunctions {
 public:
  PointFunctions();
  ~PointFunctions();
  PointFunctions(const PointFunctions&) = delete;
  PointFunctions& operator=(const PointFunctions&) = delete;

  /// Adds f(x) = `expression` of dim coordinates; returns its index. Before compile() only.
  int add(const std::string& expression, int dim);
  int size() const { return static_cast<int>(functions_.size()); }
  /// Compiles every function for the current device; `prelude` holds device helpers the
  /// expressions call. Throws Error with the compiler's log when NVRTC rejects the source. A
  /// module of the same source compiled before in this process is reused.
  void compile(const std::string& prelude);
  bool compiled() const { return module_ != nullptr; }
  /// Seconds the last compile() took (NVRTC and loading).
  double compile_seconds() const { return compile_seconds_; }
  /// Whether compile() found the module compiled before: in this process, or on disk in the
  /// user's cache (jit::CubinCache::user(): $XDG_CACHE_HOME/tcfem/nvrtc or ~/.cache/tcfem/nvrtc).
  bool cached() const { return cached_; }

  /// out[i] = f(p_i) for i < n, with p_i = (points[i], points[stride + i], ...) on the device
  /// (default stream). Returns the first i whose value is NaN or infinite, or -1 (waits for the
  /// device).
  std::int64_t evaluate(int f, const double* points, std::size_t stride, std::size_t n, double* out) const;
  /// The points of Cartesian cells: nq points per direction (`points`, on [0, 1], device) in
  /// the cells (c_0, c_1, c_2) of a grid with n_cells per direction, x_d = origin_d + (c_d +
  /// points[q_d]) h_d; cells numbered with c_0 fastest, points with q_0 fastest.
  struct TensorPoints {
    const double* points = nullptr;
    int nq = 1;
    long long n_cells[3] = {1, 1, 1};
    double origin[3] = {0, 0, 0}, h[3] = {1, 1, 1};
  };
  /// out[i] = f(x_i) for the n points i of cells first_cell, first_cell + 1, ... (nq^dim each),
  /// computing the points instead of reading them. Returns the first i whose value is not
  /// finite, or -1.
  std::int64_t evaluate_tensor(int f, const TensorPoints& points, std::int64_t first_cell, std::size_t n,
                               double* out) const;
  /// out[d * stride + i] = d f / d x_d at p_i by fourth-order central differences with the step
  /// 1e-3 max(1, |x_d|) (problem::numerical_gradient's). Returns the first i whose gradient or a
  /// value it used is not finite, or -1.
  std::int64_t gradient(int f, const double* points, std::size_t stride, std::size_t n, double* out) const;

  /// evaluate(), evaluate_tensor() and gradient() without waiting for the device: the index of a
  /// point whose value is not finite goes into *bad (device) by atomicMin (the caller sets it
  /// beforehand and reads it when it needs to know; a pass over chunks reads it once).
  void evaluate_async(int f, const double* points, std::size_t stride, std::size_t n, double* out,
                      unsigned long long* bad) const;
  void evaluate_tensor_async(int f, const TensorPoints& points, std::int64_t first_cell, std::size_t n, double* out,
                             unsigned long long* bad) const;
  void gradient_async(int f, const double* points, std::size_t stride, std::size_t n, double* out,
                      unsigned long long* bad) const;

 public:
  struct Module;

 private:
  struct Function {
    std::string expression;
    int dim;
  };
  void launch(bool gradient, int f, const double* points, std::size_t stride, std::size_t n, double* out,
              unsigned long long* bad) const;
  /// Resets the module's flag, runs `launch` with it and returns the flagged index or -1 (waits).
  template <class Launch>
  std::int64_t checked(Launch&& launch) const;
  std::vector<Function> functions_;
  std::shared_ptr<Module> module_;
  double compile_seconds_ = 0.0;
  bool cached_ = false;
};

}  // namespace tcfem::jit
