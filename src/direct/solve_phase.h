#pragma once
// The solve phase of the direct solver, steps (4)-(6) of seed 003 for many right-hand sides at once:
//   y_k = C_k^{-1} b_k                       (one GEMM per class of similar macro cells)
//   r_E = b_E - B^T b_C - sum_k D_k y_k      (sparse)
//   x_E = Pi^{-1} r_E                        (GEMM)
//   x_C = b_C - B x_E                        (sparse)
//   x_k = C_k^{-1} (b_k - D_k^T x_E)         (sparse, then one GEMM per class)
// Precisions: fp64 and fp32 (matrices and vectors in that format); tf32: FP32 data, the GEMMs on
// TF32 tensor cores (inputs rounded to TF32, FP32 accumulation; sparse products in FP32); fp16:
// matrices and every input of a product rounded to FP16, products accumulated and vectors kept in
// FP32 (what FP16 tensor cores with FP32 accumulation compute); tf32x3: FP32 data, each GEMM as
// three TF32 tensor-core GEMMs of the split operands a = a_hi + a_lo (a_hi = tf32(a),
// a_lo = tf32(a - a_hi)): a_hi b_hi + a_hi b_lo + a_lo b_hi with FP32 accumulation, the lo*lo term
// dropped - FP32 accuracy from TF32 tensor cores (sparse products in FP32). The CPU emulates tf32 and fp16 with
// the host conversions of arch/number_formats.h and sgemm: products of FP16 or TF32 values are exact
// in FP32. Each right-hand side is scaled by a power of two so that its largest entry lies in
// [0.5, 1) before conversion (exact; keeps FP16 clear of underflow), and the solution is scaled back.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "direct/direct_solver.h"

namespace tcfem::direct {

enum class Precision { fp64, fp32, tf32, tf32x3, fp16 };
const char* to_string(Precision p);
/// Throws InputError naming `option` for names other than fp64, fp32, tf32, tf32x3, fp16.
Precision parse_precision(const std::string& name, const std::string& option = "--precision");
/// Bytes per stored matrix entry on the device (8, 4, 4, 8 (hi and lo), 2) and per vector entry
/// (8, 4, 4, 4, 4).
int matrix_bytes(Precision p);
int vector_bytes(Precision p);

/// The components of one solve phase, timed separately (CUDA events between the operations on the
/// device; the host clock on the CPU): the product with Pi^{-1}, the products with the C_k^{-1},
/// the sparse products with B, B^T, D_k, D_k^T, and the copies and precision conversions.
enum class SolveComponent { gemm_pi, gemm_classes, sparse, copies };
inline constexpr int n_solve_components = 4;
const char* to_string(SolveComponent c);
/// Seconds per SolveComponent (indexed by its value).
using ComponentSeconds = std::array<double, n_solve_components>;

class SolvePhase {
 public:
  virtual ~SolvePhase() = default;
  /// Takes prehandled right-hand sides (FP64), scales and converts them (not timed).
  virtual void load(const BlockVectors<double>& b) = 0;
  /// Runs steps (4)-(6) on the loaded right-hand sides; returns their time in seconds.
  virtual double run() = 0;
  /// Seconds of each component in the last run (they add up to about the run's time).
  virtual ComponentSeconds breakdown() const = 0;
  /// The solution of the last run in FP64, scaling undone.
  virtual BlockVectors<double> result() const = 0;
  /// Where and how it runs (library, device).
  virtual std::string description() const = 0;
  /// Seconds spent converting (and uploading) the matrices.
  virtual double setup_seconds() const = 0;
};

/// CPU: BLAS dgemm/sgemm and plain loops for the sparse products.
std::unique_ptr<SolvePhase> make_cpu_solve_phase(const PrehandledSystem& system, Precision precision);
/// CUDA: cuBLAS GEMM (FP64; FP32; TF32 and FP16 tensor cores with FP32 accumulation) and CSR kernels.
/// Throws InputError without a CUDA backend or device, or when the device memory does not suffice.
std::unique_ptr<SolvePhase> make_cuda_solve_phase(const PrehandledSystem& system, Precision precision);

/// The TF32 split of a value: hi = tf32(v), lo = tf32(v - hi) (both exact in FP32).
struct Tf32Split {
  float hi, lo;
};
Tf32Split split_tf32(double v);

/// Per right-hand side: the power of two that maps its largest entry into [0.5, 1) (1 for zero).
std::vector<double> column_scales(const BlockVectors<double>& b);
/// Bytes of device memory the CUDA solve phase needs.
double cuda_solve_phase_bytes(const PrehandledSystem& system, Precision precision, std::int64_t nrhs);

}  // namespace tcfem::direct
