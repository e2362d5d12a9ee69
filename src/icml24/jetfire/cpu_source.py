"""The C++ source of Jetfire's fused CPU kernel (AVX512-VNNI), compiled by :mod:`icml24.jetfire.cpu`.

One translation unit: operand packing (the ``vpdpbusd`` layout), the block-scaled GEMM on 6 x 32 register tiles
with its per-macro-tile epilogue (bias, per-block requantization), and per-block quantization and dequantization.
:func:`icml24.jetfire.cpu.load_cpu_kernel` builds it; the build is cached under a name derived from this text's
hash, so any edit here means one rebuild.
"""

SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <immintrin.h>
#include <cstdint>
#include <cstring>
#include <vector>
#include <algorithm>

namespace {

constexpr int64_t MR_MAX = 6;   // rows of a micro-tile (6 x 2 INT32 + 6 x 2 FP32 accumulators in zmm)
constexpr int64_t MC_WANT = 96;  // rows of a macro-tile (A block of MC x KC bytes stays in L2), whole blocks
constexpr int64_t NC_WANT = 256; // columns of a macro-tile, whole blocks
constexpr int64_t KC_WANT = 4096;  // C is written once per K block: keep K whole up to here

// 4 rows k..k+3 of 16 consecutive bytes -> 64 bytes holding, per column j, its 4 bytes (the vpdpbusd operand
// layout), XORed with flip (0x80 turns int8 into the offset u8); adds the 16 columns' int8 values to sums.
inline void interleave4(const int8_t* src, int64_t stride, int8_t* dst, __m512i& sums, __m128i flip) {
  const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + stride));
  const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * stride));
  const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * stride));
  const __m512i s01 = _mm512_add_epi32(_mm512_cvtepi8_epi32(r0), _mm512_cvtepi8_epi32(r1));
  const __m512i s23 = _mm512_add_epi32(_mm512_cvtepi8_epi32(r2), _mm512_cvtepi8_epi32(r3));
  sums = _mm512_add_epi32(sums, _mm512_add_epi32(s01, s23));
  const __m128i lo01 = _mm_unpacklo_epi8(r0, r1), hi01 = _mm_unpackhi_epi8(r0, r1);
  const __m128i lo23 = _mm_unpacklo_epi8(r2, r3), hi23 = _mm_unpackhi_epi8(r2, r3);
  __m128i* d = reinterpret_cast<__m128i*>(dst);
  _mm_storeu_si128(d + 0, _mm_xor_si128(_mm_unpacklo_epi16(lo01, lo23), flip));
  _mm_storeu_si128(d + 1, _mm_xor_si128(_mm_unpackhi_epi16(lo01, lo23), flip));
  _mm_storeu_si128(d + 2, _mm_xor_si128(_mm_unpacklo_epi16(hi01, hi23), flip));
  _mm_storeu_si128(d + 3, _mm_xor_si128(_mm_unpackhi_epi16(hi01, hi23), flip));
}

// X (R, K) int8 stored with unit row stride (a transposed view: X[r, k] at x[r + k * sk]) -> [R/16][K/4][16][4]
// (row r's 4 bytes k..k+3 at (r / 16) * 16 * K + k * 16 + (r % 16) * 4), or with rowmajor a contiguous (R, K),
// XORed with flip; with sums, also sums[r * KB + kb] = -128 * sum of X[r, chunk kb].
void pack_rows_t(const int8_t* x, int64_t sk, int64_t R, int64_t K, int64_t blk, int8_t* xp, int32_t* sums,
                 uint8_t flip, bool rowmajor) {
  const int64_t KB = K / blk;
  const __m128i fl = _mm_set1_epi8(static_cast<char>(flip));
  at::parallel_for(0, R / 16, 4, [&](int64_t g0, int64_t g1) {
    alignas(64) int32_t tmp[16];
    for (int64_t g = g0; g < g1; ++g) {
      int8_t* dst = xp + g * 16 * K;
      const int8_t* src = x + g * 16;
      for (int64_t kb = 0; kb < KB; ++kb) {
        __m512i s = _mm512_setzero_si512();
        for (int64_t k = kb * blk; k < (kb + 1) * blk; k += 4) {
          if (!rowmajor) {
            interleave4(src + k * sk, sk, dst + k * 16, s, fl);
            continue;
          }
          alignas(64) int8_t quad[64];  // 16 rows x 4 bytes, then each row's 4 bytes to its place
          interleave4(src + k * sk, sk, quad, s, fl);
          for (int64_t j = 0; j < 16; ++j) std::memcpy(xp + (g * 16 + j) * K + k, quad + 4 * j, 4);
        }
        if (sums != nullptr) {
          _mm512_store_si512(tmp, _mm512_mullo_epi32(s, _mm512_set1_epi32(-128)));
          for (int64_t j = 0; j < 16; ++j) sums[(g * 16 + j) * KB + kb] = tmp[j];
        }
      }
    }
  });
}

// X (R, K) int8 with any strides -> the same [R/16][K/4][16][4] layout, XORed with flip (row-contiguous sources
// copy 4 bytes at a time).
void pack_rows(const int8_t* x, int64_t sr, int64_t sk, int64_t R, int64_t K, int8_t* xp, uint8_t flip) {
  const uint32_t fl4 = 0x01010101u * flip;
  at::parallel_for(0, R, 16, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      uint32_t* dst = reinterpret_cast<uint32_t*>(xp + (n / 16) * 16 * K) + (n % 16);
      if (sk == 1) {
        const int8_t* src = x + n * sr;
        for (int64_t k4 = 0; k4 < K / 4; ++k4) {
          uint32_t w;
          std::memcpy(&w, src + 4 * k4, 4);
          dst[k4 * 16] = w ^ fl4;
        }
      } else {
        for (int64_t k4 = 0; k4 < K / 4; ++k4) {
          uint8_t w[4];
          for (int t = 0; t < 4; ++t) w[t] = static_cast<uint8_t>(x[n * sr + (4 * k4 + t) * sk]) ^ flip;
          std::memcpy(dst + k4 * 16, w, 4);
        }
      }
    }
  });
}

// sums[r * KB + kb] = -128 * sum of A[r, chunk kb] for a row-contiguous A (|sum| <= 2^7 blk: exact in int32).
void row_sums(const int8_t* a, int64_t lda, int64_t M, int64_t K, int64_t blk, int32_t* sums) {
  const int64_t KB = K / blk;
  at::parallel_for(0, M, 16, [&](int64_t r0, int64_t r1) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t kb = 0; kb < KB; ++kb) {
        __m256i acc = _mm256_setzero_si256();
        for (int64_t k = kb * blk; k < (kb + 1) * blk; k += 32) {  // sum of a ^ 0x80 (as u8) = sum of a + 128 * 32
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + r * lda + k));
          acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_xor_si256(v, flip), _mm256_setzero_si256()));
        }
        alignas(32) int64_t t[4];
        _mm256_store_si256(reinterpret_cast<__m256i*>(t), acc);
        sums[r * KB + kb] = -128 * static_cast<int32_t>(t[0] + t[1] + t[2] + t[3] - 128 * blk);
      }
  });
}

inline __mmask16 tail_mask(int64_t c, int64_t N) {
  const int64_t left = N - c;
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : (left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1));
}

inline __m512i mix32(__m512i h) {  // murmur3's finalizer
  h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
  h = _mm512_mullo_epi32(h, _mm512_set1_epi32(static_cast<int32_t>(0x85ebca6bu)));
  h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 13));
  h = _mm512_mullo_epi32(h, _mm512_set1_epi32(static_cast<int32_t>(0xc2b2ae35u)));
  return _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
}

// 16 values of one row of a block divided by its (safe) scale, rounded (to nearest even, or stochastically with
// noise from a hash of the seed and the element's index r * Np + c + lane) and clamped to [-128, 127].
inline __m512 round16(__m512 v, float safe, bool stochastic, int64_t idx, uint32_t s_lo, uint32_t s_hi) {
  const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const __m512 signmask = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int32_t>(0x80000000u)));
  __m512 y = _mm512_div_ps(v, _mm512_set1_ps(safe));
  if (stochastic) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const uint32_t base = static_cast<uint32_t>(idx) ^ s_hi;
    __m512i h = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(base)), lane);
    h = mix32(_mm512_xor_si512(_mm512_mullo_epi32(h, _mm512_set1_epi32(static_cast<int32_t>(0x9e3779b9u))),
                               _mm512_set1_epi32(static_cast<int32_t>(s_lo))));
    h = _mm512_srai_epi32(_mm512_slli_epi32(h, 16), 16);  // a signed 16-bit draw
    const __m512 u =
        _mm512_div_ps(_mm512_add_ps(_mm512_cvtepi32_ps(h), _mm512_set1_ps(0.5f)), _mm512_set1_ps(65536.0f));
    __m512 a = _mm512_add_ps(_mm512_and_ps(y, absmask), u);
    a = _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    y = _mm512_or_ps(a, _mm512_and_ps(y, signmask));
  } else {
    y = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  return _mm512_min_ps(_mm512_max_ps(y, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
}

// The epilogue of one macro-tile of C (rows [m0, m1), columns [c0, c1), whole blocks when mode > 0), run while it
// is in cache: adds the bias to the columns below Nv; mode 1 / 2 requantize every blk x blk block of the cropped
// (Mv, Nv) output exactly as quantize() would (entries outside it count as zero), writing INT8 data and scales
// (mode 1) or the dequantized values q * scale over C (mode 2).
void epilogue(float* C, int64_t Np, int64_t m0, int64_t m1, int64_t c0, int64_t c1, int64_t Mv, int64_t Nv,
              int64_t blk, const float* bias, int64_t mode, bool stochastic, uint32_t s_lo, uint32_t s_hi, int8_t* Q,
              float* S, int64_t NB) {
  const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  if (mode == 0) {
    if (bias == nullptr) return;
    for (int64_t r = m0; r < std::min(m1, Mv); ++r)
      for (int64_t c = c0; c < c1; c += 16) {
        const __mmask16 mk = tail_mask(c, Nv);
        float* p = C + r * Np + c;
        _mm512_mask_storeu_ps(p, mk, _mm512_add_ps(_mm512_loadu_ps(p), _mm512_maskz_loadu_ps(mk, bias + c)));
      }
    return;
  }
  for (int64_t r0 = m0; r0 < m1; r0 += blk)
    for (int64_t j0 = c0; j0 < c1; j0 += blk) {
      __m512 m = _mm512_setzero_ps();
      const int64_t rv = std::min(r0 + blk, Mv);
      for (int64_t r = r0; r < rv; ++r)
        for (int64_t c = j0; c < j0 + blk; c += 16) {
          const __mmask16 mk = tail_mask(c, Nv);
          float* p = C + r * Np + c;
          __m512 v = _mm512_maskz_loadu_ps(mk, p);
          if (bias != nullptr) {
            v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, bias + c));
            _mm512_storeu_ps(p, v);
          }
          m = _mm512_max_ps(m, _mm512_and_ps(v, absmask));
        }
      const float sc = _mm512_reduce_max_ps(m) / 127.0f;
      const float safe = sc > 0.0f ? sc : 1.0f;
      S[(r0 / blk) * NB + j0 / blk] = sc;
      for (int64_t r = r0; r < r0 + blk; ++r)
        for (int64_t c = j0; c < j0 + blk; c += 16) {
          const __mmask16 mk = r < Mv ? tail_mask(c, Nv) : static_cast<__mmask16>(0);
          const __m512 y = round16(_mm512_maskz_loadu_ps(mk, C + r * Np + c), safe, stochastic, r * Np + c, s_lo, s_hi);
          if (mode == 1)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(Q + r * Np + c), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(y)));
          else
            _mm512_storeu_ps(C + r * Np + c, _mm512_mul_ps(y, _mm512_set1_ps(sc)));  // = float(q) * scale
        }
    }
}

// One micro-tile: MR rows x 32 columns of C over K in [k0, k1), all in zmm registers: per K chunk of blk
// (a multiple of 32), INT32 sums by vpdpbusd (u8 columns of B, the offset b + 128, times broadcast int8 quads of
// a row of A; started at -128 x the row's chunk sum, so the sum is exact), then one FMA by the chunk's scale
// s_A[row block, kb] * s_B[column block, kb] into the FP32 accumulators. A is row-major with row stride lda.
template <int MR>
inline void micro(const int8_t* a, int64_t lda, const uint8_t* bp0, const uint8_t* bp1, int64_t k0, int64_t k1,
                  int64_t blk, const float* const* sa_rows, const float* sb_row, const int32_t* const* rs_rows,
                  float* c, int64_t ldc, bool first) {
  __m512 f0[MR], f1[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    f0[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc);
    f1[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc + 16);
  }
  const int8_t* ar[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) ar[r] = a + r * lda;
  for (int64_t kc = k0; kc < k1; kc += blk) {
    const int64_t kb = kc / blk;
    __m512i i0[MR], i1[MR];
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      i0[r] = _mm512_set1_epi32(rs_rows[r][kb]);
      i1[r] = i0[r];
    }
    for (int64_t ks = kc; ks < kc + blk; ks += 32) {
      const uint8_t* p0 = bp0 + ks * 16;
      const uint8_t* p1 = bp1 + ks * 16;
#pragma GCC unroll 8
      for (int k = 0; k < 32; k += 4) {
        const __m512i b0 = _mm512_loadu_si512(p0 + k * 16);
        const __m512i b1 = _mm512_loadu_si512(p1 + k * 16);
#pragma GCC unroll 6
        for (int r = 0; r < MR; ++r) {
          int32_t w;
          std::memcpy(&w, ar[r] + ks + k, 4);
          const __m512i av = _mm512_set1_epi32(w);
          i0[r] = _mm512_dpbusd_epi32(i0[r], b0, av);
          i1[r] = _mm512_dpbusd_epi32(i1[r], b1, av);
        }
      }
    }
    const float sb = sb_row[kb];
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m512 sc = _mm512_set1_ps(sa_rows[r][kb] * sb);
      f0[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i0[r]), sc, f0[r]);
      f1[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i1[r]), sc, f1[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_ps(c + r * ldc, f0[r]);
    _mm512_storeu_ps(c + r * ldc + 16, f1[r]);
  }
}

inline void micro_rows(int64_t mr, const int8_t* a, int64_t lda, const uint8_t* bp0, const uint8_t* bp1, int64_t k0,
                       int64_t k1, int64_t blk, const float* const* sa_rows, const float* sb_row,
                       const int32_t* const* rs_rows, float* c, int64_t ldc, bool first) {
  switch (mr) {
    case 6: micro<6>(a, lda, bp0, bp1, k0, k1, blk, sa_rows, sb_row, rs_rows, c, ldc, first); break;
    case 5: micro<5>(a, lda, bp0, bp1, k0, k1, blk, sa_rows, sb_row, rs_rows, c, ldc, first); break;
    case 4: micro<4>(a, lda, bp0, bp1, k0, k1, blk, sa_rows, sb_row, rs_rows, c, ldc, first); break;
    case 3: micro<3>(a, lda, bp0, bp1, k0, k1, blk, sa_rows, sb_row, rs_rows, c, ldc, first); break;
    case 2: micro<2>(a, lda, bp0, bp1, k0, k1, blk, sa_rows, sb_row, rs_rows, c, ldc, first); break;
    default: micro<1>(a, lda, bp0, bp1, k0, k1, blk, sa_rows, sb_row, rs_rows, c, ldc, first); break;
  }
}

}  // namespace

// C = sum_k (A_k B_k^T) * sa[I, k] * sb[J, k]; A (M, K), B (N, K) int8 (any strides), M, N, K multiples of blk.
// Then, per macro-tile while it is in cache, the epilogue: + bias (FP32 (Nv,) or empty), and for mode 1 / 2 the
// per-block requantization of the cropped (Mv, Nv) output (round to nearest even, or stochastic with seed).
// Returns {C} (mode 0: FP32 (M, N)), {Q, S} (mode 1: INT8 (M, N) and scales) or {C} (mode 2: dequantized Q).
std::vector<torch::Tensor> block_gemm_ex(torch::Tensor a, torch::Tensor sa, torch::Tensor b, torch::Tensor sb,
                                         int64_t blk, torch::Tensor bias, int64_t Mv, int64_t Nv, int64_t mode,
                                         bool stochastic, int64_t seed) {
  TORCH_CHECK(a.scalar_type() == torch::kInt8 && b.scalar_type() == torch::kInt8, "operands must be int8");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(1), "A (M, K) and B (N, K) expected");
  TORCH_CHECK(blk >= 32 && blk % 32 == 0, "block must be a multiple of 32");
  TORCH_CHECK(mode >= 0 && mode <= 2, "mode must be 0, 1 or 2");
  const int64_t M = a.size(0), K = a.size(1), N = b.size(0);
  TORCH_CHECK(M % blk == 0 && N % blk == 0 && K % blk == 0, "shapes must be multiples of the block");
  TORCH_CHECK(Mv <= M && Nv <= N && M - Mv < blk && N - Nv < blk, "the valid shape must pad to the operands'");
  const int64_t KB = K / blk, NB = N / blk;
  auto saf = sa.to(torch::kFloat32).contiguous();
  auto sbf = sb.to(torch::kFloat32).contiguous();
  TORCH_CHECK(saf.size(0) == M / blk && saf.size(1) == KB && sbf.size(0) == NB && sbf.size(1) == KB,
              "scales must have one entry per block");
  torch::Tensor biasf;
  if (bias.numel() > 0) {
    biasf = bias.to(torch::kFloat32).contiguous();
    TORCH_CHECK(biasf.dim() == 1 && biasf.size(0) == Nv, "bias must have one entry per valid column");
  }
  const float* BIAS = bias.numel() > 0 ? biasf.data_ptr<float>() : nullptr;
  auto c = torch::empty({M, N}, torch::kFloat32);
  torch::Tensor q, sc;
  if (mode == 1) {
    q = torch::empty({M, N}, torch::kInt8);
    sc = torch::empty({M / blk, NB}, torch::kFloat32);
  } else if (mode == 2) {
    sc = torch::empty({M / blk, NB}, torch::kFloat32);
  }
  auto result = [&]() -> std::vector<torch::Tensor> {
    if (mode == 1) return {q, sc};
    return {c};
  };
  if (M == 0 || N == 0) return result();
  const uint32_t s_lo = static_cast<uint32_t>(seed), s_hi = static_cast<uint32_t>(static_cast<uint64_t>(seed) >> 32);
  int8_t* Q = mode == 1 ? q.data_ptr<int8_t>() : nullptr;
  float* S = mode > 0 ? sc.data_ptr<float>() : nullptr;
  float* C = c.data_ptr<float>();
  const int64_t MC = (MC_WANT + blk - 1) / blk * blk, NC = (NC_WANT + blk - 1) / blk * blk;  // whole blocks
  const int64_t mt = (M + MC - 1) / MC, nt = (N + NC - 1) / NC;
  if (K == 0) {
    c.zero_();
    at::parallel_for(0, mt * nt, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t m0 = (t / nt) * MC, c0 = (t % nt) * NC;
        epilogue(C, N, m0, std::min(M, m0 + MC), c0, std::min(N, c0 + NC), Mv, Nv, blk, BIAS, mode, stochastic,
                 s_lo, s_hi, Q, S, NB);
      }
    });
    return result();
  }
  // A: used in place when its rows are contiguous, else transposed by pack_rows_t (a transposed view) or made
  // contiguous; its chunk sums correct the u8 offset of B, which is packed to the vpdpbusd layout (b + 128).
  torch::Tensor ac = a;
  if (a.stride(1) != 1 && a.stride(0) != 1) ac = a.contiguous();
  const bool a_t = ac.stride(1) != 1;
  auto rs = torch::empty({M, KB}, torch::kInt32);
  torch::Tensor ap = a_t ? torch::empty({M * K}, torch::kInt8) : torch::empty({0}, torch::kInt8);
  if (a_t)
    pack_rows_t(ac.data_ptr<int8_t>(), ac.stride(1), M, K, blk, ap.data_ptr<int8_t>(), rs.data_ptr<int32_t>(), 0,
                true);
  else
    row_sums(ac.data_ptr<int8_t>(), ac.stride(0), M, K, blk, rs.data_ptr<int32_t>());
  auto bp = torch::empty({N * K}, torch::kInt8);
  if (b.stride(0) == 1 && b.stride(1) != 1)
    pack_rows_t(b.data_ptr<int8_t>(), b.stride(1), N, K, blk, bp.data_ptr<int8_t>(), nullptr, 0x80, false);
  else
    pack_rows(b.data_ptr<int8_t>(), b.stride(0), b.stride(1), N, K, bp.data_ptr<int8_t>(), 0x80);
  const int8_t* A = a_t ? ap.data_ptr<int8_t>() : ac.data_ptr<int8_t>();
  const int64_t lda = a_t ? K : ac.stride(0);
  const uint8_t* BP = reinterpret_cast<const uint8_t*>(bp.data_ptr<int8_t>());
  const int32_t* RS = rs.data_ptr<int32_t>();
  const float* SA = saf.data_ptr<float>();
  const float* SB = sbf.data_ptr<float>();
  const int64_t KC = std::max<int64_t>(blk, (KC_WANT / blk) * blk);
  at::parallel_for(0, mt * nt, 1, [&](int64_t t0, int64_t t1) {
    const float* sa_rows[MR_MAX];
    const int32_t* rs_rows[MR_MAX];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t m0 = (t / nt) * MC, m1 = std::min(M, m0 + MC);
      const int64_t c0 = (t % nt) * NC, c1 = std::min(N, c0 + NC);
      for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int64_t k1 = std::min(K, k0 + KC);
        for (int64_t cc = c0; cc < c1; cc += 32) {
          const uint8_t* bp0 = BP + (cc / 16) * 16 * K;
          const uint8_t* bp1 = bp0 + 16 * K;
          const float* sb_row = SB + (cc / blk) * KB;
          for (int64_t r = m0; r < m1; r += MR_MAX) {
            const int64_t mr = std::min<int64_t>(MR_MAX, m1 - r);
            for (int64_t i = 0; i < mr; ++i) {
              const int64_t row = r + i;
              sa_rows[i] = SA + (row / blk) * KB;
              rs_rows[i] = RS + row * KB;
            }
            float* cr = C + r * N + cc;
            const bool first = k0 == 0;
            micro_rows(mr, A + r * lda, lda, bp0, bp1, k0, k1, blk, sa_rows, sb_row, rs_rows, cr, N, first);
          }
        }
      }
      epilogue(C, N, m0, m1, c0, c1, Mv, Nv, blk, BIAS, mode, stochastic, s_lo, s_hi, Q, S, NB);
    }
  });
  return result();
}

// The plain block GEMM: FP32 (M, N), no epilogue.
torch::Tensor block_gemm(torch::Tensor a, torch::Tensor sa, torch::Tensor b, torch::Tensor sb, int64_t blk) {
  return block_gemm_ex(a, sa, b, sb, blk, torch::empty({0}), a.size(0), b.size(0), 0, false, 0)[0];
}

// Per-block quantization of a float32 matrix X (M, N) (row-contiguous) into int8 (Mp, Np) and scales (Mp/blk,
// Np/blk): scale = absmax / 127, q = round(x / scale) clamped to [-128, 127] (round half to even, or stochastic:
// sign(y) * round(|y| + u), u in (-0.5, 0.5) with 16-bit resolution from a counter-based hash of seed and index).
// With dequant, also (third tensor) the dequantized q * scale (M, N) in FP32, from the same pass.
std::vector<torch::Tensor> quantize_ex(torch::Tensor x, int64_t blk, bool stochastic, int64_t seed, bool dequant) {
  TORCH_CHECK(x.dim() == 2 && blk >= 16 && blk % 16 == 0, "2-D x and a block that is a multiple of 16 expected");
  auto xf = x.to(torch::kFloat32).contiguous();
  const int64_t M = xf.size(0), N = xf.size(1);
  const int64_t Mp = (M + blk - 1) / blk * blk, Np = (N + blk - 1) / blk * blk;
  const int64_t MB = Mp / blk, NB = Np / blk;
  auto q = torch::empty({Mp, Np}, torch::kInt8);
  auto sc = torch::empty({MB, NB}, torch::kFloat32);
  torch::Tensor dq = dequant ? torch::empty({M, N}, torch::kFloat32) : torch::empty({0}, torch::kFloat32);
  const float* X = xf.data_ptr<float>();
  int8_t* Q = q.data_ptr<int8_t>();
  float* S = sc.data_ptr<float>();
  float* D = dequant ? dq.data_ptr<float>() : nullptr;
  const uint32_t s_lo = static_cast<uint32_t>(seed), s_hi = static_cast<uint32_t>(static_cast<uint64_t>(seed) >> 32);
  at::parallel_for(0, MB, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> am(Np), safe(NB);
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    for (int64_t I = i0; I < i1; ++I) {
      const int64_t r0 = I * blk, r1 = std::min(M, r0 + blk);
      std::fill(am.begin(), am.end(), 0.0f);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < N; c += 16) {
          const __m512 v = _mm512_maskz_loadu_ps(tail_mask(c, N), X + r * N + c);
          _mm512_storeu_ps(am.data() + c, _mm512_max_ps(_mm512_loadu_ps(am.data() + c), _mm512_and_ps(v, absmask)));
        }
      for (int64_t J = 0; J < NB; ++J) {
        __m512 m = _mm512_setzero_ps();
        for (int64_t c = J * blk; c < (J + 1) * blk; c += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(am.data() + c));
        const float s = _mm512_reduce_max_ps(m) / 127.0f;
        S[I * NB + J] = s;
        safe[J] = s > 0.0f ? s : 1.0f;
      }
      for (int64_t r = r0; r < r0 + blk; ++r) {
        int8_t* qr = Q + r * Np;
        if (r >= M) {
          std::memset(qr, 0, Np);
          continue;
        }
        for (int64_t c = 0; c < Np; c += 16) {
          const __mmask16 mk = tail_mask(c, N);
          const __m512 y = round16(_mm512_maskz_loadu_ps(mk, X + r * N + c), safe[c / blk], stochastic, r * Np + c,
                                   s_lo, s_hi);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + c), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(y)));
          if (D != nullptr)  // y holds the INT8 value: y * scale = float(q) * scale
            _mm512_mask_storeu_ps(D + r * N + c, mk, _mm512_mul_ps(y, _mm512_set1_ps(S[I * NB + c / blk])));
        }
      }
    }
  });
  return {q, sc, dq};
}

std::vector<torch::Tensor> quantize(torch::Tensor x, int64_t blk, bool stochastic, int64_t seed) {
  auto r = quantize_ex(x, blk, stochastic, seed, false);
  return {r[0], r[1]};
}

// q (Mp, Np) int8 with scales (Mp/blk, Np/blk) -> float32 (M, N): q * scale, cropped.
torch::Tensor dequantize(torch::Tensor q, torch::Tensor scales, int64_t blk, int64_t M, int64_t N) {
  TORCH_CHECK(q.scalar_type() == torch::kInt8 && q.dim() == 2 && blk >= 16 && blk % 16 == 0, "int8 q expected");
  auto qc = q.contiguous();
  auto sc = scales.to(torch::kFloat32).contiguous();
  const int64_t Np = qc.size(1), NB = sc.size(1);
  TORCH_CHECK(M <= qc.size(0) && N <= Np, "shape larger than the data");
  auto out = torch::empty({M, N}, torch::kFloat32);
  const int8_t* Q = qc.data_ptr<int8_t>();
  const float* S = sc.data_ptr<float>();
  float* O = out.data_ptr<float>();
  at::parallel_for(0, M, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* srow = S + (r / blk) * NB;
      for (int64_t c = 0; c < N; c += 16) {
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(Q + r * Np + c));
        const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
        _mm512_mask_storeu_ps(O + r * N + c, tail_mask(c, N), _mm512_mul_ps(v, _mm512_set1_ps(srow[c / blk])));
      }
    }
  });
  return out;
}
"""

__all__: list[str] = []
