"""The block-scaled INT8 GEMM of Jetfire as one fused C++ kernel for CPUs with AVX512-VNNI (opt-in).

The torch-ops path of :func:`icml24.jetfire.block_matmul` runs one thin ``torch._int_mm`` per 32-wide K chunk
and a rescale pass over the whole output after each, which is memory-bound. This kernel does on the CPU what
the official CUDA kernels and our Triton kernel do on GPUs: each micro-tile of 6 rows x 32 columns of the output
lives in registers; per K chunk of one block's width the exact INT8 x INT8 products are summed in INT32 by
``vpdpbusd`` (u8 x s8: the left operand is offset by 128 and ``128 x`` the chunk's column sums of the right one
start the INT32 accumulator, so the sum is exact), converted to FP32 and accumulated with one FMA by
``s_A[I, k] s_B[J, k]``. Operands may be strided (transposed views); they are packed once per call (``A`` to
u8, ``B`` to the 16-column x 4-byte VNNI layout), which costs O(MK + NK) against the GEMM's O(MNK).

The kernel is compiled with ``torch.utils.cpp_extension.load_inline`` on first request (g++ and ninja needed;
about 40 s of CPU time, 1.5-2 min of wall time on a loaded 2-core machine) and cached under torch's extension
directory (a folder named after the source's hash), so later processes load it in 0.1-0.5 s. Quantization
(round to nearest: the same INT8 data and scales as the torch-ops quantizer; stochastic: noise from a hash of one
draw of the caller's generator) and dequantization live in the same extension.

It is opt-in: ``block_matmul(..., backend="cpu-vnni")`` builds it when needed; ``backend="auto"`` uses it on CPU
only when it is already built or loaded, or when the environment variable ``ICML24_JETFIRE_CPU_KERNEL=1`` asks
for it, so default runs never pay a compile.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

from torch import Tensor

from ..errors import InputError

ENV_VAR = "ICML24_JETFIRE_CPU_KERNEL"
MIN_BLOCK = 32  # a 32-column micro-tile must lie inside one block of columns

_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <immintrin.h>
#include <cstdint>
#include <cstring>
#include <vector>
#include <algorithm>

namespace {

constexpr int64_t MR_MAX = 6;   // rows of a micro-tile (6 x 2 INT32 + 6 x 2 FP32 accumulators in zmm)
constexpr int64_t MC = 96;      // rows of a macro-tile (A block of MC x KC bytes stays in L2)
constexpr int64_t NC = 256;     // columns of a macro-tile
constexpr int64_t KC_WANT = 4096;  // C is written once per K block: keep K whole up to here

// A (M, K) int8, any strides -> u8 (M, K) contiguous, a + 128. A transposed view is copied in 64 x 64 tiles.
void pack_a(const int8_t* a, int64_t sm, int64_t sk, int64_t M, int64_t K, uint8_t* au) {
  if (sk == 1) {
    at::parallel_for(0, M, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int8_t* src = a + r * sm;
        uint8_t* dst = au + r * K;
        for (int64_t k = 0; k < K; ++k) dst[k] = static_cast<uint8_t>(src[k]) ^ 0x80u;
      }
    });
    return;
  }
  constexpr int64_t T = 64;
  const int64_t mt = (M + T - 1) / T, kt = (K + T - 1) / T;
  at::parallel_for(0, mt * kt, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t m0 = (t / kt) * T, k0 = (t % kt) * T;
      const int64_t m1 = std::min(M, m0 + T), k1 = std::min(K, k0 + T);
      uint8_t tile[T][T];
      for (int64_t k = k0; k < k1; ++k) {
        const int8_t* src = a + k * sk;
        for (int64_t m = m0; m < m1; ++m) tile[k - k0][m - m0] = static_cast<uint8_t>(src[m * sm]) ^ 0x80u;
      }
      for (int64_t m = m0; m < m1; ++m)
        for (int64_t k = k0; k < k1; ++k) au[m * K + k] = tile[k - k0][m - m0];
    }
  });
}

// B (N, K) int8, any strides -> [N/16][K/4][16][4] int8 (16 columns x 4 consecutive k per 64 bytes, the operand
// layout of vpdpbusd), and ncs[kb][n] = -128 * sum of B[n, chunk kb] (the u8 offset's correction).
void pack_b(const int8_t* b, int64_t sn, int64_t sk, int64_t N, int64_t K, int64_t blk, int8_t* bp,
            int32_t* ncs) {
  const int64_t KB = K / blk;
  if (sk == 1) {  // rows of B contiguous: copy 4 bytes of a row at a time
    at::parallel_for(0, N, 16, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        const int8_t* src = b + n * sn;
        int32_t* dst = reinterpret_cast<int32_t*>(bp + (n / 16) * 16 * K) + (n % 16);
        for (int64_t k4 = 0; k4 < K / 4; ++k4) {
          int32_t w;
          std::memcpy(&w, src + 4 * k4, 4);
          dst[k4 * 16] = w;
        }
        for (int64_t kb = 0; kb < KB; ++kb) {
          int32_t s = 0;
          for (int64_t k = kb * blk; k < (kb + 1) * blk; ++k) s += src[k];
          ncs[kb * N + n] = -128 * s;
        }
      }
    });
    return;
  }
  // general strides (a transposed view has sn == 1): per K chunk, interleave 4 rows of 16 columns
  at::parallel_for(0, KB, 1, [&](int64_t kb0, int64_t kb1) {
    for (int64_t kb = kb0; kb < kb1; ++kb)
      for (int64_t g = 0; g < N / 16; ++g) {
        int32_t s[16] = {0};
        int8_t* dst = bp + g * 16 * K;
        for (int64_t k = kb * blk; k < (kb + 1) * blk; k += 4) {
          int8_t* d = dst + k * 16;
          for (int64_t t = 0; t < 4; ++t) {
            const int8_t* src = b + (k + t) * sk + g * 16 * sn;
            for (int64_t j = 0; j < 16; ++j) {
              const int8_t v = src[j * sn];
              s[j] += v;
              d[j * 4 + t] = v;
            }
          }
        }
        for (int64_t j = 0; j < 16; ++j) ncs[kb * N + g * 16 + j] = -128 * s[j];
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

// One micro-tile: MR rows x 32 columns of C over K in [k0, k1), all in zmm registers: per K chunk of blk
// (a multiple of 32), INT32 sums by vpdpbusd (started at the column-sum correction), then one FMA by the
// chunk's scale s_A[row block, kb] * s_B[column block, kb] into the FP32 accumulators.
template <int MR>
inline void micro(const uint8_t* a, int64_t lda, const int8_t* bp0, const int8_t* bp1, int64_t k0, int64_t k1,
                  int64_t blk, const float* const* sa_rows, const float* sb_row, const int32_t* ncs, int64_t N,
                  float* c, int64_t ldc, bool first) {
  __m512 f0[MR], f1[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    f0[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc);
    f1[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc + 16);
  }
  const uint8_t* ar[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) ar[r] = a + r * lda;
  for (int64_t kc = k0; kc < k1; kc += blk) {
    const int64_t kb = kc / blk;
    __m512i i0[MR], i1[MR];
    const __m512i n0 = _mm512_loadu_si512(ncs + kb * N);
    const __m512i n1 = _mm512_loadu_si512(ncs + kb * N + 16);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      i0[r] = n0;
      i1[r] = n1;
    }
    for (int64_t ks = kc; ks < kc + blk; ks += 32) {
      const int8_t* p0 = bp0 + ks * 16;
      const int8_t* p1 = bp1 + ks * 16;
#pragma GCC unroll 8
      for (int k = 0; k < 32; k += 4) {
        const __m512i b0 = _mm512_loadu_si512(p0 + k * 16);
        const __m512i b1 = _mm512_loadu_si512(p1 + k * 16);
#pragma GCC unroll 6
        for (int r = 0; r < MR; ++r) {
          int32_t w;
          std::memcpy(&w, ar[r] + ks + k, 4);
          const __m512i av = _mm512_set1_epi32(w);
          i0[r] = _mm512_dpbusd_epi32(i0[r], av, b0);
          i1[r] = _mm512_dpbusd_epi32(i1[r], av, b1);
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

}  // namespace

// C = sum_k (A_k B_k^T) * sa[I, k] * sb[J, k]; A (M, K), B (N, K) int8 (any strides), M, N, K multiples of blk.
torch::Tensor block_gemm(torch::Tensor a, torch::Tensor sa, torch::Tensor b, torch::Tensor sb, int64_t blk) {
  TORCH_CHECK(a.scalar_type() == torch::kInt8 && b.scalar_type() == torch::kInt8, "operands must be int8");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(1), "A (M, K) and B (N, K) expected");
  TORCH_CHECK(blk >= 32 && blk % 32 == 0, "block must be a multiple of 32");
  const int64_t M = a.size(0), K = a.size(1), N = b.size(0);
  TORCH_CHECK(M % blk == 0 && N % blk == 0 && K % blk == 0, "shapes must be multiples of the block");
  const int64_t KB = K / blk;
  auto saf = sa.to(torch::kFloat32).contiguous();
  auto sbf = sb.to(torch::kFloat32).contiguous();
  TORCH_CHECK(saf.size(0) == M / blk && saf.size(1) == KB && sbf.size(0) == N / blk && sbf.size(1) == KB,
              "scales must have one entry per block");
  auto au = torch::empty({M, K}, torch::kUInt8);
  auto bp = torch::empty({N * K}, torch::kInt8);
  auto ncs = torch::empty({KB, N}, torch::kInt32);
  auto c = torch::empty({M, N}, torch::kFloat32);
  if (M == 0 || N == 0) return c;
  if (K == 0) return c.zero_();
  pack_a(a.data_ptr<int8_t>(), a.stride(0), a.stride(1), M, K, au.data_ptr<uint8_t>());
  pack_b(b.data_ptr<int8_t>(), b.stride(0), b.stride(1), N, K, blk, bp.data_ptr<int8_t>(), ncs.data_ptr<int32_t>());
  const uint8_t* A = au.data_ptr<uint8_t>();
  const int8_t* BP = bp.data_ptr<int8_t>();
  const int32_t* NCS = ncs.data_ptr<int32_t>();
  const float* SA = saf.data_ptr<float>();
  const float* SB = sbf.data_ptr<float>();
  float* C = c.data_ptr<float>();
  const int64_t KC = std::max<int64_t>(blk, (KC_WANT / blk) * blk);
  const int64_t mt = (M + MC - 1) / MC, nt = (N + NC - 1) / NC;
  at::parallel_for(0, mt * nt, 1, [&](int64_t t0, int64_t t1) {
    const float* sa_rows[MR_MAX];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t m0 = (t / nt) * MC, m1 = std::min(M, m0 + MC);
      const int64_t c0 = (t % nt) * NC, c1 = std::min(N, c0 + NC);
      for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int64_t k1 = std::min(K, k0 + KC);
        for (int64_t cc = c0; cc < c1; cc += 32) {
          const int8_t* bp0 = BP + (cc / 16) * 16 * K;
          const int8_t* bp1 = bp0 + 16 * K;
          const float* sb_row = SB + (cc / blk) * KB;
          for (int64_t r = m0; r < m1; r += MR_MAX) {
            const int64_t mr = std::min<int64_t>(MR_MAX, m1 - r);
            for (int64_t i = 0; i < mr; ++i) sa_rows[i] = SA + ((r + i) / blk) * KB;
            const uint8_t* ar = A + r * K;
            float* cr = C + r * N + cc;
            const bool first = k0 == 0;
            switch (mr) {
              case 6: micro<6>(ar, K, bp0, bp1, k0, k1, blk, sa_rows, sb_row, NCS + cc, N, cr, N, first); break;
              case 5: micro<5>(ar, K, bp0, bp1, k0, k1, blk, sa_rows, sb_row, NCS + cc, N, cr, N, first); break;
              case 4: micro<4>(ar, K, bp0, bp1, k0, k1, blk, sa_rows, sb_row, NCS + cc, N, cr, N, first); break;
              case 3: micro<3>(ar, K, bp0, bp1, k0, k1, blk, sa_rows, sb_row, NCS + cc, N, cr, N, first); break;
              case 2: micro<2>(ar, K, bp0, bp1, k0, k1, blk, sa_rows, sb_row, NCS + cc, N, cr, N, first); break;
              default: micro<1>(ar, K, bp0, bp1, k0, k1, blk, sa_rows, sb_row, NCS + cc, N, cr, N, first); break;
            }
          }
        }
      }
    }
  });
  return c;
}

// Per-block quantization of a float32 matrix X (M, N) (row-contiguous) into int8 (Mp, Np) and scales (Mp/blk,
// Np/blk): scale = absmax / 127, q = round(x / scale) clamped to [-128, 127] (round half to even, or stochastic:
// sign(y) * round(|y| + u), u in (-0.5, 0.5) with 16-bit resolution from a counter-based hash of seed and index).
std::vector<torch::Tensor> quantize(torch::Tensor x, int64_t blk, bool stochastic, int64_t seed) {
  TORCH_CHECK(x.dim() == 2 && blk >= 16 && blk % 16 == 0, "2-D x and a block that is a multiple of 16 expected");
  auto xf = x.to(torch::kFloat32).contiguous();
  const int64_t M = xf.size(0), N = xf.size(1);
  const int64_t Mp = (M + blk - 1) / blk * blk, Np = (N + blk - 1) / blk * blk;
  const int64_t MB = Mp / blk, NB = Np / blk;
  auto q = torch::empty({Mp, Np}, torch::kInt8);
  auto sc = torch::empty({MB, NB}, torch::kFloat32);
  const float* X = xf.data_ptr<float>();
  int8_t* Q = q.data_ptr<int8_t>();
  float* S = sc.data_ptr<float>();
  const uint32_t s_lo = static_cast<uint32_t>(seed), s_hi = static_cast<uint32_t>(static_cast<uint64_t>(seed) >> 32);
  at::parallel_for(0, MB, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> am(Np), safe(NB);
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    const __m512 signmask = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int32_t>(0x80000000u)));
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
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
          const __m512 v = _mm512_maskz_loadu_ps(tail_mask(c, N), X + r * N + c);
          __m512 y = _mm512_div_ps(v, _mm512_set1_ps(safe[c / blk]));
          if (stochastic) {
            const uint32_t base = static_cast<uint32_t>(r * Np + c) ^ s_hi;
            __m512i h = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(base)), lane);
            h = mix32(_mm512_xor_si512(_mm512_mullo_epi32(h, _mm512_set1_epi32(static_cast<int32_t>(0x9e3779b9u))),
                                       _mm512_set1_epi32(static_cast<int32_t>(s_lo))));
            h = _mm512_srai_epi32(_mm512_slli_epi32(h, 16), 16);  // a signed 16-bit draw
            const __m512 u = _mm512_div_ps(_mm512_add_ps(_mm512_cvtepi32_ps(h), _mm512_set1_ps(0.5f)),
                                           _mm512_set1_ps(65536.0f));
            __m512 a = _mm512_add_ps(_mm512_and_ps(y, absmask), u);
            a = _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            y = _mm512_or_ps(a, _mm512_and_ps(y, signmask));
          } else {
            y = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
          }
          y = _mm512_min_ps(_mm512_max_ps(y, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + c), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(y)));
        }
      }
    }
  });
  return {q, sc};
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

_NAME = "icml24_jetfire_vnni_" + hashlib.sha1(_SOURCE.encode()).hexdigest()[:12]
_FLAGS = ["-O3", "-fopenmp", "-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mavx512vnni", "-mfma"]
_state: dict = {"module": None, "build_seconds": None, "vnni": None}


def build_directory() -> Path:
    """Where the compiled kernel is cached: ``$TORCH_EXTENSIONS_DIR`` or torch's default root, per source hash.

    Returns
    -------
    pathlib.Path
    """
    from torch.utils.cpp_extension import get_default_build_root

    root = os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root()
    return Path(root) / "icml24_jetfire" / _NAME


def vnni_supported() -> bool:
    """Whether this CPU has AVX512-VNNI (and AVX512-BW), read from ``/proc/cpuinfo`` (Linux x86).

    Returns
    -------
    bool
    """
    if _state["vnni"] is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            text = ""
        flags = set()
        for line in text.splitlines():
            if line.startswith("flags"):
                flags.update(line.split(":", 1)[1].split())
                break
        _state["vnni"] = {"avx512_vnni", "avx512bw", "avx512f"} <= flags
    return _state["vnni"]


def cpu_kernel_built() -> bool:
    """Whether the kernel is loaded in this process or compiled in the cache (loading it then needs no compile).

    Returns
    -------
    bool
    """
    return _state["module"] is not None or (build_directory() / f"{_NAME}.so").exists()


def cpu_kernel_requested() -> bool:
    """Whether the environment variable ``ICML24_JETFIRE_CPU_KERNEL`` asks ``backend="auto"`` to build it.

    Returns
    -------
    bool
    """
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def build_seconds() -> float | None:
    """Seconds the last :func:`load_cpu_kernel` of this process took (compile or cache load), or None.

    Returns
    -------
    float or None
    """
    return _state["build_seconds"]


def load_cpu_kernel(verbose: bool = False):
    """Compile (first time) or load the kernel.

    Parameters
    ----------
    verbose : bool, default False
        Print the compiler's output.

    Returns
    -------
    module
        The extension, with ``block_gemm(a, sa, b, sb, block)``.

    Raises
    ------
    InputError
        Without AVX512-VNNI, without a C++ compiler or ninja, or when the build fails.
    """
    if _state["module"] is not None:
        return _state["module"]
    if not vnni_supported():
        raise InputError(
            "backend='cpu-vnni' needs a CPU with AVX512-VNNI (none found in /proc/cpuinfo): use backend='torch'"
        )
    from torch.utils.cpp_extension import is_ninja_available, load_inline

    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None or not is_ninja_available():
        raise InputError(
            f"backend='cpu-vnni' compiles a C++ kernel and needs a C++ compiler ({cxx}) and ninja on PATH: "
            "install them or use backend='torch'"
        )
    t0 = time.perf_counter()
    folder = build_directory()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        mod = load_inline(
            _NAME,
            cpp_sources=[_SOURCE],
            functions=["block_gemm", "quantize", "dequantize"],
            extra_cflags=_FLAGS,
            extra_ldflags=["-fopenmp"],
            build_directory=str(folder),
            verbose=verbose,
        )
    except (RuntimeError, OSError, ImportError) as exc:
        msg = str(exc).strip().splitlines()
        raise InputError(
            f"backend='cpu-vnni': building the C++ kernel failed ({msg[-1] if msg else type(exc).__name__}): "
            "use backend='torch'"
        ) from exc
    _state["module"] = mod
    _state["build_seconds"] = time.perf_counter() - t0
    return mod


def cpu_kernel_usable(x: Tensor, block: int) -> bool:
    """Whether ``backend="auto"`` should use the kernel for an operand: CPU, ``block`` a multiple of 32, VNNI,
    and the kernel loaded, built in the cache (it is then loaded), or requested by ``ICML24_JETFIRE_CPU_KERNEL=1``
    (it is then built).

    Parameters
    ----------
    x : torch.Tensor
        An operand's INT8 data.
    block : int
        The quantization block.

    Returns
    -------
    bool

    Raises
    ------
    InputError
        When the environment variable asks for the kernel and it cannot be built.
    """
    if x.device.type != "cpu" or block < MIN_BLOCK or block % MIN_BLOCK or sys.platform != "linux":
        return False
    if _state["module"] is not None:
        return True
    if cpu_kernel_requested():
        load_cpu_kernel()  # asked for: a failure is reported, not hidden
        return True
    if not (cpu_kernel_built() and vnni_supported()):
        return False
    try:  # built in the cache: loading needs no compile; a stale or foreign build falls back to torch ops
        load_cpu_kernel()
    except InputError:
        return False
    return True


def vnni_block_matmul(a: Tensor, sa: Tensor, b: Tensor, sb: Tensor, block: int) -> Tensor:
    """``Y = A B^T`` for block-quantized CPU operands, by the fused VNNI kernel (built on first use).

    Parameters
    ----------
    a : torch.Tensor
        INT8 ``(Mp, Kp)`` (any strides, e.g. a transposed view), sides multiples of ``block``.
    sa : torch.Tensor
        Scales ``(Mp / block, Kp / block)``.
    b : torch.Tensor
        INT8 ``(Np, Kp)``.
    sb : torch.Tensor
        Scales ``(Np / block, Kp / block)``.
    block : int
        The quantization block: a multiple of 32.

    Returns
    -------
    torch.Tensor
        FP32 ``(Mp, Np)``.

    Raises
    ------
    InputError
        If the kernel cannot be built here (see :func:`load_cpu_kernel`).
    """
    return load_cpu_kernel().block_gemm(a, sa, b, sb, int(block))


def vnni_quantize(x: Tensor, block: int, stochastic: bool, seed: int) -> tuple[Tensor, Tensor]:
    """Per-block INT8 quantization of a CPU matrix by the extension (one pass per row of blocks).

    Round to nearest even gives the same INT8 data and scales as the torch-ops quantizer; stochastic rounding
    draws its noise (16-bit resolution, as :func:`icml24.jetfire.quant.uniform_noise`) from a counter-based hash
    of ``seed`` and the element's index instead of torch's generator.

    Parameters
    ----------
    x : torch.Tensor
        Floating ``(M, N)`` on CPU.
    block : int
        A multiple of 32.
    stochastic : bool
        Stochastic rounding instead of round to nearest even.
    seed : int
        Seed of the noise (any 64-bit integer).

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        INT8 ``(Mp, Np)`` zero-padded to multiples of ``block`` and FP32 scales ``(Mp / block, Np / block)``.
    """
    q, s = load_cpu_kernel().quantize(x, int(block), bool(stochastic), int(seed))
    return q, s


def vnni_dequantize(q: Tensor, scales: Tensor, block: int, shape: tuple[int, int]) -> Tensor:
    """``q * scale`` per block, cropped to ``shape``, by the extension.

    Parameters
    ----------
    q : torch.Tensor
        INT8 ``(Mp, Np)`` on CPU.
    scales : torch.Tensor
        ``(Mp / block, Np / block)``.
    block : int
        A multiple of 32.
    shape : tuple of int
        The unpadded ``(M, N)``.

    Returns
    -------
    torch.Tensor
        FP32 ``shape``.
    """
    return load_cpu_kernel().dequantize(q, scales, int(block), int(shape[0]), int(shape[1]))


__all__ = [
    "ENV_VAR",
    "vnni_quantize",
    "vnni_dequantize",
    "build_directory",
    "vnni_supported",
    "cpu_kernel_built",
    "cpu_kernel_requested",
    "build_seconds",
    "load_cpu_kernel",
    "cpu_kernel_usable",
    "vnni_block_matmul",
]
