#pragma once
// Sum factorization of 3D cells on FP64 tensor cores: the reference gradients at the points of
// fields given at the nodes, and the transpose (a flux at the points tested with the gradients of
// the basis, summed back to the nodes). Every 1D contraction is a batch of mma.sync over the rows
// of a block's cells in shared memory (tensor/dmma_rows.cuh); the caller loads the nodes, works at
// the points between the two halves and scatters the result.
//
// Two forms:
//   - DmmaCell3: NP nodes and NQ points per direction, B (NQ x NP, values of the basis at the
//     points) and D (NQ x NP, its derivatives), both row-major. The x contraction applies [B | D]
//     (X0 = B_x u, X1 = D_x u), y gives Y0 = B_y X0, Y1 = D_y X0, Y2 = B_y X1, z the gradient
//     G0 = B_z Y2 (d/dx), G1 = B_z Y1 (d/dy), G2 = D_z Y0 (d/dz). The transpose runs the same
//     steps backwards, with D^T over B^T ([D^T; B^T] over [X1; X0]-style concatenated inputs) where
//     two contractions add into one output.
//   - DmmaColloc3: the points are the nodes (collocated quadrature): G_e = D_e u with the NP x NP
//     collocation derivative, and the transpose T_e = D_e^T F_e in three regions that the caller sums.
// The point tensors have their z stride padded to 4 mod 8 (dmma_z_stride): the lanes of a
// half-warp reading 4 rows x 4 columns along z fall in distinct banks.
// DmmaCell2 and DmmaColloc2 are the 2D forms (the y stride padded the same way).
#include "tensor/dmma_rows.cuh"

namespace tcfem::tensor {

/// The z stride of a 3D tensor with `plane` entries per z plane: rounded up to 4 mod 8.
__host__ __device__ constexpr int dmma_z_stride(int plane) { return plane + (12 - plane % 8) % 8; }

/// FLOPs of one contraction of `rows` rows, reduction length ka and no outputs on the tensor cores
/// (ka padded to the atom's K, no to 8; tensor/dmma_rows.cuh).
__host__ __device__ constexpr double dmma_padded_flops(double rows, int ka, int no) {
  const int k = (ka % 8 == 0 || ka % 8 > 4) ? 8 : 4;
  return 2.0 * rows * ((ka + k - 1) / k * k) * ((no + 7) / 8 * 8);
}
/// Shared-memory values one contraction reads (its inputs) and writes (its outputs).
__host__ __device__ constexpr double dmma_shared_values(double rows, int ka, int no) { return rows * (ka + no); }

/// The 1D matrices of DmmaCell3 as entries (input a, output o) of a DmmaMatrix. Forward: nodes to
/// points, B, D or both side by side ([B | D], 2 NQ outputs); transposed: points to nodes, B^T, D^T,
/// or D^T over B^T ([D^T; B^T], a reduction over 2 NQ inputs).
enum class Matrix1D { fwd_bd, fwd_b, fwd_d, tr_b, tr_d, tr_db };
template <int NP, int NQ>
struct Entries1D {
  const double* B;
  const double* D;
  Matrix1D kind;
  __device__ __forceinline__ double operator()(int a, int o) const {
    switch (kind) {
      case Matrix1D::fwd_bd: return o < NQ ? B[o * NP + a] : D[(o - NQ) * NP + a];
      case Matrix1D::fwd_b: return B[o * NP + a];
      case Matrix1D::fwd_d: return D[o * NP + a];
      case Matrix1D::tr_b: return B[a * NP + o];
      case Matrix1D::tr_d: return D[a * NP + o];
      case Matrix1D::tr_db: break;
    }
    return a < NQ ? D[a * NP + o] : B[(a - NQ) * NP + o];
  }
};

/// DmmaCell3 with NF fields: the per-cell layout in shared memory (doubles, offsets within a cell's
/// PER values) and the two halves. Nodes [NF][NP^3] at 0 (lexicographic, x fastest); X [NF][2][NQ
/// NP^2] at OX; Y [NF][3][SY] at OY; the gradients G [NF][3][SQ] at OG, over the nodes and X where
/// they fit (they are written after both are read), else after Y. A point q (lexicographic) of a
/// point tensor is at point(q). The transpose reads a flux [3][SQ] at the caller's offset OF (which
/// may be OG: the flux in place of the gradient) and stages the result at the nodes' place.
template <int NP, int NQ, int NF>
struct DmmaCell3 {
  static constexpr int NP2 = NP * NP, NP3 = NP2 * NP, NQ2 = NQ * NQ, NQ3 = NQ2 * NQ;
  static constexpr int ZS = dmma_z_stride(NQ2), SX = NQ * NP2, SY = ZS * NP, SQ = ZS * NQ;
  static constexpr int OX = NF * NP3, OY = OX + 2 * NF * SX, Y_END = OY + 3 * NF * SY;
  static constexpr int OG = 3 * NF * SQ <= OY ? 0 : Y_END;
  /// values per cell the two halves use (a flux elsewhere than OG is the caller's to add)
  static constexpr int END = OG == 0 ? Y_END : OG + 3 * NF * SQ;
  __host__ __device__ static constexpr int point(int q) { return q + (ZS - NQ2) * (q / NQ2); }

  /// The gradients of the NF fields at the points (G at OG) from the nodes of `ncells` cells at
  /// cellmem + c PER; barriers between the x, y and z steps, none before or after.
  template <int PER>
  __device__ static void gradients(const double* B, const double* D, double* cellmem, int ncells, int warp, int warps,
                                   int lane) {
    const Entries1D<NP, NQ> fwd_bd{B, D, Matrix1D::fwd_bd}, fwd_b{B, D, Matrix1D::fwd_b}, fwd_d{B, D, Matrix1D::fwd_d};
    const auto plain = [](int a) { return a; };
    const auto stride_nq = [](int a) { return a * NQ; };
    const auto stride_z = [](int a) { return a * ZS; };
    {  // x: X0 = B_x f, X1 = D_x f; rows (cell, field, j l), X index qx + NQ (j + NP l)
      constexpr int R = NF * NP2;
      const DmmaMatrix<NP, 2 * NQ> m(fwd_bd, lane);
      dmma_rows(m, ncells * R, cellmem, cellmem,
                row_map(
                    [](int r) {
                      const int c = r / R, rc = r - c * R, f = rc / NP2, jl = rc - f * NP2;
                      return make_int2(c * PER + rc * NP, c * PER + OX + 2 * f * SX + NQ * jl);
                    },
                    plain, [](int o) { return o < NQ ? o : SX + o - NQ; }),
                warp, warps, 0, lane);
    }
    __syncthreads();
    {  // y: Y0 = B_y X0, Y1 = D_y X0 (one contraction with [B | D]), Y2 = B_y X1; rows (cell, field, l, qx)
      constexpr int R = NF * NQ * NP;
      const auto row = [](int r) {  // rc = qx + NQ (l + NP f)
        const int c = r / R, rc = r - c * R, fl = rc / NQ, qx = rc - fl * NQ, f = fl / NP, l = fl - f * NP;
        return make_int2(c * PER + OX + 2 * f * SX + qx + NQ * NP * l, c * PER + OY + 3 * f * SY + qx + ZS * l);
      };
      int shift = 0;
      {
        const DmmaMatrix<NP, 2 * NQ> m(fwd_bd, lane);
        shift += dmma_rows(m, ncells * R, cellmem, cellmem,
                           row_map(row, stride_nq, [](int o) { return o < NQ ? NQ * o : SY + NQ * (o - NQ); }), warp,
                           warps, shift, lane);
      }
      {
        const DmmaMatrix<NP, NQ> m(fwd_b, lane);
        dmma_rows(m, ncells * R, cellmem, cellmem,
                  row_map(
                      [&](int r) {
                        const int2 o = row(r);
                        return make_int2(o.x + SX, o.y + 2 * SY);
                      },
                      stride_nq, stride_nq),
                  warp, warps, shift, lane);
      }
    }
    __syncthreads();
    {  // z: G0 = B_z Y2, G1 = B_z Y1, G2 = D_z Y0; G index OG + (3 f + e) SQ + qxy + ZS qz
      constexpr int R2 = NF * 2 * NQ2, R1 = NF * NQ2;
      int shift = 0;
      {  // rows (cell, field, e in {0: Y2, 1: Y1}, qxy)
        const DmmaMatrix<NP, NQ> m(fwd_b, lane);
        shift += dmma_rows(m, ncells * R2, cellmem, cellmem,
                           row_map(
                               [](int r) {
                                 const int c = r / R2, rc = r - c * R2, fe = rc / NQ2, qxy = rc - fe * NQ2,
                                           f = fe >> 1, e = fe & 1;
                                 return make_int2(c * PER + OY + (3 * f + 2 - e) * SY + qxy,
                                                  c * PER + OG + (3 * f + e) * SQ + qxy);
                               },
                               stride_z, stride_z),
                           warp, warps, shift, lane);
      }
      {  // rows (cell, field, qxy)
        const DmmaMatrix<NP, NQ> m(fwd_d, lane);
        dmma_rows(m, ncells * R1, cellmem, cellmem,
                  row_map(
                      [](int r) {
                        const int c = r / R1, rc = r - c * R1, f = rc / NQ2, qxy = rc - f * NQ2;
                        return make_int2(c * PER + OY + 3 * f * SY + qxy, c * PER + OG + (3 * f + 2) * SQ + qxy);
                      },
                      stride_z, stride_z),
                  warp, warps, shift, lane);
      }
    }
  }

  /// The transpose for one flux F [3][SQ] at OF of every cell: sum_e D_e^T (B^T elsewhere) F_e,
  /// staged per node at [0, NP^3) of the cell; barriers between the steps, none before or after.
  /// Uses Y and X (F must not overlap Y).
  template <int PER, int OF>
  __device__ static void divergence(const double* B, const double* D, double* cellmem, int ncells, int warp, int warps,
                                    int lane) {
    static_assert(OF + 3 * SQ <= OY || OF >= Y_END, "the flux must not overlap Y");
    const Entries1D<NP, NQ> tr_b{B, D, Matrix1D::tr_b}, tr_d{B, D, Matrix1D::tr_d}, tr_db{B, D, Matrix1D::tr_db};
    const auto plain = [](int a) { return a; };
    const auto stride_nq = [](int a) { return a * NQ; };
    const auto stride_z = [](int a) { return a * ZS; };
    {  // z^T: Y0 = B_z^T F0, Y1 = B_z^T F1, Y2 = D_z^T F2, Y index qxy + ZS l
      int shift = 0;
      {  // rows (cell, [F0, F1], qxy)
        constexpr int R2 = 2 * NQ2;
        const DmmaMatrix<NQ, NP> m(tr_b, lane);
        shift += dmma_rows(m, ncells * R2, cellmem, cellmem,
                           row_map(
                               [](int r) {
                                 const int c = r / R2, rc = r - c * R2, e = rc / NQ2, qxy = rc - e * NQ2;
                                 return make_int2(c * PER + OF + e * SQ + qxy, c * PER + OY + e * SY + qxy);
                               },
                               stride_z, stride_z),
                           warp, warps, shift, lane);
      }
      {  // rows (cell, qxy)
        const DmmaMatrix<NQ, NP> m(tr_d, lane);
        dmma_rows(m, ncells * NQ2, cellmem, cellmem,
                  row_map(
                      [](int r) {
                        const int c = r / NQ2, qxy = r - c * NQ2;
                        return make_int2(c * PER + OF + 2 * SQ + qxy, c * PER + OY + 2 * SY + qxy);
                      },
                      stride_z, stride_z),
                  warp, warps, shift, lane);
      }
    }
    __syncthreads();
    {  // y^T: X0 = B_y^T Y0, X1 = D_y^T Y1 + B_y^T Y2 (one reduction over [Y1; Y2]); rows (cell, l, qx)
      constexpr int R = NQ * NP;
      const auto row = [](int r) {
        const int c = r / R, rc = r - c * R, l = rc / NQ, qx = rc - l * NQ;
        return make_int2(c * PER + OY + qx + ZS * l, c * PER + OX + qx + NQ * NP * l);
      };
      int shift = 0;
      {
        const DmmaMatrix<NQ, NP> m(tr_b, lane);
        shift +=
            dmma_rows(m, ncells * R, cellmem, cellmem, row_map(row, stride_nq, stride_nq), warp, warps, shift, lane);
      }
      {
        const DmmaMatrix<2 * NQ, NP> m(tr_db, lane);
        dmma_rows(m, ncells * R, cellmem, cellmem,
                  row_map(
                      [&](int r) {
                        const int2 o = row(r);
                        return make_int2(o.x, o.y + SX);
                      },
                      [](int a) { return a < NQ ? SY + a * NQ : 2 * SY + (a - NQ) * NQ; }, stride_nq),
                  warp, warps, shift, lane);
      }
    }
    __syncthreads();
    {  // x^T: D_x^T X0 + B_x^T X1 per node (one reduction over [X0; X1]); rows (cell, j l)
      const DmmaMatrix<2 * NQ, NP> m(tr_db, lane);
      dmma_rows(m, ncells * NP2, cellmem, cellmem,
                row_map(
                    [](int r) {
                      const int c = r / NP2, jl = r - c * NP2;
                      return make_int2(c * PER + OX + NQ * jl, c * PER + NP * jl);
                    },
                    [](int a) { return a < NQ ? a : SX + a - NQ; }, plain),
                warp, warps, 0, lane);
    }
  }

  /// Work per cell of both halves, summed over the contractions (rows, reduction length, outputs)
  /// by `c(rows, ka, no)`.
  template <class Count>
  static constexpr double sum_contractions(Count c) {
    const double fwd = c(NF * NP2, NP, 2 * NQ) + c(NF * NQ * NP, NP, 2 * NQ) + c(NF * NQ * NP, NP, NQ) +
                       c(NF * 2 * NQ2, NP, NQ) + c(NF * NQ2, NP, NQ);
    const double tr = c(2 * NQ2, NQ, NP) + c(NQ2, NQ, NP) + c(NQ * NP, NQ, NP) + c(NQ * NP, 2 * NQ, NP) +
                      c(NP2, 2 * NQ, NP);
    return fwd + tr;
  }
  /// FLOPs per cell as the tensor cores run them (K and N padded to the atoms; the rows' padding
  /// to 16 left out).
  static constexpr double flops() { return sum_contractions(dmma_padded_flops); }
  /// Shared-memory values per cell the contractions read (A operands) and write (outputs).
  static constexpr double shared_values() { return sum_contractions(dmma_shared_values); }
};

/// DmmaColloc3: one field, the points at the nodes (NP per direction). Per cell (doubles): four
/// tensors of S = ZS NP values, the node or point (x, y, z) at x + NP y + ZS z: the nodes at 0, the
/// gradients G_e at (1 + e) S (the flux in their place), and the transposes T0, T1, T2 at 0, 4 S and
/// 5 S, which the caller sums per node.
template <int NP>
struct DmmaColloc3 {
  static constexpr int NP2 = NP * NP, NP3 = NP2 * NP;
  static constexpr int ZS = dmma_z_stride(NP2), S = ZS * NP;
  static constexpr int OG = S, SQ = S;  ///< the gradients' offset and component stride (DmmaCell3's names)
  static constexpr int END = 6 * S;
  __host__ __device__ static constexpr int point(int q) { return q + (ZS - NP2) * (q / NP2); }
  /// The region of T_e.
  __host__ __device__ static constexpr int transposed(int e) { return e == 0 ? 0 : (3 + e) * S; }

  /// G_e = D_e u (e = x, y, z) in one step (no barrier).
  template <int PER>
  __device__ static void gradients(const double* D, double* cellmem, int ncells, int warp, int warps, int lane) {
    lines<PER>(Entries1D<NP, NP>{D, D, Matrix1D::fwd_d}, cellmem, ncells, warp, warps, lane, [](int) { return 0; },
               [](int e) { return (1 + e) * S; });
  }
  /// T_e = D_e^T F_e in one step (no barrier).
  template <int PER>
  __device__ static void divergence(const double* D, double* cellmem, int ncells, int warp, int warps, int lane) {
    lines<PER>(Entries1D<NP, NP>{D, D, Matrix1D::tr_d}, cellmem, ncells, warp, warps, lane,
               [](int e) { return (1 + e) * S; }, [](int e) { return transposed(e); });
  }

  static constexpr double flops() { return 6 * dmma_padded_flops(NP2, NP, NP); }
  static constexpr double shared_values() { return 6 * dmma_shared_values(NP2, NP, NP); }

 private:
  /// The lines of the three directions through the matrix of `entries`, input region in(e), output out(e).
  template <int PER, class In, class Out>
  __device__ static void lines(const Entries1D<NP, NP>& entries, double* cellmem, int ncells, int warp, int warps,
                               int lane, In in, Out out) {
    const DmmaMatrix<NP, NP> m(entries, lane);
    int shift = 0;
    // x lines: rows (cell, y, z), elements along x
    shift += dmma_rows(m, ncells * NP2, cellmem, cellmem,
                       row_map(
                           [&](int r) {
                             const int c = r / NP2, yz = r - c * NP2, z = yz / NP, o = NP * yz + (ZS - NP2) * z;
                             return make_int2(c * PER + in(0) + o, c * PER + out(0) + o);
                           },
                           [](int a) { return a; }, [](int a) { return a; }),
                       warp, warps, shift, lane);
    // y lines: rows (cell, x, z)
    shift += dmma_rows(m, ncells * NP2, cellmem, cellmem,
                       row_map(
                           [&](int r) {
                             const int c = r / NP2, xz = r - c * NP2, z = xz / NP, o = xz - NP * z + ZS * z;
                             return make_int2(c * PER + in(1) + o, c * PER + out(1) + o);
                           },
                           [](int a) { return a * NP; }, [](int a) { return a * NP; }),
                       warp, warps, shift, lane);
    // z lines: rows (cell, x y)
    dmma_rows(m, ncells * NP2, cellmem, cellmem,
              row_map(
                  [&](int r) {
                    const int c = r / NP2, xy = r - c * NP2;
                    return make_int2(c * PER + in(2) + xy, c * PER + out(2) + xy);
                  },
                  [](int a) { return a * ZS; }, [](int a) { return a * ZS; }),
              warp, warps, shift, lane);
  }
};

/// DmmaCell2: the 2D form of DmmaCell3 with one field. Per cell (doubles): the nodes [NP^2] at 0
/// (x fastest); X [2][SX] at OX, the x contraction's outputs X0 = B_x u and X1 = D_x u, (qx, j) at
/// qx + YS j; the gradients G [2][SQ] at OG, point (qx, qy) at qx + YS qy: G0 = B_y X1 (d/dx),
/// G1 = D_y X0 (d/dy). The transpose reads a flux [2][SQ] at OF (OG: in place of the gradient),
/// computes X0 = B_y^T F0, X1 = D_y^T F1 in X and D_x^T X0 + B_x^T X1 (one reduction) at the nodes.
template <int NP, int NQ>
struct DmmaCell2 {
  static constexpr int NP2 = NP * NP, NQ2 = NQ * NQ;
  static constexpr int YS = dmma_z_stride(NQ), SX = YS * NP, SQ = YS * NQ;
  static constexpr int OX = NP2, OG = OX + 2 * SX;
  static constexpr int END = OG + 2 * SQ;
  __host__ __device__ static constexpr int point(int q) { return q + (YS - NQ) * (q / NQ); }

  /// The gradients at the points (G at OG) from the nodes of `ncells` cells at cellmem + c PER; a
  /// barrier between the x and y steps, none before or after.
  template <int PER>
  __device__ static void gradients(const double* B, const double* D, double* cellmem, int ncells, int warp, int warps,
                                   int lane) {
    const Entries1D<NP, NQ> fwd_bd{B, D, Matrix1D::fwd_bd}, fwd_b{B, D, Matrix1D::fwd_b}, fwd_d{B, D, Matrix1D::fwd_d};
    const auto plain = [](int a) { return a; };
    const auto stride_y = [](int a) { return a * YS; };
    {  // x: rows (cell, j)
      const DmmaMatrix<NP, 2 * NQ> m(fwd_bd, lane);
      dmma_rows(m, ncells * NP, cellmem, cellmem,
                row_map(
                    [](int r) {
                      const int c = r / NP, j = r - c * NP;
                      return make_int2(c * PER + NP * j, c * PER + OX + YS * j);
                    },
                    plain, [](int o) { return o < NQ ? o : SX + o - NQ; }),
                warp, warps, 0, lane);
    }
    __syncthreads();
    {  // y: rows (cell, qx); G0 from X1, G1 from X0
      int shift = 0;
      {
        const DmmaMatrix<NP, NQ> m(fwd_b, lane);
        shift += dmma_rows(m, ncells * NQ, cellmem, cellmem,
                           row_map(
                               [](int r) {
                                 const int c = r / NQ, qx = r - c * NQ;
                                 return make_int2(c * PER + OX + SX + qx, c * PER + OG + qx);
                               },
                               stride_y, stride_y),
                           warp, warps, shift, lane);
      }
      {
        const DmmaMatrix<NP, NQ> m(fwd_d, lane);
        dmma_rows(m, ncells * NQ, cellmem, cellmem,
                  row_map(
                      [](int r) {
                        const int c = r / NQ, qx = r - c * NQ;
                        return make_int2(c * PER + OX + qx, c * PER + OG + SQ + qx);
                      },
                      stride_y, stride_y),
                  warp, warps, shift, lane);
      }
    }
  }

  /// The transpose of a flux F [2][SQ] at OF of every cell, staged per node at [0, NP^2) of the
  /// cell; a barrier between the steps, none before or after. Uses X (F must not overlap it).
  template <int PER, int OF>
  __device__ static void divergence(const double* B, const double* D, double* cellmem, int ncells, int warp, int warps,
                                    int lane) {
    static_assert(OF >= OX + 2 * SX, "the flux must not overlap X");
    const Entries1D<NP, NQ> tr_b{B, D, Matrix1D::tr_b}, tr_d{B, D, Matrix1D::tr_d}, tr_db{B, D, Matrix1D::tr_db};
    const auto stride_y = [](int a) { return a * YS; };
    {  // y^T: rows (cell, qx); X0 = B_y^T F0, X1 = D_y^T F1
      int shift = 0;
      {
        const DmmaMatrix<NQ, NP> m(tr_b, lane);
        shift += dmma_rows(m, ncells * NQ, cellmem, cellmem,
                           row_map(
                               [](int r) {
                                 const int c = r / NQ, qx = r - c * NQ;
                                 return make_int2(c * PER + OF + qx, c * PER + OX + qx);
                               },
                               stride_y, stride_y),
                           warp, warps, shift, lane);
      }
      {
        const DmmaMatrix<NQ, NP> m(tr_d, lane);
        dmma_rows(m, ncells * NQ, cellmem, cellmem,
                  row_map(
                      [](int r) {
                        const int c = r / NQ, qx = r - c * NQ;
                        return make_int2(c * PER + OF + SQ + qx, c * PER + OX + SX + qx);
                      },
                      stride_y, stride_y),
                  warp, warps, shift, lane);
      }
    }
    __syncthreads();
    {  // x^T: D_x^T X0 + B_x^T X1 per node (one reduction over [X0; X1]); rows (cell, j)
      const DmmaMatrix<2 * NQ, NP> m(tr_db, lane);
      dmma_rows(m, ncells * NP, cellmem, cellmem,
                row_map(
                    [](int r) {
                      const int c = r / NP, j = r - c * NP;
                      return make_int2(c * PER + OX + YS * j, c * PER + NP * j);
                    },
                    [](int a) { return a < NQ ? a : SX + a - NQ; }, [](int o) { return o; }),
                warp, warps, 0, lane);
    }
  }

  template <class Count>
  static constexpr double sum_contractions(Count c) {
    return c(NP, NP, 2 * NQ) + 2 * c(NQ, NP, NQ) + 2 * c(NQ, NQ, NP) + c(NP, 2 * NQ, NP);
  }
  static constexpr double flops() { return sum_contractions(dmma_padded_flops); }
  static constexpr double shared_values() { return sum_contractions(dmma_shared_values); }
};

/// DmmaColloc2: the 2D form of DmmaColloc3. Per cell (doubles): four tensors of S = YS NP values,
/// the node or point (x, y) at x + YS y: the nodes at 0, the gradients G_e at (1 + e) S (the flux in
/// their place), the transposes T0 at 0 and T1 at 3 S, which the caller sums per node.
template <int NP>
struct DmmaColloc2 {
  static constexpr int NP2 = NP * NP;
  static constexpr int YS = dmma_z_stride(NP), S = YS * NP;
  static constexpr int OG = S, SQ = S;
  static constexpr int END = 4 * S;
  __host__ __device__ static constexpr int point(int q) { return q + (YS - NP) * (q / NP); }
  __host__ __device__ static constexpr int transposed(int e) { return e == 0 ? 0 : 3 * S; }

  template <int PER>
  __device__ static void gradients(const double* D, double* cellmem, int ncells, int warp, int warps, int lane) {
    lines<PER>(Entries1D<NP, NP>{D, D, Matrix1D::fwd_d}, cellmem, ncells, warp, warps, lane, [](int) { return 0; },
               [](int e) { return (1 + e) * S; });
  }
  template <int PER>
  __device__ static void divergence(const double* D, double* cellmem, int ncells, int warp, int warps, int lane) {
    lines<PER>(Entries1D<NP, NP>{D, D, Matrix1D::tr_d}, cellmem, ncells, warp, warps, lane,
               [](int e) { return (1 + e) * S; }, [](int e) { return transposed(e); });
  }

  static constexpr double flops() { return 4 * dmma_padded_flops(NP, NP, NP); }
  static constexpr double shared_values() { return 4 * dmma_shared_values(NP, NP, NP); }

 private:
  template <int PER, class In, class Out>
  __device__ static void lines(const Entries1D<NP, NP>& entries, double* cellmem, int ncells, int warp, int warps,
                               int lane, In in, Out out) {
    const DmmaMatrix<NP, NP> m(entries, lane);
    int shift = 0;
    // x lines: rows (cell, y)
    shift += dmma_rows(m, ncells * NP, cellmem, cellmem,
                       row_map(
                           [&](int r) {
                             const int c = r / NP, y = r - c * NP;
                             return make_int2(c * PER + in(0) + YS * y, c * PER + out(0) + YS * y);
                           },
                           [](int a) { return a; }, [](int a) { return a; }),
                       warp, warps, shift, lane);
    // y lines: rows (cell, x)
    dmma_rows(m, ncells * NP, cellmem, cellmem,
              row_map(
                  [&](int r) {
                    const int c = r / NP, x = r - c * NP;
                    return make_int2(c * PER + in(1) + x, c * PER + out(1) + x);
                  },
                  [](int a) { return a * YS; }, [](int a) { return a * YS; }),
              warp, warps, shift, lane);
  }
};

}  // namespace tcfem::tensor
