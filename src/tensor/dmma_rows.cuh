#pragma once
// Batched 1D contractions on FP64 tensor cores: the rows of cell-local tensors in shared memory
// times one small fixed matrix,
//     out(r, o) = sum_{a < KA} in(r, a) M(a, o),   r < rows, o < NO,
// as warp-level mma.sync (sm_90 m16n8k4 or m16n8k8 .f64; compiled for an older architecture the
// atoms run their CUDA-core twins, so the code is correct everywhere). A row is one line of a
// sum factorization (a cell and the indices of the other directions); 16 rows form the A operand
// of one instruction, M's B operands stay in registers, and each warp takes whole 16-row tiles.
// The rows' addresses are the caller's (RowMap): the offsets of row r's first input and output
// element, and of input element a and output element o within a row (run-time values: the lane's
// columns), so strided lines, lines concatenated from two tensors (a sum of two contractions in
// one) and outputs split over several tensors are the same code.
// Padding (a >= KA, o >= NO, rows past `rows`) never reaches memory: A is zero there and such
// outputs are not stored.
#include <type_traits>

#include "arch/mma_sm90.cuh"

namespace tcfem::tensor {

/// The atom of a reduction of length KA: m16n8k8 where it pads KA to the same length as m16n8k4
/// would (one instruction instead of two), m16n8k4 otherwise (KA = 3, 4, 9..12: less padding).
template <int KA>
using DmmaAtomFor = std::conditional_t<(KA % 8 == 0 || KA % 8 > 4), arch::Sm90_M16N8K8_F64, arch::Sm90_M16N8K4_F64>;

/// M (KA x NO) as this lane's B fragments: [K chunk][N tile], zero outside M.
template <int KA, int NO>
struct DmmaMatrix {
  using Atom = DmmaAtomFor<KA>;
  static constexpr int KC = (KA + Atom::K - 1) / Atom::K;
  static constexpr int NT = (NO + Atom::N - 1) / Atom::N;
  typename Atom::FragB b[KC][NT];

  /// entry(a, o) = M(a, o), read for a < KA, o < NO only.
  template <class Entry>
  __device__ __forceinline__ DmmaMatrix(const Entry& entry, int lane) {
#pragma unroll
    for (int kc = 0; kc < KC; ++kc)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < Atom::b_elements; ++e) {
          const int a = kc * Atom::K + Atom::b_row(lane, e), o = nt * Atom::N + Atom::b_col(lane, e);
          Atom::set_b(b[kc][nt], e, (a < KA && o < NO) ? entry(a, o) : 0.0);
        }
  }
};

/// Lines of a contraction: row(r) the offsets of row r's element 0 in the input (x) and the
/// output (y), in_col(a) and out_col(o) the offsets of input element a and output element o.
template <class RowF, class InColF, class OutColF>
struct RowMap {
  RowF row_f;
  InColF in_col_f;
  OutColF out_col_f;
  __device__ __forceinline__ int2 row(int r) const { return row_f(r); }
  __device__ __forceinline__ int in_col(int a) const { return in_col_f(a); }
  __device__ __forceinline__ int out_col(int o) const { return out_col_f(o); }
};
template <class RowF, class InColF, class OutColF>
__device__ __forceinline__ RowMap<RowF, InColF, OutColF> row_map(RowF r, InColF i, OutColF o) {
  return {r, i, o};
}

/// out[map(r, o)] = sum_a in[map(r, a)] M(a, o) for every r < rows, o < NO, with this warp's
/// tiles: tiles t = 0, 1, ... of 16 rows go to warps (t + shift) % warps, so that several
/// contractions between two barriers can continue where the previous one left the warps. The
/// map's row part is computed twice per tile (rows g and g + 8 of the lane), its column parts once
/// per lane. Returns the number of tiles (add it to the shift of the next contraction). Must be
/// called by every lane of the warp; `in` and `out` must not overlap.
template <int KA, int NO, class Map>
__device__ __forceinline__ int dmma_rows(const DmmaMatrix<KA, NO>& m, int rows, const double* __restrict__ in,
                                         double* __restrict__ out, const Map& map, int warp, int warps, int shift,
                                         int lane) {
  using Atom = typename DmmaMatrix<KA, NO>::Atom;
  constexpr int KC = DmmaMatrix<KA, NO>::KC, NT = DmmaMatrix<KA, NO>::NT;
  const int tiles = (rows + Atom::M - 1) / Atom::M;
  int in_col[KC][Atom::a_elements];  // this lane's input columns (offsets); -1: padding
#pragma unroll
  for (int kc = 0; kc < KC; ++kc)
#pragma unroll
    for (int e = 0; e < Atom::a_elements; ++e) {
      const int a = kc * Atom::K + Atom::a_col(lane, e);
      in_col[kc][e] = a < KA ? map.in_col(a) : -1;
    }
  int out_col[NT][Atom::c_elements];  // this lane's output columns; -1: padding
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < Atom::c_elements; ++e) {
      const int o = nt * Atom::N + Atom::c_col(lane, e);
      out_col[nt][e] = o < NO ? map.out_col(o) : -1;
    }
  for (int tile = (warp + warps - shift % warps) % warps; tile < tiles; tile += warps) {
    // lanes hold rows g and g + 8 of the tile in A and in C; rows past the end are read clamped
    // and not stored
    int in_row[2], out_row[2];
    bool valid[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = tile * Atom::M + Atom::a_row(lane, h);
      valid[h] = r < rows;
      const int2 offsets = map.row(valid[h] ? r : rows - 1);
      in_row[h] = offsets.x;
      out_row[h] = offsets.y;
    }
    typename Atom::FragC acc[NT];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) Atom::fill_c(acc[nt], 0.0);
#pragma unroll
    for (int kc = 0; kc < KC; ++kc) {
      typename Atom::FragA a;
#pragma unroll
      for (int e = 0; e < Atom::a_elements; ++e) {
        // the lanes' four columns kc K + 4 (e >> 1) + t: all inside M, all padding, or a per-lane test
        const int group = kc * Atom::K + 4 * (e >> 1);
        const int c = in_col[kc][e];
        Atom::set_a(a, e, group >= KA ? 0.0 : (group + 4 <= KA || c >= 0) ? in[in_row[e & 1] + c] : 0.0);
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) Atom::mma(acc[nt], a, m.b[kc][nt], acc[nt]);
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < Atom::c_elements; ++e) {
        const int h = e >> 1;                    // C element e is in row g + 8 (e >> 1)
        const int group = nt * Atom::N + (e & 1);  // columns group + 2 t, t = 0..3
        if (group >= NO) continue;
        if (valid[h] && (group + 6 < NO || out_col[nt][e] >= 0)) out[out_row[h] + out_col[nt][e]] = Atom::get_c(acc[nt], e);
      }
  }
  return tiles;
}

}  // namespace tcfem::tensor
