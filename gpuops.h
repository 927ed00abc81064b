/* SPDX-License-Identifier: MIT */
/* gpuops.h - GPU kernels from vector add to flash attention, with a plain C99 API.

   What it is
     The public API of gpuops: status codes, the stream and half-precision types, the algorithm
     enum, the GPU ops, and a CPU implementation of every op (the reference the tests and the
     learning path compare against). The CUDA device code lives in gpuops_cuda.cuh.

   Recipe
     In exactly one translation unit, compiled by nvcc:
         #define GPUOPS_IMPLEMENTATION
         #include "gpuops.h"
     Everywhere else (C99, C++ or CUDA) just #include "gpuops.h" and link with that unit.
     nvcc -O3 -arch=sm_90 -I. app.cu -o app
     Compiled by a plain C compiler, the implementation still defines every GPU op; each returns
     GPUOPS_ERR_NO_CUDA, so a program links and can tell its user why.

   Options (define before including, the same in every translation unit)
     GPUOPS_IMPLEMENTATION     define the functions here (one translation unit).
     GPUOPS_ONLY_<FAMILY>      compile only the named families (any number of them);
     GPUOPS_NO_<FAMILY>        leave one family out.
                               Families: ELEMENTWISE, REDUCE (reductions and histogram), SCAN,
                               SOFTMAX, TRANSPOSE, MATMUL, NORM (normalization and rotary
                               embeddings), GEMM (tensor-core matrix multiply and linear
                               layers), ATTENTION, CONV (convolution). The core (section 1)
                               is always in. A family may be built on another family's public
                               C entry points (never on its kernels): GPUOPS_ONLY_<F> then also
                               turns on the families F calls (ATTENTION: GEMM, SOFTMAX and
                               MATMUL, for its NAIVE version; CONV: MATMUL and GEMM, for its
                               UNFUSED version); with one of those left out by GPUOPS_NO_<F>,
                               the version that calls it returns GPUOPS_ERR_UNSUPPORTED.
     GPUOPS_API                decoration of every public function (default: nothing; set it to
                               an export attribute when building a shared library).
     GPUOPS_MATMUL_WT_CONFIG   1, 2 or 3 forces the warp-tiled matmul's tile shape (128x128,
                               128x256, 64x64); 0, the default, picks by problem size.

   Conventions
     Names gpuops_<op>[_fwd|_bwd]_<dtype>; the dtype suffix is the storage type, arithmetic is
     f32 inside. Arguments: outputs, const inputs, sizes (int64_t), scalars, workspace, options,
     stream. Every op returns gpuops_status; arguments are checked on the host before any launch,
     and a failed check writes and launches nothing. Size 0 is valid and launches nothing. GPU
     pointers are device (or managed) memory. The library never allocates device memory, never
     synchronizes, never prints and never exits. Ops are asynchronous on the stream they are given.

   Contents (gpuops_cuda.cuh uses the same numbers)
     1. Core: version, status codes, stream, the algorithm list, half types, activations, storage
        types
     2. Elementwise and activations
     3. Reductions and histogram
     4. Prefix scan
     5. Softmax
     6. Transpose
     7. Matrix multiply
     8. Normalization and rotary embeddings
     9. Tensor-core matrix multiply and linear layers
     10. Attention (naive, flash attention 1 and 2, forward and backward)
     11. Convolution
     I. Implementation, in the same order: I.1 the core (status strings, half conversions, the
        argument checks every family uses, the host skeleton of a family), then one part I.N per
        family N (its registry, argument struct, checks, CPU implementation, C entry points), and
        last the include of the device file (the launchers)

   Version 0.1.0
*/
#ifndef GPUOPS_H
#define GPUOPS_H

#include <stddef.h>
#include <stdint.h>

/* Family selection: GPUOPS_ONLY_<F> turns every family not named off. The core tier (section 1)
   is never off. A family built on other families' public C entry points names them here: its
   ONLY flag turns them on too. */
#if defined(GPUOPS_ONLY_ATTENTION) && !defined(GPUOPS_NO_ATTENTION) /* NAIVE calls the GEMM, the softmax and (f32) the matrix multiply */
#ifndef GPUOPS_ONLY_GEMM
#define GPUOPS_ONLY_GEMM
#endif
#ifndef GPUOPS_ONLY_SOFTMAX
#define GPUOPS_ONLY_SOFTMAX
#endif
#ifndef GPUOPS_ONLY_MATMUL
#define GPUOPS_ONLY_MATMUL
#endif
#endif
#if defined(GPUOPS_ONLY_CONV) && !defined(GPUOPS_NO_CONV) /* UNFUSED calls gpuops_matmul_f32 and gpuops_gemm_* */
#ifndef GPUOPS_ONLY_MATMUL
#define GPUOPS_ONLY_MATMUL
#endif
#ifndef GPUOPS_ONLY_GEMM
#define GPUOPS_ONLY_GEMM
#endif
#endif
#if defined(GPUOPS_ONLY_ELEMENTWISE) || defined(GPUOPS_ONLY_REDUCE) || defined(GPUOPS_ONLY_SCAN) || \
    defined(GPUOPS_ONLY_SOFTMAX) || defined(GPUOPS_ONLY_TRANSPOSE) || defined(GPUOPS_ONLY_MATMUL) ||       \
    defined(GPUOPS_ONLY_NORM) || defined(GPUOPS_ONLY_GEMM) || defined(GPUOPS_ONLY_ATTENTION) ||               \
    defined(GPUOPS_ONLY_CONV)
#define GPUOPS__ONLY
#endif
#if defined(GPUOPS__ONLY) && !defined(GPUOPS_ONLY_ELEMENTWISE) && !defined(GPUOPS_NO_ELEMENTWISE)
#define GPUOPS_NO_ELEMENTWISE
#endif
#if defined(GPUOPS__ONLY) && !defined(GPUOPS_ONLY_REDUCE) && !defined(GPUOPS_NO_REDUCE)
#define GPUOPS_NO_REDUCE
#endif
#if defined(GPUOPS__ONLY) && !defined(GPUOPS_ONLY_SCAN) && !defined(GPUOPS_NO_SCAN)
#define GPUOPS_NO_SCAN
#endif
#if defined(GPUOPS__ONLY) && !defined(GPUOPS_ONLY_SOFTMAX) && !defined(GPUOPS_NO_SOFTMAX)
#define GPUOPS_NO_SOFTMAX
#endif
#if defined(GPUOPS__ONLY) && !defined(GPUOPS_ONLY_TRANSPOSE) && !defined(GPUOPS_NO_TRANSPOSE)
#define GPUOPS_NO_TRANSPOSE
#endif
#if defined(GPUOPS__ONLY) && !defined(GPUOPS_ONLY_MATMUL) && !defined(GPUOPS_NO_MATMUL)
#define GPUOPS_NO_MATMUL
#endif
#if defined(GPUOPS__ONLY) && !defined(GPUOPS_ONLY_NORM) && !defined(GPUOPS_NO_NORM)
#define GPUOPS_NO_NORM
#endif
#if defined(GPUOPS__ONLY) && !defined(GPUOPS_ONLY_GEMM) && !defined(GPUOPS_NO_GEMM)
#define GPUOPS_NO_GEMM
#endif
#if defined(GPUOPS__ONLY) && !defined(GPUOPS_ONLY_ATTENTION) && !defined(GPUOPS_NO_ATTENTION)
#define GPUOPS_NO_ATTENTION
#endif
#if defined(GPUOPS__ONLY) && !defined(GPUOPS_ONLY_CONV) && !defined(GPUOPS_NO_CONV)
#define GPUOPS_NO_CONV
#endif
/* Attention without a family its NAIVE version calls: NAIVE answers GPUOPS_ERR_UNSUPPORTED. */
#if defined(GPUOPS_NO_GEMM) || defined(GPUOPS_NO_SOFTMAX) || defined(GPUOPS_NO_MATMUL)
#define GPUOPS__ATTENTION_NO_NAIVE
#endif

#ifndef GPUOPS_API
#define GPUOPS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== 1. Core ============================================================================== */

#define GPUOPS_VERSION_MAJOR 0
#define GPUOPS_VERSION_MINOR 1
#define GPUOPS_VERSION_PATCH 0
#define GPUOPS_VERSION_STRING "0.1.0"

typedef enum gpuops_status {
  GPUOPS_OK = 0,
  GPUOPS_ERR_INVALID_ARGUMENT, /* NULL pointer, negative size, bad scalar or enum value      */
  GPUOPS_ERR_UNSUPPORTED,      /* this op has no such version, or this device/build lacks it */
  GPUOPS_ERR_MISALIGNED,       /* a pointer is not aligned as the op or version needs       */
  GPUOPS_ERR_WORKSPACE,        /* the caller's workspace is smaller than the op needs       */
  GPUOPS_ERR_CUDA,             /* the CUDA runtime failed: see gpuops_cuda_error()          */
  GPUOPS_ERR_NO_CUDA           /* built without nvcc: the GPU ops are not available         */
} gpuops_status;

/* A short English name of a status; never NULL. */
GPUOPS_API const char *gpuops_status_string(gpuops_status status);

/* The cudaError_t (as int) behind the last GPUOPS_ERR_CUDA returned on this host thread, 0 if
   none. The library reads launch errors with cudaGetLastError, which also clears them. */
GPUOPS_API int gpuops_cuda_error(void);

/* The stream type; the same type as cudaStream_t. NULL is the default stream. */
typedef struct CUstream_st *gpuops_stream;

/* The versions of each family's learning path, written once: GPUOPS_ALGO_LIST(X) calls
   X(NAME, value, "name") for each, and generates both the enum (GPUOPS_ALGO_<NAME> = value) and
   gpuops_algo_name(). AUTO picks the fastest one this device and these arguments allow; a named
   version runs exactly that version or returns GPUOPS_ERR_UNSUPPORTED (or GPUOPS_ERR_MISALIGNED
   where only the pointers stand in its way). Each family's section says which versions it has.
   Values are never reused. */
#define GPUOPS_ALGO_LIST(X)                                                                          \
  X(AUTO, 0, "auto")                         /* the fastest for this device and arguments       */ \
  X(NAIVE, 1, "naive")                       /* one element per thread, one launch-wide grid    */ \
  X(GRID_STRIDE, 2, "grid-stride")           /* a grid that fills the device, each thread loops */ \
  X(VECTORIZED, 3, "vectorized")             /* 128-bit loads and stores, scalar head and tail  */ \
  X(UNFUSED, 4, "unfused")                   /* a fused op run as its separate steps            */ \
  X(COALESCED, 5, "coalesced")               /* threads of a warp walk the contiguous dimension */ \
  X(SHARED_TILED, 6, "shared-tiled")         /* tiles staged through shared memory              */ \
  X(SHARED_PADDED, 7, "shared-padded")       /* shared tiles padded against bank conflicts      */ \
  X(REGISTER_1D, 8, "register-1d")           /* a run of outputs per thread in registers        */ \
  X(REGISTER_2D, 9, "register-2d")           /* a 2D block of outputs per thread in registers   */ \
  X(WARP_TILED, 10, "warp-tiled")            /* warp tiles, multi-stage cp.async pipeline       */ \
  X(INTERLEAVED, 11, "interleaved")          /* tree, interleaved addressing (divergent warps)  */ \
  X(SEQUENTIAL, 12, "sequential")            /* tree, sequential addressing (no divergence)     */ \
  X(FIRST_ADD, 13, "first-add")              /* the tree's first level done while loading       */ \
  X(WARP_SHUFFLE, 14, "warp-shuffle")        /* the last warp's levels by register shuffles     */ \
  X(WARP_REDUCE, 15, "warp-reduce")          /* warps reduce by shuffles, then one warp         */ \
  X(GLOBAL_ATOMIC, 16, "global-atomic")      /* one global atomic per element                   */ \
  X(SHARED_ATOMIC, 17, "shared-atomic")      /* a private histogram per block in shared memory  */ \
  X(RUN_AGGREGATE, 18, "run-aggregate")      /* runs of equal values counted before one atomic  */ \
  X(THREE_PASS, 19, "three-pass")            /* max, then sum of exponentials, then normalize   */ \
  X(ONLINE, 20, "online")                    /* running max and sum in one pass, then normalize */ \
  X(HILLIS_STEELE, 21, "hillis-steele")      /* log-step scan in a block                        */ \
  X(BLELLOCH, 22, "blelloch")                /* work-efficient up/down sweep, conflict-free     */ \
  X(REDUCE_THEN_SCAN, 23, "reduce-then-scan")/* block sums, scan of sums, scan                  */ \
  X(DECOUPLED_LOOKBACK, 24, "decoupled-lookback") /* one pass, blocks look back at predecessors */ \
  X(BLOCK_PER_ROW, 30, "block-per-row")      /* a block per row, shared-memory tree reductions  */ \
  X(WARP_PER_ROW, 31, "warp-per-row")        /* a warp per row, shuffles, no shared memory      */ \
  X(ROW_REGISTERS, 32, "row-registers")      /* the row read once into registers, 128-bit       */ \
  X(WMMA, 40, "wmma")                        /* tensor cores through WMMA fragments (sm_70+)    */ \
  X(MMA_SYNC, 41, "mma-sync")                /* mma.sync, ldmatrix, swizzled multi-stage smem   */ \
  X(WGMMA, 42, "wgmma")                      /* Hopper wgmma fed by TMA (sm_90a)                */ \
  X(FLASH, 50, "flash")                      /* attention: K/V tiles outer, online softmax      */ \
  X(FLASH2, 51, "flash2")                    /* attention: Q tiles outer, mma.sync, cp.async    */ \
  X(CONST_FILTER, 55, "const-filter")        /* the filter in constant memory (broadcast reads) */ \
  X(CACHED_HALO, 56, "cached-halo")          /* tile in shared memory, halo read through L1/L2  */ \
  X(IMPLICIT_GEMM, 57, "implicit-gemm")      /* GEMM whose operand is unrolled while loading    */

/* Rows are listed in increasing value (values below 64: a family's set is a 64-bit mask), so the
   enumerator after the list is one past the largest. A value between rows is not a version. */
#define GPUOPS__ALGO_ENUM(N, V, S) GPUOPS_ALGO_##N = V,
typedef enum gpuops_algo {
  GPUOPS_ALGO_LIST(GPUOPS__ALGO_ENUM)
  GPUOPS_ALGO_COUNT_ /* not a version: one past the largest value */
} gpuops_algo;
#undef GPUOPS__ALGO_ENUM

/* Every workspace an op takes must start at a multiple of this many bytes (cudaMalloc gives 256). */
#define GPUOPS_WORKSPACE_ALIGN 16

/* A short name of a version ("auto", "naive", ...); "?" for a value out of range. */
GPUOPS_API const char *gpuops_algo_name(gpuops_algo algo);

/* IEEE binary16 and bfloat16 values, stored as their bits (the hardware layout of __half and
   __nv_bfloat16). Conversions from f32 round to nearest, ties to even; NaN stays NaN. */
typedef struct gpuops_f16 { uint16_t bits; } gpuops_f16;
typedef struct gpuops_bf16 { uint16_t bits; } gpuops_bf16;

GPUOPS_API float gpuops_f16_to_f32(gpuops_f16 h);
GPUOPS_API gpuops_f16 gpuops_f32_to_f16(float f);
GPUOPS_API float gpuops_bf16_to_f32(gpuops_bf16 h);
GPUOPS_API gpuops_bf16 gpuops_f32_to_bf16(float f);

/* Activations, shared by every family that applies one (the elementwise ops, the fused norms and
   the linear layers' epilogues). */
/* GELU, PyTorch's two definitions: approximate='none' is x * Phi(x) (the exact form, Phi the
   normal CDF), approximate='tanh' is 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). For f32 the
   GPU evaluates Phi as 0.5 (1 + erf(x / sqrt 2)), PyTorch's formula: below x = -4 its error is
   absolute (about 6e-8 in Phi), not relative. For f16 and bf16 it uses a branch-free erfc form
   accurate to 1e-5 relative down to x = -13.2 (below, 0). The CPU forms are accurate there. The
   tanh form's value and gradient for f16 and bf16 take one MUFU.EX2 and one MUFU.RCP (relative error
   under 2^-21), in the elementwise ops and the fused norms alike. */
typedef enum gpuops_gelu_approx { GPUOPS_GELU_ERF = 0, GPUOPS_GELU_TANH = 1 } gpuops_gelu_approx;
/* The activation a fused op applies: none (identity), GELU in either form, SiLU or ReLU. */
typedef enum gpuops_activation {
  GPUOPS_ACT_NONE = 0, GPUOPS_ACT_GELU_ERF = 1, GPUOPS_ACT_GELU_TANH = 2, GPUOPS_ACT_SILU = 3, GPUOPS_ACT_RELU = 4
} gpuops_activation;

/* Private (used by the implementation, the tests and the bench): the storage types behind a
   family's internal arguments, and the floating-point storage types as one list,
   GPUOPS__FLOAT_TYPES(X, C) = X(suffix, C type, dtype, C) for f32, f16 and bf16 (C: any
   context the caller passes along), from which every
   family writes its per-type entry points once. */
typedef enum gpuops__dtype {
  GPUOPS__F32 = 0, GPUOPS__F16 = 1, GPUOPS__BF16 = 2, GPUOPS__I32 = 3, GPUOPS__I64 = 4, GPUOPS__I8 = 5
} gpuops__dtype;
/* A parenthesized list without its parentheses: GPUOPS__EXPAND (a, b) is a, b. */
#define GPUOPS__EXPAND(...) __VA_ARGS__
#define GPUOPS__FLOAT_TYPES(X, C) X(f32, float, GPUOPS__F32, C) X(f16, gpuops_f16, GPUOPS__F16, C) X(bf16, gpuops_bf16, GPUOPS__BF16, C)

/* ==== 2. Elementwise and activations ======================================================== */
/* y[i] = f(x[i], ...) over n elements. Storage f32, f16 or bf16 (int8 for quantized data), f32
   arithmetic inside. Versions: AUTO, NAIVE, GRID_STRIDE, VECTORIZED; the fused ops (add_mul_exp,
   quantize, dequantize) also UNFUSED. AUTO is VECTORIZED when all pointers sit at the same offset
   modulo 16 bytes, else GRID_STRIDE; VECTORIZED asked for on pointers at different offsets
   returns GPUOPS_ERR_MISALIGNED. VECTORIZED moves 16 bytes per access; small maps (up to 2^17 f32
   or 2^18 16-bit elements on an H100, four times that for per-channel ops) move 8 bytes, one
   access a thread: the shortest chain of work per thread (gpuops_cuda.cuh section 2.4).
   Every pointer must be aligned to its element size
   (GPUOPS_ERR_MISALIGNED otherwise). An output may be the same array as an input (in place);
   any other overlap is GPUOPS_ERR_INVALID_ARGUMENT. The gpuops_cpu_* forms take host pointers. */

/* The registry, written once (private): GPUOPS__EW_OPS(X) calls
     X(OP, name, SIG, INPUTS, FUSED, LO, HI, CPU)
   for each op. It generates the internal op enum, its properties, the C entry points (gpuops_<name>_<dtype>
   and gpuops_cpu_<name>_<dtype>, in the shape SIG gives: section I.2), the GPU dispatch
   (gpuops_cuda.cuh section 2.5) and the tests' and bench's op table (tests/elementwise_ops.h).
     SIG     the C signature: UNARY y = f(x); GRAD dx = dy * f'(x); BINARY c = f(a, b); SCALAR
             y = f(x, s); AXPY y = f(x, y, a); BINARY_SCALAR y = f(x, z, s); GELU_FWD / GELU_BWD
             with the approximation; QUANTIZE / DEQUANTIZE per tensor and per channel (int8 side).
     INPUTS  floating-point arrays read (axpy reads x and y; dequantize's input is int8).
     FUSED   1: the op also has an UNFUSED version (its separate steps).
     LO, HI  the range of the tests' random inputs (where the function is interesting).
     CPU     the CPU form in double, of x (the first input, dy for GRAD), b (the second input, x
             for GRAD), p (the call's arguments), scale and zp (the element's quantization pair).
   The GPU functor of an op is gpuops::<name>_op in gpuops_cuda.cuh (section 2.3). Adding an op:
   a row here, its prototypes below, its functor there, and its line in the README's table. */
#define GPUOPS__EW_OPS(X)                                                                                        \
  X(ADD, add, BINARY, 2, 0, -10, 10, x + b)                                                                       \
  X(ADD_SCALAR, add_scalar, SCALAR, 1, 0, -10, 10, x + p->s)                                                      \
  X(AXPY, axpy, AXPY, 2, 0, -10, 10, (double)p->s * x + b)                                                        \
  X(GELU_FWD, gelu_fwd, GELU_FWD, 1, 0, -6, 6, gpuops__cpu_gelu(x, p->gelu_tanh))                                 \
  X(GELU_BWD, gelu_bwd, GELU_BWD, 2, 0, -6, 6, x * gpuops__cpu_gelu_grad(b, p->gelu_tanh))                        \
  X(SILU_FWD, silu_fwd, UNARY, 1, 0, -10, 10, x * gpuops__cpu_sigmoid(x))                                         \
  X(SILU_BWD, silu_bwd, GRAD, 2, 0, -10, 10, x * gpuops__cpu_sigmoid(b) * (1.0 + b * (1.0 - gpuops__cpu_sigmoid(b)))) \
  X(RELU_FWD, relu_fwd, UNARY, 1, 0, -1, 1, x < 0.0 ? 0.0 : x)                                                    \
  X(RELU_BWD, relu_bwd, GRAD, 2, 0, -1, 1, b <= 0.0 ? 0.0 : x)                                                    \
  X(SIGMOID_FWD, sigmoid_fwd, UNARY, 1, 0, -12, 12, gpuops__cpu_sigmoid(x))                                       \
  X(SIGMOID_BWD, sigmoid_bwd, GRAD, 2, 0, -12, 12, x * gpuops__cpu_sigmoid_grad(b))                              \
  X(TANH_FWD, tanh_fwd, UNARY, 1, 0, -6, 6, tanh(x))                                                              \
  X(TANH_BWD, tanh_bwd, GRAD, 2, 0, -6, 6, x * gpuops__cpu_tanh_grad(b))                                          \
  X(ADD_MUL_EXP, add_mul_exp, BINARY_SCALAR, 2, 1, -0.5, 0.5, exp((x + b) * p->s))                                \
  X(QUANTIZE, quantize, QUANTIZE, 1, 1, -3, 3, gpuops__quantize1((float)x, scale, (float)zp))                     \
  X(DEQUANTIZE, dequantize, DEQUANTIZE, 0, 1, 0, 0, (x - zp) * (double)scale)

/* c = a + b */
GPUOPS_API gpuops_status gpuops_add_f32(float *c, const float *a, const float *b, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_f16(gpuops_f16 *c, const gpuops_f16 *a, const gpuops_f16 *b, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_bf16(gpuops_bf16 *c, const gpuops_bf16 *a, const gpuops_bf16 *b, int64_t n, gpuops_algo algo, gpuops_stream stream);

/* y = x + s (y == x increments an array in place) */
GPUOPS_API gpuops_status gpuops_add_scalar_f32(float *y, const float *x, int64_t n, float s, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_scalar_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n, float s, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_scalar_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n, float s, gpuops_algo algo, gpuops_stream stream);

/* y = a * x + y (one rounding: fmaf) */
GPUOPS_API gpuops_status gpuops_axpy_f32(float *y, const float *x, int64_t n, float a, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_axpy_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n, float a, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_axpy_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n, float a, gpuops_algo algo, gpuops_stream stream);

/* y = gelu(x) */
GPUOPS_API gpuops_status gpuops_gelu_fwd_f32(float *y, const float *x, int64_t n, gpuops_gelu_approx approx, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_gelu_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n, gpuops_gelu_approx approx, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_gelu_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n, gpuops_gelu_approx approx, gpuops_algo algo, gpuops_stream stream);
/* dx = dy * gelu'(x) */
GPUOPS_API gpuops_status gpuops_gelu_bwd_f32(float *dx, const float *dy, const float *x, int64_t n, gpuops_gelu_approx approx, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_gelu_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *x, int64_t n, gpuops_gelu_approx approx, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_gelu_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *x, int64_t n, gpuops_gelu_approx approx, gpuops_algo algo, gpuops_stream stream);

/* y = silu(x) = x * sigmoid(x) (Swish) */
GPUOPS_API gpuops_status gpuops_silu_fwd_f32(float *y, const float *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_silu_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_silu_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
/* dx = dy * silu'(x) */
GPUOPS_API gpuops_status gpuops_silu_bwd_f32(float *dx, const float *dy, const float *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_silu_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_silu_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);

/* y = relu(x) = (x < 0 ? 0 : x); NaN stays NaN, as in PyTorch */
GPUOPS_API gpuops_status gpuops_relu_fwd_f32(float *y, const float *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_relu_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_relu_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
/* dx = (x <= 0 ? 0 : dy), PyTorch's threshold_backward */
GPUOPS_API gpuops_status gpuops_relu_bwd_f32(float *dx, const float *dy, const float *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_relu_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_relu_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);

/* y = sigmoid(x) = 1 / (1 + exp(-x)) */
GPUOPS_API gpuops_status gpuops_sigmoid_fwd_f32(float *y, const float *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_sigmoid_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_sigmoid_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
/* dx = dy * sigmoid'(x) = dy * s (1 - s), s = sigmoid(x) (from the input x, like the other backwards) */
GPUOPS_API gpuops_status gpuops_sigmoid_bwd_f32(float *dx, const float *dy, const float *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_sigmoid_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_sigmoid_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);

/* y = tanh(x) */
GPUOPS_API gpuops_status gpuops_tanh_fwd_f32(float *y, const float *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_tanh_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_tanh_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
/* dx = dy * (1 - tanh(x)^2) */
GPUOPS_API gpuops_status gpuops_tanh_bwd_f32(float *dx, const float *dy, const float *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_tanh_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_tanh_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *x, int64_t n, gpuops_algo algo, gpuops_stream stream);

/* Fused chain y = exp((x + z) * s): one pass. UNFUSED runs it as three passes (y = x + z;
   y = y * s; y = exp(y)), each rounding to the storage type, as three separate calls would. */
GPUOPS_API gpuops_status gpuops_add_mul_exp_f32(float *y, const float *x, const float *z, int64_t n, float s, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_mul_exp_f16(gpuops_f16 *y, const gpuops_f16 *x, const gpuops_f16 *z, int64_t n, float s, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_mul_exp_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, const gpuops_bf16 *z, int64_t n, float s, gpuops_algo algo, gpuops_stream stream);

/* int8 quantization, affine:
     q = clamp(round_half_even(x / scale + zero_point), -128, 127)   computed in f32
     x = (q - zero_point) * scale                                      (dequantize)
   The per-tensor forms take one scale (finite, > 0) and one zero point in [-128, 127]; anything
   else is GPUOPS_ERR_INVALID_ARGUMENT. A NaN input quantizes to -128, +-inf saturate.
   The per-channel forms view the data as [outer, channels, inner] and read scale[c] and
   zero_point[c] for channel c = (i / inner) % channels: weights [out, in] per output row are
   (1, out, in); activations [tokens, hidden] per hidden unit are (tokens, hidden, 1).
   Per-channel scales are device data that the host cannot read without synchronizing, so the
   GPU forms cannot check them: a scale that is not finite and > 0 gives saturated or NaN-derived
   values, never an out-of-bounds access. The CPU forms check them.
   The quantizer's suffix names the floating-point side; the quantized side is always int8.
   UNFUSED quantizes in three passes through an f32 workspace of n elements (x / scale, then
   + zero_point, then round, clamp and convert); every other version needs no workspace
   (workspace may be NULL). UNFUSED dequantization makes three passes over y (convert, subtract
   the zero point, scale) and needs no workspace either. */
GPUOPS_API size_t gpuops_quantize_workspace_size(int64_t n, gpuops_algo algo);

GPUOPS_API gpuops_status gpuops_quantize_f32(int8_t *q, const float *x, int64_t n, float scale, int32_t zero_point, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_quantize_f16(int8_t *q, const gpuops_f16 *x, int64_t n, float scale, int32_t zero_point, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_quantize_bf16(int8_t *q, const gpuops_bf16 *x, int64_t n, float scale, int32_t zero_point, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);

GPUOPS_API gpuops_status gpuops_quantize_per_channel_f32(int8_t *q, const float *x, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_quantize_per_channel_f16(int8_t *q, const gpuops_f16 *x, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_quantize_per_channel_bf16(int8_t *q, const gpuops_bf16 *x, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);

GPUOPS_API gpuops_status gpuops_dequantize_f32(float *x, const int8_t *q, int64_t n, float scale, int32_t zero_point, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_dequantize_f16(gpuops_f16 *x, const int8_t *q, int64_t n, float scale, int32_t zero_point, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_dequantize_bf16(gpuops_bf16 *x, const int8_t *q, int64_t n, float scale, int32_t zero_point, gpuops_algo algo, gpuops_stream stream);

GPUOPS_API gpuops_status gpuops_dequantize_per_channel_f32(float *x, const int8_t *q, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_dequantize_per_channel_f16(gpuops_f16 *x, const int8_t *q, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_dequantize_per_channel_bf16(gpuops_bf16 *x, const int8_t *q, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner, gpuops_algo algo, gpuops_stream stream);

/* CPU implementations: the same ops on host memory, computed in double (the quantizer in f32, so
   that it agrees with the GPU bit for bit) and rounded once to the storage type. */
GPUOPS_API gpuops_status gpuops_cpu_add_f32(float *c, const float *a, const float *b, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_add_f16(gpuops_f16 *c, const gpuops_f16 *a, const gpuops_f16 *b, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_add_bf16(gpuops_bf16 *c, const gpuops_bf16 *a, const gpuops_bf16 *b, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_add_scalar_f32(float *y, const float *x, int64_t n, float s);
GPUOPS_API gpuops_status gpuops_cpu_add_scalar_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n, float s);
GPUOPS_API gpuops_status gpuops_cpu_add_scalar_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n, float s);
GPUOPS_API gpuops_status gpuops_cpu_axpy_f32(float *y, const float *x, int64_t n, float a);
GPUOPS_API gpuops_status gpuops_cpu_axpy_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n, float a);
GPUOPS_API gpuops_status gpuops_cpu_axpy_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n, float a);
GPUOPS_API gpuops_status gpuops_cpu_gelu_fwd_f32(float *y, const float *x, int64_t n, gpuops_gelu_approx approx);
GPUOPS_API gpuops_status gpuops_cpu_gelu_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n, gpuops_gelu_approx approx);
GPUOPS_API gpuops_status gpuops_cpu_gelu_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n, gpuops_gelu_approx approx);
GPUOPS_API gpuops_status gpuops_cpu_gelu_bwd_f32(float *dx, const float *dy, const float *x, int64_t n, gpuops_gelu_approx approx);
GPUOPS_API gpuops_status gpuops_cpu_gelu_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *x, int64_t n, gpuops_gelu_approx approx);
GPUOPS_API gpuops_status gpuops_cpu_gelu_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *x, int64_t n, gpuops_gelu_approx approx);
GPUOPS_API gpuops_status gpuops_cpu_silu_fwd_f32(float *y, const float *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_silu_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_silu_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_silu_bwd_f32(float *dx, const float *dy, const float *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_silu_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_silu_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_relu_fwd_f32(float *y, const float *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_relu_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_relu_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_relu_bwd_f32(float *dx, const float *dy, const float *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_relu_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_relu_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_sigmoid_fwd_f32(float *y, const float *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_sigmoid_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_sigmoid_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_sigmoid_bwd_f32(float *dx, const float *dy, const float *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_sigmoid_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_sigmoid_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_tanh_fwd_f32(float *y, const float *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_tanh_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_tanh_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_tanh_bwd_f32(float *dx, const float *dy, const float *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_tanh_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_tanh_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *x, int64_t n);
GPUOPS_API gpuops_status gpuops_cpu_add_mul_exp_f32(float *y, const float *x, const float *z, int64_t n, float s);
GPUOPS_API gpuops_status gpuops_cpu_add_mul_exp_f16(gpuops_f16 *y, const gpuops_f16 *x, const gpuops_f16 *z, int64_t n, float s);
GPUOPS_API gpuops_status gpuops_cpu_add_mul_exp_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, const gpuops_bf16 *z, int64_t n, float s);
GPUOPS_API gpuops_status gpuops_cpu_quantize_f32(int8_t *q, const float *x, int64_t n, float scale, int32_t zero_point);
GPUOPS_API gpuops_status gpuops_cpu_quantize_f16(int8_t *q, const gpuops_f16 *x, int64_t n, float scale, int32_t zero_point);
GPUOPS_API gpuops_status gpuops_cpu_quantize_bf16(int8_t *q, const gpuops_bf16 *x, int64_t n, float scale, int32_t zero_point);
GPUOPS_API gpuops_status gpuops_cpu_quantize_per_channel_f32(int8_t *q, const float *x, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner);
GPUOPS_API gpuops_status gpuops_cpu_quantize_per_channel_f16(int8_t *q, const gpuops_f16 *x, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner);
GPUOPS_API gpuops_status gpuops_cpu_quantize_per_channel_bf16(int8_t *q, const gpuops_bf16 *x, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner);
GPUOPS_API gpuops_status gpuops_cpu_dequantize_f32(float *x, const int8_t *q, int64_t n, float scale, int32_t zero_point);
GPUOPS_API gpuops_status gpuops_cpu_dequantize_f16(gpuops_f16 *x, const int8_t *q, int64_t n, float scale, int32_t zero_point);
GPUOPS_API gpuops_status gpuops_cpu_dequantize_bf16(gpuops_bf16 *x, const int8_t *q, int64_t n, float scale, int32_t zero_point);
GPUOPS_API gpuops_status gpuops_cpu_dequantize_per_channel_f32(float *x, const int8_t *q, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner);
GPUOPS_API gpuops_status gpuops_cpu_dequantize_per_channel_f16(gpuops_f16 *x, const int8_t *q, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner);
GPUOPS_API gpuops_status gpuops_cpu_dequantize_per_channel_bf16(gpuops_bf16 *x, const int8_t *q, const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner);

/* ==== 3. Reductions and histogram ======================================================= */
/* Sum, max or min of n values (a vector), or of each row of a row-major rows x cols matrix, and
   the histogram of int32 values. Storage f32, f16 or bf16; the result and the accumulation are
   f32 (the CPU forms accumulate in double and round once).

   Results: sum of nothing is 0, max of nothing -inf, min of nothing +inf, and those identities
   are written (n == 0 for a vector, cols == 0 for every row): a vector with n == 0 still
   launches one tiny kernel to write *out. NaN propagates through every op, as in PyTorch: a sum,
   max or min over values that hold a NaN is NaN (max/min do not use fmaxf's "a NaN loses").
   +-inf take part as numbers (inf + -inf is NaN). A max or min whose answer is zero may come
   back as -0 or +0 when both occur in the input.

   Determinism: no float atomics. Every version reduces in a fixed tree: each block writes its
   partial to the workspace and a second kernel reduces the partials in a fixed order, so a call
   gives the same bits on every run for the same pointers, sizes and device. (GPU and CPU sums
   differ by rounding: f32 accumulation against double.)

   Vector versions: INTERLEAVED, SEQUENTIAL (one element per thread, 256 per block, a shared
   memory tree with interleaved or sequential addressing), FIRST_ADD, WARP_SHUFFLE (two elements
   per thread, the first level added while loading; WARP_SHUFFLE ends with one warp's shuffles),
   WARP_REDUCE (each thread reduces many elements through 128-bit loads, a grid that fills the
   device, warp shuffles then one warp combines the block's warps). AUTO is WARP_REDUCE. The
   one-element-per-thread versions need ceil(n / 256) (ceil(n / 512)) blocks and return
   GPUOPS_ERR_UNSUPPORTED past the grid's limit of 2^31 - 1 blocks.
   Workspace: gpuops_reduce_workspace_size(n, algo) bytes of device memory, aligned to 4 bytes
   (at most 8 KB for AUTO and WARP_REDUCE, about n / 64 bytes for the tree versions; 0 for
   n == 0, where workspace may be NULL). It must not overlap x or out.

   Row versions: AUTO (short rows, up to 32 x 16 bytes, on a group of 1, 2, 4, 8, 16 or 32
   lanes, several rows per warp below 32; then one warp per row when cols <= 2048, else one
   block of 256 threads per row), WARP_REDUCE (one warp per row for any cols). A warp or block reads 128-bit vectors
   where a row's start allows (a scalar head aligns each row); a group reads them when x is
   16-byte aligned and cols is a multiple of 16 bytes, else element by element; any cols works. Other versions return
   GPUOPS_ERR_UNSUPPORTED. No workspace. AUTO on compute capability 9.0+ splits a few long rows
   (fewer than 2 per SM, 16384 columns and more) over a cluster of up to 16 blocks each, the
   slices' values combined through distributed shared memory in a fixed order; elsewhere a few
   very long rows leave most SMs idle (one block per row).

   Pointers must be aligned to their element size (GPUOPS_ERR_MISALIGNED); out may not overlap x
   (GPUOPS_ERR_INVALID_ARGUMENT). out is one float (vector) or rows floats (rows), in device
   memory for the GPU forms, host memory for the CPU forms. */
typedef enum gpuops_reduce_op { GPUOPS_REDUCE_SUM = 0, GPUOPS_REDUCE_MAX = 1, GPUOPS_REDUCE_MIN = 2 } gpuops_reduce_op;

/* Bytes of workspace the vector reduction with this algo needs for n elements (any dtype). */
GPUOPS_API size_t gpuops_reduce_workspace_size(int64_t n, gpuops_algo algo);

/* *out = op over x[0 .. n) */
GPUOPS_API gpuops_status gpuops_reduce_f32(float *out, const float *x, int64_t n, gpuops_reduce_op op, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_reduce_f16(float *out, const gpuops_f16 *x, int64_t n, gpuops_reduce_op op, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_reduce_bf16(float *out, const gpuops_bf16 *x, int64_t n, gpuops_reduce_op op, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);

/* out[r] = op over x[r * cols .. (r + 1) * cols), r < rows */
GPUOPS_API gpuops_status gpuops_reduce_rows_f32(float *out, const float *x, int64_t rows, int64_t cols, gpuops_reduce_op op, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_reduce_rows_f16(float *out, const gpuops_f16 *x, int64_t rows, int64_t cols, gpuops_reduce_op op, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_reduce_rows_bf16(float *out, const gpuops_bf16 *x, int64_t rows, int64_t cols, gpuops_reduce_op op, gpuops_algo algo, gpuops_stream stream);

/* Histogram: counts[b] = number of i < n with x[i] == b, for b < bins (1 <= bins <= 2^31 - 1).
   Values outside [0, bins) are ignored (not counted anywhere). counts are 64-bit, exact past
   2^31 inputs. The op zeroes counts itself first (a cudaMemsetAsync on the stream; n == 0 just
   zeroes them), so it does not accumulate across calls. counts and x must not overlap, x aligned
   to 4 bytes and counts to 8 (GPUOPS_ERR_MISALIGNED). Integer results: exact and deterministic.
   Versions:
     GLOBAL_ATOMIC  one 64-bit global atomicAdd per counted element; any bins.
     SHARED_ATOMIC  each block counts into a private histogram in shared memory (32-bit counters,
                    48 KB = 12288 bins), then adds its nonzero bins to counts with 64-bit global
                    atomics. More bins than 12288 are split into ranges of 12288 bins, one grid
                    row (blockIdx.y) per range, each reading all of x; past 65535 ranges,
                    GPUOPS_ERR_UNSUPPORTED.
     RUN_AGGREGATE  as SHARED_ATOMIC, but each thread counts repeats of the value it saw last in
                    a register and adds a run with one atomic, and for bins <= 1536 each warp has
                    its own sub-histogram: skewed data (90% one value) no longer serializes on one
                    shared address. Past 8 ranges (bins > 98304) it counts runs into counts with
                    global atomics instead of reading x once per range.
   AUTO is RUN_AGGREGATE. */
GPUOPS_API gpuops_status gpuops_histogram_i32(int64_t *counts, const int32_t *x, int64_t n, int32_t bins, gpuops_algo algo, gpuops_stream stream);

/* CPU implementations (host pointers): sums in double rounded once to f32, the same NaN and
   empty-input rules, the same argument checks (no workspace). */
GPUOPS_API gpuops_status gpuops_cpu_reduce_f32(float *out, const float *x, int64_t n, gpuops_reduce_op op);
GPUOPS_API gpuops_status gpuops_cpu_reduce_f16(float *out, const gpuops_f16 *x, int64_t n, gpuops_reduce_op op);
GPUOPS_API gpuops_status gpuops_cpu_reduce_bf16(float *out, const gpuops_bf16 *x, int64_t n, gpuops_reduce_op op);
GPUOPS_API gpuops_status gpuops_cpu_reduce_rows_f32(float *out, const float *x, int64_t rows, int64_t cols, gpuops_reduce_op op);
GPUOPS_API gpuops_status gpuops_cpu_reduce_rows_f16(float *out, const gpuops_f16 *x, int64_t rows, int64_t cols, gpuops_reduce_op op);
GPUOPS_API gpuops_status gpuops_cpu_reduce_rows_bf16(float *out, const gpuops_bf16 *x, int64_t rows, int64_t cols, gpuops_reduce_op op);
GPUOPS_API gpuops_status gpuops_cpu_histogram_i32(int64_t *counts, const int32_t *x, int64_t n, int32_t bins);



/* ==== 4. Prefix scan ==================================================================== */
/* Prefix sums over n elements: inclusive y[i] = x[0] + ... + x[i], exclusive y[i] = x[0] + ... +
   x[i-1] (y[0] = 0). Storage f32, i32 or i64; i32 and i64 add modulo 2^32 and 2^64 (two's
   complement wrap, no overflow trap), so their results are exact and equal on every version and
   on the CPU. f32 accumulates in f32 on the GPU: the result depends on the order of the additions,
   which each version fixes (for a given version, n, offsets of x and y modulo 16 bytes and device the
   result is the same bits on every run, the look-back scan included: its tile size follows n and
   the SM count); error against the exact sum is
   a few f32 roundings of the running sum of |x|. The CPU forms accumulate f32 in double. NaN and
   inf propagate to every later element as IEEE addition says.
   Versions (the learning path, gpuops_cuda.cuh section 4):
     HILLIS_STEELE       scan-then-propagate, 3 kernels: each 512-element tile scanned by the
                         Hillis-Steele log-step scan in shared memory (log2 512 = 9 steps of n
                         adds each) and its total saved; one block scans the totals; a third
                         kernel adds each tile's offset. Moves 4n elements.
     BLELLOCH            the same three kernels, the tile scan being Blelloch's work-efficient
                         up-sweep / down-sweep on 1024-element tiles, shared indices padded
                         against bank conflicts. Moves 4n elements.
     REDUCE_THEN_SCAN    3 kernels: each block sums its range of tiles; one block scans the <= 1024
                         block sums; each block scans its tiles (warp shuffles, several items per
                         thread, 128-bit accesses) starting from its block's offset. Moves 3n.
     DECOUPLED_LOOKBACK  one pass: each tile publishes its aggregate, looks back over its
                         predecessors' published values for its prefix, publishes its inclusive
                         prefix and writes its outputs. Moves 2n, like a copy. Tiles of 96 KB, or
                         16 KB where fewer than half the SMs would get a large one.
   AUTO is DECOUPLED_LOOKBACK. Every version takes any alignment of x and y (to their element
   size); 128-bit accesses are used where x and y sit at the same offset modulo 16 bytes, else
   element accesses. y == x (in place) is allowed; any other overlap is GPUOPS_ERR_INVALID_ARGUMENT.
   Workspace: gpuops_scan_workspace_size(n, algo) bytes of device memory, 16-byte aligned
   (GPUOPS_ERR_MISALIGNED otherwise), not overlapping x or y; the size covers every dtype. The
   op initializes what it uses on each call (DECOUPLED_LOOKBACK: one cudaMemsetAsync of its tile
   states and tile counter), so the workspace holds no state between calls, but two calls must
   not share one workspace at the same time (other streams). Sizes past 2^31 elements work. */
typedef enum gpuops_scan_kind { GPUOPS_SCAN_INCLUSIVE = 0, GPUOPS_SCAN_EXCLUSIVE = 1 } gpuops_scan_kind;

/* Bytes of workspace that gpuops_scan_<dt>(n, algo) needs for any dtype: 0 for n <= 0, a few
   bytes per 512 to 2048 elements otherwise (about 0.3% of an f32 input for DECOUPLED_LOOKBACK,
   8 KB at most for REDUCE_THEN_SCAN), 0 for an algo the scan does not have. */
GPUOPS_API size_t gpuops_scan_workspace_size(int64_t n, gpuops_algo algo);

/* Private: the tile sizes gpuops_scan_workspace_size() assumes (gpuops_cuda.cuh section 4 uses
   them and checks that its kernels agree). */
#define GPUOPS__SCAN_LB_MIN_TILE 2048    /* smallest look-back / reduce-then-scan tile (2048 of 8 bytes) */
#define GPUOPS__SCAN_LB_HEADER 256       /* tile counter, then the tile states                      */
#define GPUOPS__SCAN_LB_STATE_BYTES 24   /* per tile, the most any dtype uses (i64: 8 + 8 + 4)       */
#define GPUOPS__SCAN_RTS_MAX_BLOCKS 1024 /* reduce-then-scan: block sums, one per block              */
#define GPUOPS__SCAN_HS_TILE 512         /* Hillis-Steele tile                                       */
#define GPUOPS__SCAN_BL_TILE 1024        /* Blelloch tile                                            */

GPUOPS_API gpuops_status gpuops_scan_f32(float *y, const float *x, int64_t n, gpuops_scan_kind kind, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_scan_i32(int32_t *y, const int32_t *x, int64_t n, gpuops_scan_kind kind, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_scan_i64(int64_t *y, const int64_t *x, int64_t n, gpuops_scan_kind kind, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);

/* Segmented scan over fixed-length rows: x and y are row-major [rows, cols] and each row is
   scanned on its own (the same kinds, arithmetic and rules as above; in place allowed). No
   workspace. One version: AUTO (any other valid algo is GPUOPS_ERR_UNSUPPORTED). Rows of up to
   2048 columns go to warps, each warp taking whole rows worth about 1024 elements (one row of 1000,
   or 128 rows of 8) in one segmented warp scan; longer rows get a block of 256 threads each, or,
   a few of them (fewer than 4 per SM, 16384 columns and more) on compute capability 9.0+, a
   cluster of up to 16 blocks each: every block sums its slice, takes the sum of the slices before
   it as its carry (through distributed shared memory) and scans its slice. All walk their
   elements in chunks, carrying the running sum. rows * cols must fit int64_t. f32 sums are in f32,
   in an order fixed by rows and cols (and the device's SM count for split rows: the same bits
   every run). */
GPUOPS_API gpuops_status gpuops_scan_rows_f32(float *y, const float *x, int64_t rows, int64_t cols, gpuops_scan_kind kind, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_scan_rows_i32(int32_t *y, const int32_t *x, int64_t rows, int64_t cols, gpuops_scan_kind kind, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_scan_rows_i64(int64_t *y, const int64_t *x, int64_t rows, int64_t cols, gpuops_scan_kind kind, gpuops_algo algo, gpuops_stream stream);

/* CPU implementations (host pointers; f32 accumulated in double and rounded once per element;
   integers wrap as on the GPU). y == x allowed. */
GPUOPS_API gpuops_status gpuops_cpu_scan_f32(float *y, const float *x, int64_t n, gpuops_scan_kind kind);
GPUOPS_API gpuops_status gpuops_cpu_scan_i32(int32_t *y, const int32_t *x, int64_t n, gpuops_scan_kind kind);
GPUOPS_API gpuops_status gpuops_cpu_scan_i64(int64_t *y, const int64_t *x, int64_t n, gpuops_scan_kind kind);
GPUOPS_API gpuops_status gpuops_cpu_scan_rows_f32(float *y, const float *x, int64_t rows, int64_t cols, gpuops_scan_kind kind);
GPUOPS_API gpuops_status gpuops_cpu_scan_rows_i32(int32_t *y, const int32_t *x, int64_t rows, int64_t cols, gpuops_scan_kind kind);
GPUOPS_API gpuops_status gpuops_cpu_scan_rows_i64(int64_t *y, const int64_t *x, int64_t rows, int64_t cols, gpuops_scan_kind kind);



/* ==== 5. Softmax ======================================================================== */
/* Softmax along the rows of a row-major rows x cols matrix (each row independent, cols
   contiguous). Storage f32, f16 or bf16; arithmetic in f32 (the CPU forms in double).
     softmax      y_ij = exp(x_ij - m_i) / sum_k exp(x_ik - m_i),   m_i = max_k x_ik
     log_softmax  y_ij = (x_ij - m_i) - log(sum_k exp(x_ik - m_i))
     backward     dx_ij = y_ij * (dy_ij - sum_k dy_ik y_ik)          (y: the forward's output)
   Special values, per row: -inf entries (masks) get probability 0 (log_softmax -inf); a row of
   only -inf gives all zeros from softmax (not NaN) and all -inf from log_softmax (PyTorch gives
   NaN for both; we choose the value a masked attention row wants). A NaN anywhere in a row, or a
   +inf (inf - inf), makes the whole row NaN, as in PyTorch. Subtracting the row maximum first
   keeps every exponent <= 0: no overflow for any finite input (1e4 and -1e4 are fine).
   Versions (gpuops_algo):
     THREE_PASS  a block per row: pass 1 the maximum, pass 2 the sum of exponentials, pass 3 the
                 outputs; x is read three times (the later reads may hit L2).
     ONLINE      a block per row: one pass keeps a running (max, sum), rescaling the sum when the
                 max grows (gpuops::online_softmax in gpuops_cuda.cuh), then the outputs; two reads.
     AUTO        the fastest for the shape: the row is read once into registers and written once
                 (rows of up to 16 x 16 bytes on a group of 1 to 16 lanes, several rows per
                 warp; a warp per row up to 1024 columns, a block per row up to 8192, on compute
                 capability 9.0+ a cluster of up to 8 blocks sharing (max, sum) through
                 distributed shared memory up to 65536, else a block of 1024 threads up to 32768;
                 the backward holds dy and y, so half those lengths, but 16-bit rows to 1024
                 columns on a warp where there are two rows a SM); longer rows run ONLINE,
                 except a few of them (fewer than 2 per SM) on compute capability 9.0+: each row
                 streamed by a cluster of up to 16 blocks, ONLINE's two passes over a slice each,
                 the slices' (max, sum) or dot shared through distributed shared memory.
     The backward has no maximum to find: THREE_PASS and ONLINE both run the streaming two-pass
     kernel (the dot product, then dx); AUTO keeps the rows on chip as above.
   Exponentials are exp2f((x - m) * log2(e)) with x - m formed first: relative error about
   2 ulp + |x - m| * 1e-7 per exponential, far under 1e-5 for the outputs that are not
   negligible (the f32 tests check 3e-5). Any row length from 1 works, and any number of rows;
   no workspace is needed. Pointers must be aligned to their element size (GPUOPS_ERR_MISALIGNED
   otherwise); 128-bit accesses are used when every pointer is 16-byte aligned and cols is a
   multiple of 16 / sizeof(T), element accesses otherwise (the result is the same). The output
   may be the same array as an input (in place); any other overlap is
   GPUOPS_ERR_INVALID_ARGUMENT. rows * cols must fit int64_t. */
/* The registry (private): X(OP, name, INPUTS) for each op; it generates the internal op enum, the
   C entry points gpuops_[cpu_]<name>_<dtype> and the tests' table (tests/softmax_ops.h). INPUTS:
   1 for (y, x), 2 for the backward's (dx, dy, y). */
#define GPUOPS__SOFTMAX_OPS(X) X(FWD, softmax_fwd, 1) X(LOG_FWD, log_softmax_fwd, 1) X(BWD, softmax_bwd, 2)

GPUOPS_API gpuops_status gpuops_softmax_fwd_f32(float *y, const float *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_softmax_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_softmax_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_log_softmax_fwd_f32(float *y, const float *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_log_softmax_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_log_softmax_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_softmax_bwd_f32(float *dx, const float *dy, const float *y, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_softmax_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *y, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_softmax_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *y, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);

/* CPU implementations (host pointers): double inside, one rounding to the storage type. */
GPUOPS_API gpuops_status gpuops_cpu_softmax_fwd_f32(float *y, const float *x, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_softmax_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_softmax_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_log_softmax_fwd_f32(float *y, const float *x, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_log_softmax_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_log_softmax_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_softmax_bwd_f32(float *dx, const float *dy, const float *y, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_softmax_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const gpuops_f16 *y, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_softmax_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const gpuops_bf16 *y, int64_t rows, int64_t cols);



/* ==== 6. Transpose ======================================================================== */
/* y = x^T. x is rows x cols, row-major with row pitch ldx (element (r, c) at x[r * ldx + c]); y is
   cols x rows, row-major with row pitch ldy: y[c * ldy + r] = x[r * ldx + c]. The plain forms
   have ldx = cols and ldy = rows; the _ld forms take them (ldx >= cols, ldy >= rows, else
   GPUOPS_ERR_INVALID_ARGUMENT): a block of one larger matrix into a block of another.
   A transpose is a copy: every element's bits arrive unchanged (NaN payloads, -0, subnormals).
   Storage f32, f16, bf16, i8 and i64 (any other 1-, 4- or 8-byte type can use i8, f32 or i64).
   Versions:
     NAIVE          one element per thread; reads coalesced, writes strided (a warp's 32 stores
                    land in 32 different rows of y).
     SHARED_TILED   32 x 32 tiles staged through shared memory: both sides coalesced; the column
                    read from shared memory is a 32-way bank conflict.
     SHARED_PADDED  the same, the tile padded by one bank word per row: no bank conflicts.
     VECTORIZED     64 x 64 tiles, every global load and store 16 bytes (4 f32, 8 f16/bf16, 16 i8,
                    2 i64), an XOR-swizzled shared tile, one block per tile. Edge tiles are
                    predicated (element-wise where a 16-byte piece crosses the matrix edge). Any
                    pointers and pitches: where x, y or a row pitch is not a whole number of
                    16-byte pieces (4095 x 4097 f32, offset views), the 16-byte accesses follow
                    memory's pieces and the kernel realigns them in registers (x side) and widens
                    its tile by a few rows (y side). With a few rows (or columns: up to 16 and
                    64 bytes; up to 64 and 256 bytes where a pitch or pointer is not whole
                    pieces) and y (or x) contiguous, an interleave instead of tiles: a block
                    stages a segment of the long side in shared memory and moves the contiguous
                    side 16 bytes at a time.
     AUTO           a device-to-device copy when the transpose is one (one row or one column with
                    unit pitch), else SHARED_PADDED up to 2^18 elements (more blocks: the time of
                    a small transpose is the latency of its loads), else VECTORIZED.
   Every pointer must be aligned to its element size (GPUOPS_ERR_MISALIGNED). Out of place only:
   the address ranges of x and y (first to last element) must not overlap, y == x included
   (GPUOPS_ERR_INVALID_ARGUMENT). Sizes past 2^31 elements work. The gpuops_cpu_* forms take host
   pointers (a cache-blocked loop). */
GPUOPS_API gpuops_status gpuops_transpose_f32(float *y, const float *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_transpose_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_transpose_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_transpose_i8(int8_t *y, const int8_t *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_transpose_i64(int64_t *y, const int64_t *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream);

GPUOPS_API gpuops_status gpuops_transpose_ld_f32(float *y, const float *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_transpose_ld_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_transpose_ld_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_transpose_ld_i8(int8_t *y, const int8_t *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_transpose_ld_i64(int64_t *y, const int64_t *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy, gpuops_algo algo, gpuops_stream stream);

GPUOPS_API gpuops_status gpuops_cpu_transpose_f32(float *y, const float *x, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_transpose_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_transpose_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_transpose_i8(int8_t *y, const int8_t *x, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_transpose_i64(int64_t *y, const int64_t *x, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_transpose_ld_f32(float *y, const float *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy);
GPUOPS_API gpuops_status gpuops_cpu_transpose_ld_f16(gpuops_f16 *y, const gpuops_f16 *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy);
GPUOPS_API gpuops_status gpuops_cpu_transpose_ld_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy);
GPUOPS_API gpuops_status gpuops_cpu_transpose_ld_i8(int8_t *y, const int8_t *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy);
GPUOPS_API gpuops_status gpuops_cpu_transpose_ld_i64(int64_t *y, const int64_t *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy);



/* ==== 7. Matrix multiply ================================================================== */
/* Matrix multiply in f32 on CUDA cores (FFMA; no tensor cores, no TF32), row-major:
     C = alpha * op(A) @ op(B) + beta * C,   op(X) = X (GPUOPS_OP_N) or X^T (GPUOPS_OP_T).
   C is m x n with row stride ldc >= n. op(A) is m x k: A is stored m x k (lda >= k) for OP_N, or
   k x m (lda >= m) for OP_T; likewise op(B) is k x n: B stored k x n (ldb >= n) or n x k (ldb >= k).
   Every leading dimension must also be >= 1. A leading dimension smaller than its row, a
   negative size, a bad op or algo value, or C overlapping A or B => GPUOPS_ERR_INVALID_ARGUMENT
   (nothing written); pointers must be aligned to 4 bytes (else GPUOPS_ERR_MISALIGNED).
   m = 0 or n = 0: nothing is done. k = 0: C = beta * C. beta = 0: C is only written, never read
   (it may hold NaN); otherwise NaN and inf propagate as in IEEE arithmetic. Accumulation in f32;
   the error of each element is a few ulp times sum_p |A(i,p) B(p,j)| (growing like sqrt(k)).
   Versions (gpuops_algo; each is the learning path's step, see examples/09_matmul.cu):
     NAIVE         one thread per C element, threadIdx.x along m: uncoalesced loads and stores.
     COALESCED     one thread per C element, threadIdx.x along n: a warp reads B and writes C
                   contiguously.
     SHARED_TILED  32 x 32 tiles of A and B staged in shared memory, one C element per thread.
     REGISTER_1D   64 x 64 block tiles, each thread a column of 8 C elements in registers.
     REGISTER_2D   128 x 128 block tiles, each thread an 8 x 8 block of C in registers.
     VECTORIZED    REGISTER_2D with 128-bit global loads where the layout allows and the A tile
                   stored transposed so the inner loop reads float4 from shared memory.
     WARP_TILED    block tile -> warp tile -> 8 x 16 thread tile (4 x 4 sub-tiles), multi-stage
                   shared memory filled by cp.async (sm_80+; synchronous copies before), register
                   fragments double-buffered, every inner-loop shared read 128-bit and
                   conflict-free. Tile shape (128 x 256, 128 x 128, 64 x 64) by problem size.
                   Where 64 x 64 tiles leave the device's resident blocks idle (e.g. 64 x 4096
                   x 4096, 512^3), k is split over a cluster of up to 8 blocks per tile
                   (compute capability 9.0+), their sums added in a fixed order through
                   distributed shared memory (the same bits every run).
     AUTO          WARP_TILED; m = 1 or n = 1 (a matrix-vector product) runs a dedicated GEMV kernel
                   (from 2^22 elements with the matrix contiguous along the outputs, the few-rows
                   kernel below with one row), and 2 <= min(m, n) <= 32 (a few rows or columns of
                   C) a GEMV generalised to groups of up to 16 rows, each element of the large
                   operand read once per group, where those few rows run along k in memory (or,
                   up to 16 of them, where the large operand runs along the outputs); the other
                   few-row shapes take WARP_TILED.
                   Compile with GPUOPS_MATMUL_WT_CONFIG=1, 2 or 3 to force WARP_TILED's tile
                   (128 x 128, 128 x 256, 64 x 64; 0, the default, chooses by size).
   Every version handles any m, n, k, leading dimension and operand layout: tails are predicated
   inside the kernels; 128-bit accesses are used only where the pointer and the leading dimension
   allow 16-byte alignment, other cases use the scalar form of the same kernel. */
typedef enum gpuops_op { GPUOPS_OP_N = 0, GPUOPS_OP_T = 1 } gpuops_op;

GPUOPS_API gpuops_status gpuops_matmul_f32(float *c, const float *a, const float *b, int64_t m, int64_t n, int64_t k,
                                           int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta,
                                           gpuops_op op_a, gpuops_op op_b, gpuops_algo algo, gpuops_stream stream);

/* CPU reference: the same arguments and checks, host memory, each element accumulated in double
   and rounded once. The oracle of the tests (slow: about 1 GFLOP/s). */
GPUOPS_API gpuops_status gpuops_cpu_matmul_f32(float *c, const float *a, const float *b, int64_t m, int64_t n, int64_t k,
                                               int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta,
                                               gpuops_op op_a, gpuops_op op_b);

/* CPU baselines of the learning path: f32 accumulation (so their results differ from the
   reference by the usual f32 rounding), timed by examples/09_matmul.cu in GFLOP/s.
     GPUOPS_CPU_GEMM_NAIVE    the textbook i-j-k triple loop: one dot product per element, the
                              inner loop strides down a column of op(B) (a cache miss per step).
     GPUOPS_CPU_GEMM_BLOCKED  cache-blocked: 64 x 64 x 64 blocks of C, A and B, i-k-j inside a
                              block, so each block of op(B) is reused from cache.
     GPUOPS_CPU_GEMM_SIMD     blocked, with the op(B) panel packed into a contiguous buffer and C
                              computed in 4 x 16 register blocks whose unit-stride inner loops the
                              compiler vectorizes (restrict, constant trip counts); row blocks split
                              across threads by OpenMP when the program is compiled with it
                              (-fopenmp / -Xcompiler -fopenmp).
   Same arguments and checks as gpuops_cpu_matmul_f32; a bad kind => GPUOPS_ERR_INVALID_ARGUMENT. */
typedef enum gpuops_cpu_gemm_kind {
  GPUOPS_CPU_GEMM_NAIVE = 0,
  GPUOPS_CPU_GEMM_BLOCKED = 1,
  GPUOPS_CPU_GEMM_SIMD = 2
} gpuops_cpu_gemm_kind;

GPUOPS_API gpuops_status gpuops_cpu_matmul_baseline_f32(float *c, const float *a, const float *b, int64_t m, int64_t n,
                                                        int64_t k, int64_t lda, int64_t ldb, int64_t ldc, float alpha,
                                                        float beta, gpuops_op op_a, gpuops_op op_b,
                                                        gpuops_cpu_gemm_kind kind);



/* ==== 8. Normalization and rotary embeddings ================================================ */
/* Normalization along the rows of a row-major rows x cols matrix (each row independent, cols
   contiguous), forward and backward, then rotary position embeddings (below). Storage f32, f16
   or bf16: x, y, residual, h, gamma, beta and the gradients share one type; the statistics mean
   and rstd are f32 arrays of `rows` values; arithmetic in f32 (the CPU forms in double).
     layernorm       y = (x - mean) * rstd * gamma + beta,   mean = sum_j x_j / cols,
                     rstd = 1 / sqrt(sum_j (x_j - mean)^2 / cols + eps)   (biased variance, as PyTorch)
     rmsnorm         y = x * rstd * gamma,                    rstd = 1 / sqrt(sum_j x_j^2 / cols + eps)
     add_layernorm,  h = x + residual (rounded to the storage type), y = norm(h): h and y both
     add_rmsnorm     written in one pass (the residual stream of a pre-norm transformer block)
     layernorm_gelu  y = gelu(layernorm(x)) (gpuops_gelu_approx: erf or tanh form, section 1)
   gamma and beta may be NULL (a scale of 1, a shift of 0); mean and rstd may be NULL (not written).
   Backward, with xhat = (x - mean) * rstd (rmsnorm: x * rstd) and g = dy * gamma:
     layernorm       dx = rstd * (g - mean_j(g) - xhat * mean_j(g xhat)),
                     dgamma = sum over rows of dy * xhat,   dbeta = sum over rows of dy
     rmsnorm         dx = rstd * (g - xhat * mean_j(g xhat)),   dgamma = sum over rows of dy * xhat
     layernorm_gelu  the layernorm backward of dz = dy * gelu'(z), z = xhat * gamma + beta recomputed
   mean and rstd are the forward's (required); dgamma and dbeta may be NULL (not computed). They
   are reduced across rows without atomics: each group of threads sums its rows in registers, the
   groups' f32 partial sums go to the caller's workspace, and a second kernel adds them in a fixed
   order: the same bits on every run on one device (the number of partials follows the device's
   size). Workspace: gpuops_norm_bwd_workspace_size(rows, cols) bytes (at most about 34 MB),
   16-byte aligned, overlapping no other array; not looked at (may be NULL) when neither dgamma nor
   dbeta is asked for. rows == 0 with cols > 0 sets dgamma and dbeta to 0.
   Statistics: the shifted-data two-pass algorithm. Each row is shifted by its first element first
   (x - x_0 is exact for values near x_0, so a row of mean 1e4 and standard deviation 1e-3 keeps its
   digits: E[x^2] - E[x]^2 would subtract two numbers of size mean^2 and lose them all). ROW_REGISTERS
   and AUTO hold the row in registers, so each warp sums its elements to their mean and then sums
   their squared deviations from it (two passes over registers, no memory traffic, two shuffle
   reductions), the warps of a row add their squared deviations about the row's mean (m2 = sum of
   m2_w + n_w (mean_w - mean)^2), and the blocks of a cluster merge by Chan's formula
   (gpuops::welford::merge): the two-pass algorithm's accuracy. 16-bit inputs subtract shift + mean
   in one step (its f32 rounding is far below their own spacing); f32 inputs subtract the shift, then
   the mean.
   The streaming versions (WARP_PER_ROW, ONLINE) cannot keep the row, so they use Welford's one-pass
   update, then read the row again for the outputs. rmsnorm's sum of squares has no cancellation
   (ROW_REGISTERS and AUTO take it in one pass over the registers, without the mean).
   Versions (gpuops_algo; examples/10_layernorm.cu is the learning path's step):
     BLOCK_PER_ROW  a block of 256 threads per row, element accesses, shared-memory tree reductions;
                    x read three times (the mean, the squared deviations, the outputs).
     WARP_PER_ROW   a warp per row (8 rows per block), element accesses, Welford updates merged by
                    shuffles (no shared memory, no barrier); x read twice.
     ONLINE         streaming: a block per row (1024 threads from 16384 columns), 128-bit accesses,
                    Welford per vector; x read twice. Any row length.
     ROW_REGISTERS  the row read once into registers with 128-bit accesses and written once: a warp
                    per row up to 1024 (f32) or 2048 (16-bit) columns, 128 threads up to 4096 or
                    8192, a block of 256 threads up to 8192 or 16384, on compute capability 9.0+ a cluster of up to 8 such blocks
                    sharing their statistics through distributed shared memory up to 65536 or
                    131072, else a block of 1024 threads up to 16384 or 32768. It needs 128-bit
                    accesses (cols a multiple of 16 / sizeof(T), every array 16-byte aligned):
                    GPUOPS_ERR_MISALIGNED where only the pointers stand in the way, else (and for
                    longer rows) GPUOPS_ERR_UNSUPPORTED.
     UNFUSED        (add_* and layernorm_gelu) the separate kernels a two-library program runs:
                    h = x + residual, then the norm of h; the layernorm, then GELU in place. The
                    layernorm_gelu backward writes dz = dy * gelu'(z) into dx (z from x, mean and
                    rstd), then runs the layernorm backward on it in place: dx may not be x there.
     AUTO           ROW_REGISTERS where it can run; in the forward, rows that are not whole 16-byte
                    vectors but whose x, residual, h and y share one offset modulo 16 (any matrix
                    with one pitch) the same kernels over row views (the interior 128-bit, each
                    row's two edge vectors element by element, gamma and beta staged in shared
                    memory) up to 16384 (f32) or 32768 (16-bit) columns; in the backward the same
                    where dy, x and dx share one offset, up to 8189 (f32) or 8185 (16-bit)
                    columns, without GELU up to 16381 or 16377 where the device has the shared
                    memory (the partials of dgamma and dbeta kept by column in shared memory, 16 or
                    12 bytes a column: on an H100 about 14500 f32 columns); else ONLINE.
   The backward runs AUTO, ROW_REGISTERS (dy and x in registers, 8 elements a thread: a warp per row
   up to 256 columns, 64 to 1024 threads per row up to 8192, clusters of up to 8 blocks of 1024 up
   to 65536; the same refusals), ONLINE (dy and x read twice for dx; dgamma and dbeta from a
   column-reduction kernel that reads them once more) and UNFUSED (layernorm_gelu); the others
   return GPUOPS_ERR_UNSUPPORTED.
   Special values: a NaN or infinity in a row makes that row's outputs NaN (as in PyTorch); a
   constant row, and cols == 1, give xhat = 0 (y = beta). eps must be finite and > 0, and a
   gelu_approx one of its two values (else GPUOPS_ERR_INVALID_ARGUMENT).
   Alignment and overlap: pointers aligned to their element size (mean and rstd to 4 bytes; else
   GPUOPS_ERR_MISALIGNED); 128-bit accesses when every array starts 16-byte aligned and cols is a
   multiple of 16 / sizeof(T), element accesses otherwise (the same results). An output matrix may
   be the same array as an input matrix (in place: y == x or residual, h == x or residual, dx == dy
   or x; UNFUSED backward excepted); any other overlap is GPUOPS_ERR_INVALID_ARGUMENT. Any rows
   and cols >= 0 with rows * cols in int64_t (sizes past 2^31 elements work); rows == 0 or
   cols == 0 does nothing. */
/* The registry (private): X(OP, name, RMS, RES, GELU, BWD) for each op: rmsnorm, takes a
   residual, applies GELU, is a backward. It generates the internal op enum, the C entry points
   gpuops_[cpu_]<name>_<dtype> (with the parameter list of OP, section I.8) and the tests' table
   (tests/norm_ops.h). */
#define GPUOPS__NORM_OPS(X)                                   \
  X(LN_FWD, layernorm_fwd, 0, 0, 0, 0)                        \
  X(RMS_FWD, rmsnorm_fwd, 1, 0, 0, 0)                         \
  X(ADD_LN_FWD, add_layernorm_fwd, 0, 1, 0, 0)                \
  X(ADD_RMS_FWD, add_rmsnorm_fwd, 1, 1, 0, 0)                 \
  X(LN_GELU_FWD, layernorm_gelu_fwd, 0, 0, 1, 0)              \
  X(LN_BWD, layernorm_bwd, 0, 0, 0, 1)                        \
  X(RMS_BWD, rmsnorm_bwd, 1, 0, 0, 1)                         \
  X(LN_GELU_BWD, layernorm_gelu_bwd, 0, 0, 1, 1)

/* Bytes of workspace any norm backward needs for rows x cols (any dtype): 0 when rows or cols is 0. */
GPUOPS_API size_t gpuops_norm_bwd_workspace_size(int64_t rows, int64_t cols);

GPUOPS_API gpuops_status gpuops_layernorm_fwd_f32(float *y, float *mean, float *rstd, const float *x, const float *gamma, const float *beta, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_layernorm_fwd_f16(gpuops_f16 *y, float *mean, float *rstd, const gpuops_f16 *x, const gpuops_f16 *gamma, const gpuops_f16 *beta, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_layernorm_fwd_bf16(gpuops_bf16 *y, float *mean, float *rstd, const gpuops_bf16 *x, const gpuops_bf16 *gamma, const gpuops_bf16 *beta, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_rmsnorm_fwd_f32(float *y, float *rstd, const float *x, const float *gamma, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_rmsnorm_fwd_f16(gpuops_f16 *y, float *rstd, const gpuops_f16 *x, const gpuops_f16 *gamma, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_rmsnorm_fwd_bf16(gpuops_bf16 *y, float *rstd, const gpuops_bf16 *x, const gpuops_bf16 *gamma, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_layernorm_fwd_f32(float *y, float *h, float *mean, float *rstd, const float *x, const float *residual, const float *gamma, const float *beta, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_layernorm_fwd_f16(gpuops_f16 *y, gpuops_f16 *h, float *mean, float *rstd, const gpuops_f16 *x, const gpuops_f16 *residual, const gpuops_f16 *gamma, const gpuops_f16 *beta, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_layernorm_fwd_bf16(gpuops_bf16 *y, gpuops_bf16 *h, float *mean, float *rstd, const gpuops_bf16 *x, const gpuops_bf16 *residual, const gpuops_bf16 *gamma, const gpuops_bf16 *beta, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_rmsnorm_fwd_f32(float *y, float *h, float *rstd, const float *x, const float *residual, const float *gamma, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_rmsnorm_fwd_f16(gpuops_f16 *y, gpuops_f16 *h, float *rstd, const gpuops_f16 *x, const gpuops_f16 *residual, const gpuops_f16 *gamma, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_add_rmsnorm_fwd_bf16(gpuops_bf16 *y, gpuops_bf16 *h, float *rstd, const gpuops_bf16 *x, const gpuops_bf16 *residual, const gpuops_bf16 *gamma, int64_t rows, int64_t cols, float eps, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_layernorm_gelu_fwd_f32(float *y, float *mean, float *rstd, const float *x, const float *gamma, const float *beta, int64_t rows, int64_t cols, float eps, gpuops_gelu_approx approx, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_layernorm_gelu_fwd_f16(gpuops_f16 *y, float *mean, float *rstd, const gpuops_f16 *x, const gpuops_f16 *gamma, const gpuops_f16 *beta, int64_t rows, int64_t cols, float eps, gpuops_gelu_approx approx, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_layernorm_gelu_fwd_bf16(gpuops_bf16 *y, float *mean, float *rstd, const gpuops_bf16 *x, const gpuops_bf16 *gamma, const gpuops_bf16 *beta, int64_t rows, int64_t cols, float eps, gpuops_gelu_approx approx, gpuops_algo algo, gpuops_stream stream);

GPUOPS_API gpuops_status gpuops_layernorm_bwd_f32(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x, const float *mean, const float *rstd, const float *gamma, int64_t rows, int64_t cols, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_layernorm_bwd_f16(gpuops_f16 *dx, gpuops_f16 *dgamma, gpuops_f16 *dbeta, const gpuops_f16 *dy, const gpuops_f16 *x, const float *mean, const float *rstd, const gpuops_f16 *gamma, int64_t rows, int64_t cols, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_layernorm_bwd_bf16(gpuops_bf16 *dx, gpuops_bf16 *dgamma, gpuops_bf16 *dbeta, const gpuops_bf16 *dy, const gpuops_bf16 *x, const float *mean, const float *rstd, const gpuops_bf16 *gamma, int64_t rows, int64_t cols, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_rmsnorm_bwd_f32(float *dx, float *dgamma, const float *dy, const float *x, const float *rstd, const float *gamma, int64_t rows, int64_t cols, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_rmsnorm_bwd_f16(gpuops_f16 *dx, gpuops_f16 *dgamma, const gpuops_f16 *dy, const gpuops_f16 *x, const float *rstd, const gpuops_f16 *gamma, int64_t rows, int64_t cols, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_rmsnorm_bwd_bf16(gpuops_bf16 *dx, gpuops_bf16 *dgamma, const gpuops_bf16 *dy, const gpuops_bf16 *x, const float *rstd, const gpuops_bf16 *gamma, int64_t rows, int64_t cols, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_layernorm_gelu_bwd_f32(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x, const float *mean, const float *rstd, const float *gamma, const float *beta, int64_t rows, int64_t cols, gpuops_gelu_approx approx, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_layernorm_gelu_bwd_f16(gpuops_f16 *dx, gpuops_f16 *dgamma, gpuops_f16 *dbeta, const gpuops_f16 *dy, const gpuops_f16 *x, const float *mean, const float *rstd, const gpuops_f16 *gamma, const gpuops_f16 *beta, int64_t rows, int64_t cols, gpuops_gelu_approx approx, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_layernorm_gelu_bwd_bf16(gpuops_bf16 *dx, gpuops_bf16 *dgamma, gpuops_bf16 *dbeta, const gpuops_bf16 *dy, const gpuops_bf16 *x, const float *mean, const float *rstd, const gpuops_bf16 *gamma, const gpuops_bf16 *beta, int64_t rows, int64_t cols, gpuops_gelu_approx approx, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);

/* CPU implementations (host pointers): the same arguments and checks without workspace, algo
   and stream; double inside (the statistics by the two-pass formulas, dgamma and dbeta summed
   over rows in double), one rounding to the storage type (mean and rstd to f32). */
GPUOPS_API gpuops_status gpuops_cpu_layernorm_fwd_f32(float *y, float *mean, float *rstd, const float *x, const float *gamma, const float *beta, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_layernorm_fwd_f16(gpuops_f16 *y, float *mean, float *rstd, const gpuops_f16 *x, const gpuops_f16 *gamma, const gpuops_f16 *beta, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_layernorm_fwd_bf16(gpuops_bf16 *y, float *mean, float *rstd, const gpuops_bf16 *x, const gpuops_bf16 *gamma, const gpuops_bf16 *beta, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_rmsnorm_fwd_f32(float *y, float *rstd, const float *x, const float *gamma, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_rmsnorm_fwd_f16(gpuops_f16 *y, float *rstd, const gpuops_f16 *x, const gpuops_f16 *gamma, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_rmsnorm_fwd_bf16(gpuops_bf16 *y, float *rstd, const gpuops_bf16 *x, const gpuops_bf16 *gamma, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_add_layernorm_fwd_f32(float *y, float *h, float *mean, float *rstd, const float *x, const float *residual, const float *gamma, const float *beta, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_add_layernorm_fwd_f16(gpuops_f16 *y, gpuops_f16 *h, float *mean, float *rstd, const gpuops_f16 *x, const gpuops_f16 *residual, const gpuops_f16 *gamma, const gpuops_f16 *beta, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_add_layernorm_fwd_bf16(gpuops_bf16 *y, gpuops_bf16 *h, float *mean, float *rstd, const gpuops_bf16 *x, const gpuops_bf16 *residual, const gpuops_bf16 *gamma, const gpuops_bf16 *beta, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_add_rmsnorm_fwd_f32(float *y, float *h, float *rstd, const float *x, const float *residual, const float *gamma, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_add_rmsnorm_fwd_f16(gpuops_f16 *y, gpuops_f16 *h, float *rstd, const gpuops_f16 *x, const gpuops_f16 *residual, const gpuops_f16 *gamma, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_add_rmsnorm_fwd_bf16(gpuops_bf16 *y, gpuops_bf16 *h, float *rstd, const gpuops_bf16 *x, const gpuops_bf16 *residual, const gpuops_bf16 *gamma, int64_t rows, int64_t cols, float eps);
GPUOPS_API gpuops_status gpuops_cpu_layernorm_gelu_fwd_f32(float *y, float *mean, float *rstd, const float *x, const float *gamma, const float *beta, int64_t rows, int64_t cols, float eps, gpuops_gelu_approx approx);
GPUOPS_API gpuops_status gpuops_cpu_layernorm_gelu_fwd_f16(gpuops_f16 *y, float *mean, float *rstd, const gpuops_f16 *x, const gpuops_f16 *gamma, const gpuops_f16 *beta, int64_t rows, int64_t cols, float eps, gpuops_gelu_approx approx);
GPUOPS_API gpuops_status gpuops_cpu_layernorm_gelu_fwd_bf16(gpuops_bf16 *y, float *mean, float *rstd, const gpuops_bf16 *x, const gpuops_bf16 *gamma, const gpuops_bf16 *beta, int64_t rows, int64_t cols, float eps, gpuops_gelu_approx approx);
GPUOPS_API gpuops_status gpuops_cpu_layernorm_bwd_f32(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x, const float *mean, const float *rstd, const float *gamma, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_layernorm_bwd_f16(gpuops_f16 *dx, gpuops_f16 *dgamma, gpuops_f16 *dbeta, const gpuops_f16 *dy, const gpuops_f16 *x, const float *mean, const float *rstd, const gpuops_f16 *gamma, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_layernorm_bwd_bf16(gpuops_bf16 *dx, gpuops_bf16 *dgamma, gpuops_bf16 *dbeta, const gpuops_bf16 *dy, const gpuops_bf16 *x, const float *mean, const float *rstd, const gpuops_bf16 *gamma, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_rmsnorm_bwd_f32(float *dx, float *dgamma, const float *dy, const float *x, const float *rstd, const float *gamma, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_rmsnorm_bwd_f16(gpuops_f16 *dx, gpuops_f16 *dgamma, const gpuops_f16 *dy, const gpuops_f16 *x, const float *rstd, const gpuops_f16 *gamma, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_rmsnorm_bwd_bf16(gpuops_bf16 *dx, gpuops_bf16 *dgamma, const gpuops_bf16 *dy, const gpuops_bf16 *x, const float *rstd, const gpuops_bf16 *gamma, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_layernorm_gelu_bwd_f32(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x, const float *mean, const float *rstd, const float *gamma, const float *beta, int64_t rows, int64_t cols, gpuops_gelu_approx approx);
GPUOPS_API gpuops_status gpuops_cpu_layernorm_gelu_bwd_f16(gpuops_f16 *dx, gpuops_f16 *dgamma, gpuops_f16 *dbeta, const gpuops_f16 *dy, const gpuops_f16 *x, const float *mean, const float *rstd, const gpuops_f16 *gamma, const gpuops_f16 *beta, int64_t rows, int64_t cols, gpuops_gelu_approx approx);
GPUOPS_API gpuops_status gpuops_cpu_layernorm_gelu_bwd_bf16(gpuops_bf16 *dx, gpuops_bf16 *dgamma, gpuops_bf16 *dbeta, const gpuops_bf16 *dy, const gpuops_bf16 *x, const float *mean, const float *rstd, const gpuops_bf16 *gamma, const gpuops_bf16 *beta, int64_t rows, int64_t cols, gpuops_gelu_approx approx);

/* Private: the partial-sum layout gpuops_norm_bwd_workspace_size assumes (gpuops_cuda.cuh section 8
   uses the same): at most GPUOPS__NORM_PART_FLOATS floats of partial sums per gradient, rows of
   cols rounded up to 4 floats, and a second level of one row per GPUOPS__NORM_FINISH_ROWS partials. */
#define GPUOPS__NORM_PART_FLOATS (1ll << 22)
#define GPUOPS__NORM_FINISH_ROWS 64

/* Rotary position embedding (RoPE) of queries or keys laid out [tokens, heads, head_dim]: element
   (t, h, d) at x[t * ldx + h * head_dim + d], ldx >= heads * head_dim the token stride (so q and k
   may be views of a fused qkv buffer); y likewise with ldy. The first rot_dim dims of each head
   rotate in pairs, the others pass through (copied when y != x, untouched in place):
     GPUOPS_ROPE_ADJACENT  pair i = (d = 2i, 2i + 1): GPT-J and the original paper
     GPUOPS_ROPE_HALVES    pair i = (d = i, i + rot_dim / 2): GPT-NeoX, Llama
     forward   (a, b) -> (a cos - b sin, b cos + a sin)
     backward  (a, b) -> (a cos + b sin, b cos - a sin), dx from dy: the inverse rotation
   The angle of pair i (i < rot_dim / 2) at position p is p * f_i, f_i = base^(-2i / rot_dim)
   rounded to f32 (computed in double), the product rounded to f32 as PyTorch's f32
   implementations form it (exact for |p| < 2^24), then cos and sin to full f32 accuracy.
   Alternatively cos_sin, an f32 cache [positions][rot_dim] whose row p holds cos of pairs
   0 .. rot_dim/2 - 1, then their sin (vLLM's cos_sin_cache), gives the values, and base is not
   used. positions: tokens int64 values (NULL: token t is at position t); with a cache each must
   name one of its rows (device data: not checked). rot_dim even, 0 <= rot_dim <= head_dim; base
   finite and > 0 when used; a pairing one of the two (else GPUOPS_ERR_INVALID_ARGUMENT).
   Storage f32, f16, bf16, arithmetic in f32. In place: y == x with ldy == ldx; any other overlap
   of y with x, positions or cos_sin is GPUOPS_ERR_INVALID_ARGUMENT. Pointers aligned to their
   element size (GPUOPS_ERR_MISALIGNED). tokens, heads or head_dim 0: nothing to do.
   Versions: NAIVE one thread per pair, element accesses, its angle computed per pair; AUTO a
   thread per 16-byte chunk of rotary dims (a chunk from each half for HALVES) of 4 heads of a
   token, their loads issued together: the frequencies computed once per thread, cos and sin once
   per chunk and 4 heads (f16 and bf16: the hardware's sine and cosine after an exact reduction to
   [-pi, pi], absolute error ~2^-21, under their rounding), 128-bit accesses where every pointer,
   stride and dim allows (element accesses of 2 heads otherwise, same results). */
typedef enum gpuops_rope_pairing { GPUOPS_ROPE_ADJACENT = 0, GPUOPS_ROPE_HALVES = 1 } gpuops_rope_pairing;

GPUOPS_API gpuops_status gpuops_rope_fwd_f32(float *y, const float *x, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t ldy, int64_t ldx, float base, gpuops_rope_pairing pairing, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_rope_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t ldy, int64_t ldx, float base, gpuops_rope_pairing pairing, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_rope_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t ldy, int64_t ldx, float base, gpuops_rope_pairing pairing, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_rope_bwd_f32(float *dx, const float *dy, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t lddx, int64_t lddy, float base, gpuops_rope_pairing pairing, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_rope_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t lddx, int64_t lddy, float base, gpuops_rope_pairing pairing, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_rope_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t lddx, int64_t lddy, float base, gpuops_rope_pairing pairing, gpuops_algo algo, gpuops_stream stream);

GPUOPS_API gpuops_status gpuops_cpu_rope_fwd_f32(float *y, const float *x, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t ldy, int64_t ldx, float base, gpuops_rope_pairing pairing);
GPUOPS_API gpuops_status gpuops_cpu_rope_fwd_f16(gpuops_f16 *y, const gpuops_f16 *x, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t ldy, int64_t ldx, float base, gpuops_rope_pairing pairing);
GPUOPS_API gpuops_status gpuops_cpu_rope_fwd_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t ldy, int64_t ldx, float base, gpuops_rope_pairing pairing);
GPUOPS_API gpuops_status gpuops_cpu_rope_bwd_f32(float *dx, const float *dy, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t lddx, int64_t lddy, float base, gpuops_rope_pairing pairing);
GPUOPS_API gpuops_status gpuops_cpu_rope_bwd_f16(gpuops_f16 *dx, const gpuops_f16 *dy, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t lddx, int64_t lddy, float base, gpuops_rope_pairing pairing);
GPUOPS_API gpuops_status gpuops_cpu_rope_bwd_bf16(gpuops_bf16 *dx, const gpuops_bf16 *dy, const int64_t *positions, const float *cos_sin, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t lddx, int64_t lddy, float base, gpuops_rope_pairing pairing);


/* ==== 9. Tensor-core matrix multiply and linear layers ======================================= */
/* Matrix multiply on tensor cores: f16 or bf16 operands, f32 accumulation, row-major, with the
   contract of gpuops_matmul_f32 (section 7):
     C = epilogue(alpha * op(A) @ op(B) + beta * C),   op(X) = X (GPUOPS_OP_N) or X^T (GPUOPS_OP_T).
   C is m x n (ldc >= n); A is stored m x k (lda >= k) for OP_N or k x m (lda >= m) for OP_T; B is
   stored k x n (ldb >= n) for OP_N or n x k (ldb >= k) for OP_T; every leading dimension >= 1.
   Entry points by storage: gpuops_gemm_f16 and gpuops_gemm_bf16 write C in the operands' type,
   gpuops_gemm_f16_f32 and gpuops_gemm_bf16_f32 write C in f32.
   The epilogue (epi, NULL for none), applied to each element in f32 before its single store:
     v = alpha * acc + beta * C(i, j)      (C is not read when beta == 0: it may hold NaN)
     v += bias[j]                          (bias: n values, NULL for none)
     preact(i, j) = v                      (preact: m x n, row stride ldp, NULL: not written)
     v = act(v)                            (gpuops_activation: none, GELU erf / tanh, SiLU, ReLU)
     v += residual(i, j)                   (residual: m x n, row stride ldr, NULL for none)
     C(i, j) = v                           rounded once to C's type
   bias, residual and preact hold C's storage type. residual may be C itself (the same address
   and ldr == ldc: C += act(...)); no other array may overlap C or preact, and C and preact may
   not overlap A, B or bias (GPUOPS_ERR_INVALID_ARGUMENT). 16-bit outputs take the activations'
   fast forms (gpuops_cuda.cuh 1.6), far under a 16-bit rounding.
   m = 0 or n = 0: nothing is done. k = 0: the epilogue of acc = 0 (C = act(beta C + bias) + ...).
   Accuracy: products of 16-bit values are exact in f32 and summed in f32, so the error of an
   element is a few f32 ulp times sum_p |A(i,p) B(p,j)|, plus the one rounding to C's type.
   Versions (gpuops_algo; examples/12_tensor_cores.cu is the learning path's step):
     WMMA      the CUDA C++ WMMA API (16x16x16 fragments) on tiles staged in padded shared memory
               by a cp.async pipeline; f16 from compute capability 7.0, bf16 from 8.0 (7.5, whose
               blocks get 64 KiB of shared memory against the 80 the tiles need: UNSUPPORTED).
     MMA_SYNC  mma.sync.m16n8k16 on fragments loaded by ldmatrix from XOR-swizzled shared memory,
               filled by a multi-stage cp.async pipeline; compute capability 8.0 and later.
     WGMMA     Hopper warpgroup MMA fed by the tensor memory accelerator (sm_90a builds on 9.0):
               a producer warpgroup streams A and B tiles by TMA into a ring of shared-memory
               stages, two consumer warpgroups multiply them, persistent over the output tiles.
               The TMA needs A and B 16-byte aligned with leading dimensions that are multiples
               of 8 elements: otherwise WGMMA returns GPUOPS_ERR_MISALIGNED.
     AUTO      the fastest this device, build and shape allow: for few rows (m <= 8, op_a N,
               op_b T, both 16-byte aligned with leading dimensions multiples of 8: the decode
               step's y = x W^T) a kernel that streams B once from memory straight into mma.sync
               fragments where its n / 16 blocks fit on the device at once (past that, WGMMA
               first where it can run), and for m = 1 a GEMV on CUDA cores (8.0+); otherwise
               WGMMA where it can run, else MMA_SYNC on 8.0+, else WMMA (f16 on 7.x; bf16 needs
               8.0: GPUOPS_ERR_UNSUPPORTED).
   A version the device or build lacks returns GPUOPS_ERR_UNSUPPORTED, never a wrong answer.
   Any m, n, k and leading dimension works in every version (WGMMA: within the TMA's rule above):
   tails are predicated inside the kernels; 16-byte copies are used where an operand's pointer is
   16-byte aligned and its leading dimension a multiple of 8 elements, 2-byte element copies
   otherwise (slower, same result).
   Pointers must be aligned to their element size (GPUOPS_ERR_MISALIGNED). */
typedef struct gpuops_epilogue {
  const void *bias;      /* n values, or NULL                                                   */
  const void *residual;  /* m x n with row stride ldr, added after the activation, or NULL      */
  void *preact;          /* m x n with row stride ldp: the value before the activation, or NULL */
  int64_t ldr, ldp;
  gpuops_activation act;
} gpuops_epilogue;

GPUOPS_API gpuops_status gpuops_gemm_f16(gpuops_f16 *c, const gpuops_f16 *a, const gpuops_f16 *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a, gpuops_op op_b, const gpuops_epilogue *epi, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_gemm_bf16(gpuops_bf16 *c, const gpuops_bf16 *a, const gpuops_bf16 *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a, gpuops_op op_b, const gpuops_epilogue *epi, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_gemm_f16_f32(float *c, const gpuops_f16 *a, const gpuops_f16 *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a, gpuops_op op_b, const gpuops_epilogue *epi, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_gemm_bf16_f32(float *c, const gpuops_bf16 *a, const gpuops_bf16 *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a, gpuops_op op_b, const gpuops_epilogue *epi, gpuops_algo algo, gpuops_stream stream);

/* CPU reference: the same arguments and checks on host memory; each dot product in double,
   the epilogue in double, one rounding to C's type. The oracle of the tests. */
GPUOPS_API gpuops_status gpuops_cpu_gemm_f16(gpuops_f16 *c, const gpuops_f16 *a, const gpuops_f16 *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a, gpuops_op op_b, const gpuops_epilogue *epi);
GPUOPS_API gpuops_status gpuops_cpu_gemm_bf16(gpuops_bf16 *c, const gpuops_bf16 *a, const gpuops_bf16 *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a, gpuops_op op_b, const gpuops_epilogue *epi);
GPUOPS_API gpuops_status gpuops_cpu_gemm_f16_f32(float *c, const gpuops_f16 *a, const gpuops_f16 *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a, gpuops_op op_b, const gpuops_epilogue *epi);
GPUOPS_API gpuops_status gpuops_cpu_gemm_bf16_f32(float *c, const gpuops_bf16 *a, const gpuops_bf16 *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a, gpuops_op op_b, const gpuops_epilogue *epi);

/* Linear layer, PyTorch's nn.Linear layout: x [batch, in], W [out, in], bias [out], y [batch, out],
   all rows tight (row stride = the row's length).
     forward   y = act(x @ W^T + bias)          preact = x @ W^T + bias (NULL: not written)
     backward  dh = dy * act'(preact)           (dh = dy for GPUOPS_ACT_NONE; preact may be NULL)
               dx = dh @ W     dW = dh^T @ x     db[j] = sum_i dh(i, j)
   The forward is one GEMM with the fused epilogue (bias may be NULL). The backward computes dh
   (and db's partial sums) in one pass over dy and preact, then dx and dW as two GEMMs: dx in
   the operands' type, dW and db in f32 (the mixed-precision recipe: f32 master weights, updated
   from f32 gradients, cast to bf16 for each step's compute; see gpuops_adamw_step_*). Any of
   dx, dW, db may be NULL (not computed). db is reduced in a fixed order: the same bits on every
   run. Workspace: gpuops_linear_bwd_workspace_size(batch, out, act) bytes (dh when act is not
   NONE, and the column partial sums of db), 16-byte aligned, overlapping nothing else.
   Outputs may not overlap each other or any input (GPUOPS_ERR_INVALID_ARGUMENT). algo picks the
   GEMM version as in gpuops_gemm_*. */
GPUOPS_API size_t gpuops_linear_bwd_workspace_size(int64_t batch, int64_t out_features, gpuops_activation act);
/* Private: the backward's db partial sums are one row of out_features f32 per GPUOPS__LIN_ROWS
   rows of dh (gpuops_cuda.cuh section 9 uses the same constant). */
#define GPUOPS__LIN_ROWS 128
/* Private: the MSE loss's blocks (each a partial sum in the workspace): one per GPUOPS__MSE_CHUNK
   elements, at most GPUOPS__MSE_BLOCKS. */
#define GPUOPS__MSE_CHUNK 4096
#define GPUOPS__MSE_BLOCKS 1024

GPUOPS_API gpuops_status gpuops_linear_fwd_f16(gpuops_f16 *y, gpuops_f16 *preact, const gpuops_f16 *x, const gpuops_f16 *w, const gpuops_f16 *bias, int64_t batch, int64_t in_features, int64_t out_features, gpuops_activation act, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_linear_fwd_bf16(gpuops_bf16 *y, gpuops_bf16 *preact, const gpuops_bf16 *x, const gpuops_bf16 *w, const gpuops_bf16 *bias, int64_t batch, int64_t in_features, int64_t out_features, gpuops_activation act, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_linear_bwd_f16(gpuops_f16 *dx, float *dw, float *db, const gpuops_f16 *dy, const gpuops_f16 *preact, const gpuops_f16 *x, const gpuops_f16 *w, int64_t batch, int64_t in_features, int64_t out_features, gpuops_activation act, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_linear_bwd_bf16(gpuops_bf16 *dx, float *dw, float *db, const gpuops_bf16 *dy, const gpuops_bf16 *preact, const gpuops_bf16 *x, const gpuops_bf16 *w, int64_t batch, int64_t in_features, int64_t out_features, gpuops_activation act, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);

/* The rest of a training step in the mixed-precision recipe (f32 master weights and optimizer state,
   16-bit compute), as examples/13_mlp.cu uses it:
     MSE loss   *loss = mean over the rows x cols elements of (y - target)^2, in f32 (one value,
                reduced in a fixed order: the same bits on every run; 0 when there are no
                elements), and dy = 2 (y - target) / (rows cols) in y's type (dy NULL: not
                written; dy may be y itself, any other overlap is an error). loss is device
                memory for the GPU form. Workspace: gpuops_mse_loss_workspace_size(rows * cols)
                bytes, 16-byte aligned (0 for no elements).
     AdamW      one step t >= 1 of PyTorch's torch.optim.AdamW on n f32 weights w with f32
                moments m and v (in place) and the f32 gradient g:
                  w -= lr wd w;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
                  w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
                and w16 = w rounded to the 16-bit type (the compute copy for the next step; NULL:
                not written). 0 <= b1, b2 < 1, eps >= 0, lr and wd finite, else
                GPUOPS_ERR_INVALID_ARGUMENT. w, m, v, w16 and g may not overlap.
   Pointers aligned to their element size (GPUOPS_ERR_MISALIGNED). */
GPUOPS_API size_t gpuops_mse_loss_workspace_size(int64_t n);
GPUOPS_API gpuops_status gpuops_mse_loss_f16(float *loss, gpuops_f16 *dy, const gpuops_f16 *y, const gpuops_f16 *target, int64_t rows, int64_t cols, void *workspace, size_t workspace_bytes, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_mse_loss_bf16(float *loss, gpuops_bf16 *dy, const gpuops_bf16 *y, const gpuops_bf16 *target, int64_t rows, int64_t cols, void *workspace, size_t workspace_bytes, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_adamw_step_f16(float *w, float *m, float *v, gpuops_f16 *w16, const float *grad, int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay, int64_t step, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_adamw_step_bf16(float *w, float *m, float *v, gpuops_bf16 *w16, const float *grad, int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay, int64_t step, gpuops_stream stream);

/* CPU forms (host memory, double inside; the backward needs no workspace). */
GPUOPS_API gpuops_status gpuops_cpu_linear_fwd_f16(gpuops_f16 *y, gpuops_f16 *preact, const gpuops_f16 *x, const gpuops_f16 *w, const gpuops_f16 *bias, int64_t batch, int64_t in_features, int64_t out_features, gpuops_activation act);
GPUOPS_API gpuops_status gpuops_cpu_linear_fwd_bf16(gpuops_bf16 *y, gpuops_bf16 *preact, const gpuops_bf16 *x, const gpuops_bf16 *w, const gpuops_bf16 *bias, int64_t batch, int64_t in_features, int64_t out_features, gpuops_activation act);
GPUOPS_API gpuops_status gpuops_cpu_linear_bwd_f16(gpuops_f16 *dx, float *dw, float *db, const gpuops_f16 *dy, const gpuops_f16 *preact, const gpuops_f16 *x, const gpuops_f16 *w, int64_t batch, int64_t in_features, int64_t out_features, gpuops_activation act);
GPUOPS_API gpuops_status gpuops_cpu_linear_bwd_bf16(gpuops_bf16 *dx, float *dw, float *db, const gpuops_bf16 *dy, const gpuops_bf16 *preact, const gpuops_bf16 *x, const gpuops_bf16 *w, int64_t batch, int64_t in_features, int64_t out_features, gpuops_activation act);
GPUOPS_API gpuops_status gpuops_cpu_mse_loss_f16(float *loss, gpuops_f16 *dy, const gpuops_f16 *y, const gpuops_f16 *target, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_mse_loss_bf16(float *loss, gpuops_bf16 *dy, const gpuops_bf16 *y, const gpuops_bf16 *target, int64_t rows, int64_t cols);
GPUOPS_API gpuops_status gpuops_cpu_adamw_step_f16(float *w, float *m, float *v, gpuops_f16 *w16, const float *grad, int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay, int64_t step);
GPUOPS_API gpuops_status gpuops_cpu_adamw_step_bf16(float *w, float *m, float *v, gpuops_bf16 *w16, const float *grad, int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay, int64_t step);

/* ==== 10. Attention ====================================================================== */
/* Scaled dot-product attention, one (batch, query head) at a time:
     O = softmax(scale * Q K^T + mask) V          lse_i = log sum_j exp(scale q_i . k_j + mask_ij)
   q and o are [batch, seqlen_q, heads_q, head_dim], k and v [batch, seqlen_k, heads_kv,
   head_dim], each addressed through its own batch, sequence and head strides in elements
   (gpuops_attention_dims; the last dimension is contiguous), so [B, S, H, D] and [B, H, S, D]
   (and any other order of the first three) work without a copy. heads_q is a multiple of heads_kv:
   query head h reads kv head h / (heads_q / heads_kv) (multi-head, grouped-query, multi-query).
   scale: any finite value (GPUOPS_ERR_INVALID_ARGUMENT otherwise); the usual 1 / sqrt(head_dim)
   is gpuops_attention_default_scale(head_dim): there is no magic value that asks for it.
   mask: GPUOPS_ATTN_MASK_NONE or GPUOPS_ATTN_MASK_CAUSAL. Causal is aligned to the bottom-right
   corner: query i sees key j when j <= i + seqlen_k - seqlen_q (PyTorch's and flash attention's
   convention for seqlen_q != seqlen_k; the square case is the usual j <= i). A row that sees no key
   (causal with seqlen_q > seqlen_k: its first seqlen_q - seqlen_k rows) gets O = 0 and lse = -inf.
   lse (f32, NULL: not written) is [batch, heads_q, seqlen_q], tight; the backward reads it.
   Sizes: batch, seqlen_q, heads_q >= 0 (0: nothing done), seqlen_k >= 1 (0 only in a call that
   does nothing), heads_kv >= 1 dividing heads_q,
   head_dim a multiple of 8 from 8 to 256 (GPUOPS_ERR_INVALID_ARGUMENT otherwise; the fast paths are
   64 and 128, other sizes run the next of 64, 128, 256 with zero-filled columns). Strides: >= 0,
   and rows must not overlap: taken from the smallest stride up, each dimension of extent > 1 must
   step past everything inside it (the first past head_dim), else GPUOPS_ERR_INVALID_ARGUMENT (a
   head stride < head_dim in [B, S, H, D], say). Outputs may not overlap any input or each other.
   Indexing is 64-bit.
   Versions (gpuops_algo; examples/14_attention.cu is the learning path's step):
     NAIVE   S = scale Q K^T with this library's GEMM (f32 S; the f32 storage runs the f32 matrix
             multiply), the causal mask and lse, this library's softmax (in place), P rounded to
             the storage type, then O = P V with the GEMM: one (batch, head) at a time, the
             seqlen_q x seqlen_k matrices in the caller's workspace. f32, f16, bf16. Forward only.
     FLASH   flash attention 1's loop order on CUDA cores: a block per (batch, head); K and V
             tiles outer, the rows of Q inner; the running O (f32), max and sum of each row live in
             the workspace and are read, rescaled and written back for every K/V tile. f32, f16,
             bf16, any alignment, compute capability 7.0+.
     FLASH2  flash attention 2: a block per 128-row Q tile (64 at head_dim > 128), each of its 4
             warps 32 rows (16); K and V tiles double-buffered through cp.async into swizzled
             shared memory; S = Q K^T and O += P V on mma.sync m16n8k16 (operands by ldmatrix,
             V's by ldmatrix .trans); the online softmax in registers (one FFMA and one exp2 a
             score, O rescaled only when a row's maximum grows), O divided by the row sum once at
             the end. Compute capability 8.0+, f16 and bf16; q, k, v and o
             16-byte aligned with every stride a multiple of 8 (GPUOPS_ERR_MISALIGNED otherwise).
     WGMMA   FLASH2's algorithm on Hopper's warpgroup MMA: a block per 128-row Q tile, a producer
             warpgroup copying Q and 128-key K and V tiles (cp.async into the 128-byte swizzle,
             mbarriers, 2 stages), two consumer warpgroups of 64 rows each, S = Q K^T on wgmma
             from shared memory and O += P V with P from registers; the next tile's Q K^T overlaps
             this tile's softmax. sm_90a builds on compute capability 9.0, f16 and bf16, head_dim
             <= 128, FLASH2's alignment rule. Its backward is below.
     AUTO    WGMMA where it runs, then FLASH2; else FLASH for f16 / bf16, NAIVE for f32.
   Backward (gpuops_attention_bwd_*): dQ, dK, dV from dO, Q, K, V, O and the forward's lse, flash
   attention 2's algorithm: D_i = dO_i . O_i first, then P_ij = exp(scale q_i . k_j - lse_i)
   recomputed, dV_j = sum_i P_ij dO_i, dS_ij = P_ij (dO_i . v_j - D_i), dK_j = scale sum_i dS_ij q_i,
   dQ_i = scale sum_j dS_ij k_j, where i runs over every query head of k_j's group.
     FLASH2  a block per 128 keys of one kv head walks the group's query heads and Q tiles, the
             five products on mma.sync, dK and dV summed in registers (deterministic); dQ is added
             with f32 atomic reductions (16 bytes each on sm_90) into the workspace, then rounded to
             the storage type: the order of those additions varies from run to run (dQ may differ
             in its last bits; dK, dV do not). Compute capability 8.0+ with the block's shared
             memory (83 KiB at head_dim <= 64, 145 KiB up to 128: sm_80 and sm_90, not sm_86 or
             sm_89 at 128; GPUOPS_ERR_UNSUPPORTED there, where AUTO takes FLASH), f16 and bf16,
             head_dim <= 128, 16-byte aligned q, k, v, dout, dk, dv with strides that are multiples
             of 8 (GPUOPS_ERR_MISALIGNED otherwise).
     WGMMA   FLASH2's blocks and walk on Hopper's warpgroup MMA: a producer warpgroup copying K, V
             and each Q tile's Q, dO, lse and D (cp.async, mbarriers, 2 stages), two consumer
             warpgroups of 64 keys each; the four products of dK and dV on wgmma with P and dS
             from registers, dS through shared memory for dQ = dS K, which is added as FLASH2's
             (the same determinism: dK, dV repeat, dQ's last bits may not). sm_90a builds on
             compute capability 9.0, FLASH2's rules otherwise (f16, bf16, head_dim <= 128, the
             alignment rule); the workspace is FLASH2's.
     FLASH   the same algorithm on CUDA cores: a warp per key (dK, dV in registers), then a warp per
             query row for dQ (recomputing P): deterministic, the same bits on every run, any
             alignment; f32, f16, bf16.
     AUTO    WGMMA where it runs, then FLASH2, else FLASH. NAIVE: GPUOPS_ERR_UNSUPPORTED.
   dq, dk, dv use q's, k's and v's strides; dout uses o's. A key that no query sees gets dK = dV = 0.
   Workspace: gpuops_attention_fwd_workspace_size / gpuops_attention_bwd_workspace_size bytes
   (16-byte aligned, overlapping no array of the call). For AUTO they return what every version
   AUTO may pick needs; a call checks only what the version it runs needs (the FLASH2 forward:
   none). */
typedef enum gpuops_attention_mask { GPUOPS_ATTN_MASK_NONE = 0, GPUOPS_ATTN_MASK_CAUSAL = 1 } gpuops_attention_mask;

/* The sizes and strides (in elements) of one attention call. Strides: [0] batch, [1] sequence,
   [2] head. */
typedef struct gpuops_attention_dims {
  int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
  int64_t q_stride[3]; /* q, and dq in the backward      */
  int64_t k_stride[3]; /* k, dk                          */
  int64_t v_stride[3]; /* v, dv                          */
  int64_t o_stride[3]; /* o, and dout in the backward    */
} gpuops_attention_dims;

/* Tight layouts: [B, S, H, D] (gpuops_attention_dims_bshd) or [B, H, S, D] (_bhsd) for all four. */
GPUOPS_API gpuops_attention_dims gpuops_attention_dims_bshd(int64_t batch, int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q, int64_t heads_kv, int64_t head_dim);
GPUOPS_API gpuops_attention_dims gpuops_attention_dims_bhsd(int64_t batch, int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q, int64_t heads_kv, int64_t head_dim);
/* 1 / sqrt(head_dim), rounded to f32 (0 for head_dim <= 0). */
GPUOPS_API float gpuops_attention_default_scale(int64_t head_dim);
/* Bytes of workspace a forward / backward call with these dims and algo needs (SIZE_MAX when
   it does not fit size_t; 0 for an invalid dims or none needed). */
GPUOPS_API size_t gpuops_attention_fwd_workspace_size(const gpuops_attention_dims *dims, gpuops_algo algo);
GPUOPS_API size_t gpuops_attention_bwd_workspace_size(const gpuops_attention_dims *dims, gpuops_algo algo);
/* The keys of one block of FLASH2's backward (the kernel and the workspace rule share it). */
#define GPUOPS__ATTN_BWD_KEYS 128

GPUOPS_API gpuops_status gpuops_attention_fwd_f32(float *o, float *lse, const float *q, const float *k, const float *v, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_attention_fwd_f16(gpuops_f16 *o, float *lse, const gpuops_f16 *q, const gpuops_f16 *k, const gpuops_f16 *v, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_attention_fwd_bf16(gpuops_bf16 *o, float *lse, const gpuops_bf16 *q, const gpuops_bf16 *k, const gpuops_bf16 *v, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_attention_bwd_f32(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k, const float *v, const float *o, const float *lse, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_attention_bwd_f16(gpuops_f16 *dq, gpuops_f16 *dk, gpuops_f16 *dv, const gpuops_f16 *dout, const gpuops_f16 *q, const gpuops_f16 *k, const gpuops_f16 *v, const gpuops_f16 *o, const float *lse, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_attention_bwd_bf16(gpuops_bf16 *dq, gpuops_bf16 *dk, gpuops_bf16 *dv, const gpuops_bf16 *dout, const gpuops_bf16 *q, const gpuops_bf16 *k, const gpuops_bf16 *v, const gpuops_bf16 *o, const float *lse, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);

/* CPU reference (host memory, the same checks, no workspace): every dot product and the softmax
   in double, one rounding to the storage type. The backward recomputes P from q, k (its o and lse
   arguments are checked, then not read: D_i = rowsum(dO_i * P_i V) in double). */
GPUOPS_API gpuops_status gpuops_cpu_attention_fwd_f32(float *o, float *lse, const float *q, const float *k, const float *v, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask);
GPUOPS_API gpuops_status gpuops_cpu_attention_fwd_f16(gpuops_f16 *o, float *lse, const gpuops_f16 *q, const gpuops_f16 *k, const gpuops_f16 *v, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask);
GPUOPS_API gpuops_status gpuops_cpu_attention_fwd_bf16(gpuops_bf16 *o, float *lse, const gpuops_bf16 *q, const gpuops_bf16 *k, const gpuops_bf16 *v, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask);
GPUOPS_API gpuops_status gpuops_cpu_attention_bwd_f32(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k, const float *v, const float *o, const float *lse, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask);
GPUOPS_API gpuops_status gpuops_cpu_attention_bwd_f16(gpuops_f16 *dq, gpuops_f16 *dk, gpuops_f16 *dv, const gpuops_f16 *dout, const gpuops_f16 *q, const gpuops_f16 *k, const gpuops_f16 *v, const gpuops_f16 *o, const float *lse, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask);
GPUOPS_API gpuops_status gpuops_cpu_attention_bwd_bf16(gpuops_bf16 *dq, gpuops_bf16 *dk, gpuops_bf16 *dv, const gpuops_bf16 *dout, const gpuops_bf16 *q, const gpuops_bf16 *k, const gpuops_bf16 *v, const gpuops_bf16 *o, const float *lse, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask);
/* ==== 11. Convolution ======================================================================= */
/* Cross-correlation, as deep-learning frameworks define convolution (the filter is not flipped),
   with zero padding: values outside the input read as 0. Arithmetic in f32 (16-bit storage is
   converted on load), each output rounded once. Two kinds of op:

   The learning path (f32, one signal and one filter, output the size of the input, "same"):
     conv1d        y[i] = sum_{j < fw} x[i + j - (fw - 1) / 2] * f[j]                 0 <= i < n
     conv2d_plane  y[i][j] = sum_{a < fh, b < fw} x[i + a - (fh - 1) / 2][j + b - (fw - 1) / 2] f[a][b]
                   (x, y: h x w row-major, rows tight; f: fh x fw row-major)
   Filter sizes 1..15 (odd or even; an even filter has one tap more after the centre than before
   it: the centre tap is (fw - 1) / 2, rounded down, as PyTorch's padding='same'). Else
   GPUOPS_ERR_INVALID_ARGUMENT. y may not overlap x or f. n, h, w = 0: nothing is done.
   Versions (examples/15_convolution.cu is the learning path's step):
     NAIVE          one output per thread; x and f read from global memory (f through L1).
     CONST_FILTER   the filter copied (device to device, on the stream) into a constant-memory
                    buffer: every thread of a warp reads the same tap, which the constant cache
                    broadcasts in one transaction. The buffer is one per program, so CONST_FILTER,
                    SHARED_TILED, CACHED_HALO and square-filter REGISTER_2D calls must not run at
                    the same time on two streams (ordered on one stream they are safe).
     SHARED_TILED   CONST_FILTER, plus the block's input tile and its halo (the fw - 1 or
                    (fh - 1) x (fw - 1) neighbours the edge outputs need) loaded into shared
                    memory once, each input then read by the fw (fh fw) outputs that use it.
     CACHED_HALO    CONST_FILTER, the tile without its halo in shared memory; the halo is read
                    from global memory, where the neighbouring blocks' loads left it in L1/L2.
                    Fewer shared bytes and a simpler load, a branch in the inner loop.
     REGISTER_1D    (conv1d only) each thread computes 4 neighbouring outputs in registers from
                    one read of their window: the block's tile and halo staged by cp.async, each
                    input read from shared memory once per 4 outputs instead of once per tap.
                    The taps come from f (no constant buffer).
     REGISTER_2D    (conv2d_plane only) the same with a 4 x 4 block of outputs per thread, each
                    input row of its window read once for up to 4 output rows. Square filters
                    (fh = fw) run fully unrolled with the taps in the constant buffer (see
                    CONST_FILTER); others read a row of taps from shared memory.
     AUTO           REGISTER_1D / REGISTER_2D.
   A version of the other op (REGISTER_2D for conv1d, REGISTER_1D for conv2d_plane) or of the
   image-model ops => GPUOPS_ERR_UNSUPPORTED, as for any version a family lacks.

   Image models (gpuops_conv2d_*): input x of N images, C channels, H x W; K filters of C x R x S;
   output y of N x K x P x Q with
     P = (H + 2 pad_h - dil_h (R - 1) - 1) / stride_h + 1     (Q likewise with W, S, w)
     y(n, k, p, q) = act(bias[k] + sum_{c, r, s} x(n, c, p stride_h - pad_h + r dil_h,
                                                   q stride_w - pad_w + s dil_w) w(k, c, r, s))
   Layouts (gpuops_layout): NCHW: x is N x C x H x W, w is K x C x R x S, y is N x K x P x Q;
   NHWC (channels last): x is N x H x W x C, w is K x R x S x C, y is N x P x Q x K. All tight.
   bias: K values of y's type, or NULL. act: any gpuops_activation (NONE, RELU, ...), applied
   after the bias, in f32. Sizes: n, k >= 0 (0: nothing is done); c, h, w, r, s >= 1;
   stride >= 1, dilation >= 1, padding >= 0; a padding, stride or dilation that leaves P < 1 or
   Q < 1, a bad layout or activation, a NULL pointer for a non-empty array, or y overlapping
   x, w or bias => GPUOPS_ERR_INVALID_ARGUMENT, nothing written. Indexing is 64-bit throughout.
   Pointers aligned to their element size (GPUOPS_ERR_MISALIGNED).
   Versions (examples/16_conv_gemm.cu compares them):
     UNFUSED        the convolution as a matrix product, in three kernels: im2col unrolls x into
                    an (N P Q) x (C R S) matrix A in the workspace, the library's GEMM computes
                    A w^T (f32: gpuops_matmul_f32; f16 / bf16: gpuops_gemm_*_f32 on tensor
                    cores) into an (N P Q) x K f32 matrix in the workspace, and a third kernel
                    adds the bias, applies act and permutes it into y's layout. Workspace:
                    gpuops_conv2d_workspace_size(shape, GPUOPS_ALGO_UNFUSED) bytes. Needs the
                    MATMUL (f32) or GEMM (16-bit) family compiled in, else GPUOPS_ERR_UNSUPPORTED.
     IMPLICIT_GEMM  the same product in one kernel on CUDA cores: each block's tiles of A are
                    gathered from x while they are loaded (no unrolled matrix in memory), the
                    epilogue (bias, act, the permute into y's layout) folded into the store.
                    Any dtype, either layout.
     MMA_SYNC       the implicit GEMM on tensor cores (mma.sync m16n8k16, f32 accumulation;
                    f16 and bf16 only, NHWC only, compute capability 8.0+): A and w tiles copied
                    by cp.async into XOR-swizzled shared memory (16 bytes = 8 channels per copy,
                    zero-filled where the filter window leaves the image), loaded by ldmatrix;
                    with C a multiple of 8 it needs x, w 16-byte aligned (else
                    GPUOPS_ERR_MISALIGNED). Any other C (an image's 3 channels) takes a gathered
                    form: the reduction over (r, s, c) flattened, each element loaded on its own
                    into registers and stored to the same swizzled tiles (32-bit indexing inside
                    an image: GPUOPS_ERR_UNSUPPORTED from about 2^30 elements of padded image).
     WGMMA          the implicit GEMM on Hopper's wgmma (sm_90a builds on compute capability
                    9.0; else GPUOPS_ERR_UNSUPPORTED): the warp-specialized kernel the GEMM
                    family's WGMMA version also runs, w loaded by the TMA, the tiles of x
                    gathered by a producer warpgroup with cp.async (8 channels a copy,
                    zero-filled in the padding), bias and act in the GEMMs' epilogue. The same
                    rules as MMA_SYNC (f16 / bf16, NHWC, C % 8 == 0, x and w 16-byte aligned).
     AUTO           f16 / bf16: WGMMA where it can run, except for a 1x1 filter at stride 1
                    without padding with more than 128 filters (NHWC). Such a 1x1 layer is a
                    plain GEMM (x is the (N H W) x C matrix, y the (N H W) x K one), so AUTO
                    calls the GEMM family for it (gpuops_gemm_*, bias and act in its epilogue),
                    and for f32 from K = 128 the matrix multiply family (gpuops_matmul_f32, then
                    bias and act in place). Otherwise f32: IMPLICIT_GEMM; f16 / bf16: MMA_SYNC
                    where it can run (NHWC, 8.0+; the gathered form for C % 8 != 0 or
                    unaligned x, w), else IMPLICIT_GEMM. AUTO needs no workspace.
   Backward (f32, either layout, version IMPLICIT_GEMM = AUTO, implicit GEMMs on CUDA cores):
     bwd_data    dx = the gradient for x given dy = the gradient for the convolution's output
                 before bias and activation: dx(n, c, h, w) = sum over (k, r, s) of
                 dy(n, k, p, q) w(k, c, r, s) where h = p stride_h - pad_h + r dil_h (and w
                 likewise) for an integer p in [0, P): an implicit GEMM of (N H W) x C x (K R S);
                 for C <= 16 (an image's 3 channels), where that GEMM's tiles would be mostly
                 padding, one thread per element of dx over the taps that reach it.
     bwd_filter  dw(k, c, r, s) = sum over (n, p, q) of dy(n, k, p, q) x(n, c, h, w): an
                 implicit GEMM of K x (C R S) x (N P Q). (The bias gradient, the sum of dy over
                 n, p, q for each k, is a plain reduction and not part of this family.) Its
                 tiles of 128 x 128 are few where K and C R S are small (ResNet's first layers:
                 5 tiles at K 64, C 64, 3 x 3) while its reduction is long, so the reduction is
                 split over up to 512 blocks in all, each writing an f32 partial dw to the
                 workspace, and a second kernel adds the parts in a fixed order (the same bits
                 every run). gpuops_conv2d_bwd_filter_workspace_size(shape, algo) gives the
                 bytes: a rule of the shape alone, 0 where one block a tile fills the GPU.
   dx (dw) is written, never read; it may not overlap dy or w (x), nor the workspace. */
typedef enum gpuops_layout { GPUOPS_LAYOUT_NCHW = 0, GPUOPS_LAYOUT_NHWC = 1 } gpuops_layout;

/* The shape of a 2D convolution of image models (see above). */
typedef struct gpuops_conv2d_shape {
  int64_t n, c, h, w;                /* input: images, channels, height, width              */
  int64_t k, r, s;                   /* filters: count (output channels), height, width     */
  int64_t stride_h, stride_w;        /* >= 1                                                 */
  int64_t pad_h, pad_w;              /* zero padding on each side, >= 0                      */
  int64_t dil_h, dil_w;              /* dilation, >= 1                                       */
  gpuops_layout layout;              /* of x, w and y (and dx, dw, dy)                       */
} gpuops_conv2d_shape;

/* The output size P x Q of a shape into *p and *q (either may be NULL): GPUOPS_OK, or
   GPUOPS_ERR_INVALID_ARGUMENT for a shape the ops refuse (bad sizes, no output). */
GPUOPS_API gpuops_status gpuops_conv2d_out_size(const gpuops_conv2d_shape *shape, int64_t *p, int64_t *q);
/* Workspace bytes of gpuops_conv2d_{f32,f16,bf16} with this shape and version (enough for every
   dtype); 0 for versions that need none and for a shape the ops refuse. */
GPUOPS_API size_t gpuops_conv2d_workspace_size(const gpuops_conv2d_shape *shape, gpuops_algo algo);
/* Workspace bytes of gpuops_conv2d_bwd_filter_f32 with this shape and version; 0 where it needs
   none and for a shape the ops refuse. */
GPUOPS_API size_t gpuops_conv2d_bwd_filter_workspace_size(const gpuops_conv2d_shape *shape, gpuops_algo algo);

GPUOPS_API gpuops_status gpuops_conv1d_f32(float *y, const float *x, const float *f, int64_t n, int64_t fw, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_conv2d_plane_f32(float *y, const float *x, const float *f, int64_t h, int64_t w, int64_t fh, int64_t fw, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_conv2d_f32(float *y, const float *x, const float *w, const float *bias, const gpuops_conv2d_shape *shape, gpuops_activation act, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_conv2d_f16(gpuops_f16 *y, const gpuops_f16 *x, const gpuops_f16 *w, const gpuops_f16 *bias, const gpuops_conv2d_shape *shape, gpuops_activation act, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_conv2d_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, const gpuops_bf16 *w, const gpuops_bf16 *bias, const gpuops_conv2d_shape *shape, gpuops_activation act, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_conv2d_bwd_data_f32(float *dx, const float *dy, const float *w, const gpuops_conv2d_shape *shape, gpuops_algo algo, gpuops_stream stream);
GPUOPS_API gpuops_status gpuops_conv2d_bwd_filter_f32(float *dw, const float *dy, const float *x, const gpuops_conv2d_shape *shape, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream);

/* CPU references: the same arguments and checks on host memory, each output's sum in double,
   rounded once (the 16-bit forms: inputs widened exactly, one rounding to the storage type). */
GPUOPS_API gpuops_status gpuops_cpu_conv1d_f32(float *y, const float *x, const float *f, int64_t n, int64_t fw);
GPUOPS_API gpuops_status gpuops_cpu_conv2d_plane_f32(float *y, const float *x, const float *f, int64_t h, int64_t w, int64_t fh, int64_t fw);
GPUOPS_API gpuops_status gpuops_cpu_conv2d_f32(float *y, const float *x, const float *w, const float *bias, const gpuops_conv2d_shape *shape, gpuops_activation act);
GPUOPS_API gpuops_status gpuops_cpu_conv2d_f16(gpuops_f16 *y, const gpuops_f16 *x, const gpuops_f16 *w, const gpuops_f16 *bias, const gpuops_conv2d_shape *shape, gpuops_activation act);
GPUOPS_API gpuops_status gpuops_cpu_conv2d_bf16(gpuops_bf16 *y, const gpuops_bf16 *x, const gpuops_bf16 *w, const gpuops_bf16 *bias, const gpuops_conv2d_shape *shape, gpuops_activation act);
GPUOPS_API gpuops_status gpuops_cpu_conv2d_bwd_data_f32(float *dx, const float *dy, const float *w, const gpuops_conv2d_shape *shape);
GPUOPS_API gpuops_status gpuops_cpu_conv2d_bwd_filter_f32(float *dw, const float *dy, const float *x, const gpuops_conv2d_shape *shape);

/* Private: the largest filter of the learning-path versions (fw, fh <= 15) and the taps of the
   constant-memory buffer (gpuops_cuda.cuh section 11). */
#define GPUOPS__CONV_MAX_F 15
#define GPUOPS__CONV_CONST_TAPS (GPUOPS__CONV_MAX_F * GPUOPS__CONV_MAX_F)

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* GPUOPS_H */

/* ==== I. Implementation ===================================================================== */
#if defined(GPUOPS_IMPLEMENTATION) && !defined(GPUOPS__IMPLEMENTED)
#define GPUOPS__IMPLEMENTED

#include <math.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- I.1 Core: status, errors, names --------------------------------------------------------- */

const char *gpuops_status_string(gpuops_status status) {
  switch (status) {
  case GPUOPS_OK: return "ok";
  case GPUOPS_ERR_INVALID_ARGUMENT: return "invalid argument";
  case GPUOPS_ERR_UNSUPPORTED: return "unsupported by this op, device or build";
  case GPUOPS_ERR_MISALIGNED: return "misaligned pointer";
  case GPUOPS_ERR_WORKSPACE: return "workspace too small";
  case GPUOPS_ERR_CUDA: return "CUDA error (see gpuops_cuda_error)";
  case GPUOPS_ERR_NO_CUDA: return "built without CUDA (compile the implementation with nvcc)";
  }
  return "unknown status";
}

const char *gpuops_algo_name(gpuops_algo algo) {
#define GPUOPS__ALGO_NAME(N, V, S) case GPUOPS_ALGO_##N: return S;
  switch (algo) {
    GPUOPS_ALGO_LIST(GPUOPS__ALGO_NAME)
  default: break;
  }
#undef GPUOPS__ALGO_NAME
  return "?";
}

#if defined(__CUDACC__)
/* The CUDA error behind the last GPUOPS_ERR_CUDA of this host thread (CUDA's own last error is
   per thread too). Only code compiled by nvcc can set it. */
static thread_local int gpuops__last_cuda_error = 0;
int gpuops_cuda_error(void) { return gpuops__last_cuda_error; }
#else
int gpuops_cuda_error(void) { return 0; }
#endif

/* ---- I.1 Core: half-precision conversions ---------------------------------------------------- */

static uint32_t gpuops__f32_bits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
static float gpuops__bits_f32(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }

float gpuops_f16_to_f32(gpuops_f16 h) {
  uint32_t sign = (uint32_t)(h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu, mant = h.bits & 0x3ffu;
  if (exp == 0) { /* zero or subnormal: mant * 2^-24, exact in f32 */
    float v = (float)mant * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return gpuops__bits_f32(sign | 0x7f800000u | (mant << 13));
  return gpuops__bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

gpuops_f16 gpuops_f32_to_f16(float f) {
  uint32_t x = gpuops__f32_bits(f), a = x & 0x7fffffffu;
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  gpuops_f16 h;
  if (a > 0x7f800000u) {                       /* NaN: quiet it, keep the top payload bits */
    h.bits = (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  } else if (a >= 0x477ff000u) {               /* >= 65520 rounds past 65504: infinity     */
    h.bits = (uint16_t)(sign | 0x7c00u);
  } else if (a >= 0x38800000u) {               /* normal: rebias, round the 13 dropped bits */
    uint32_t r = a - 0x38000000u;
    r += 0x0fffu + ((r >> 13) & 1u);
    h.bits = (uint16_t)(sign | (r >> 13));
  } else if (a <= 0x33000000u) {               /* <= 2^-25: rounds to zero (ties to even)  */
    h.bits = sign;
  } else {                                     /* subnormal: round(|f| * 2^24)              */
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    h.bits = (uint16_t)(sign | q);
  }
  return h;
}

float gpuops_bf16_to_f32(gpuops_bf16 h) { return gpuops__bits_f32((uint32_t)h.bits << 16); }

gpuops_bf16 gpuops_f32_to_bf16(float f) {
  uint32_t x = gpuops__f32_bits(f);
  gpuops_bf16 h;
  if ((x & 0x7fffffffu) > 0x7f800000u) h.bits = (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  else h.bits = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  return h;
}

/* ---- I.1 Core: the argument checks and the host skeleton every family uses ------------------ */
/* static inline: a program that compiles one family leaves the others' helpers unused. */

/* Bytes of one element of a storage type. */
static inline size_t gpuops__dtype_size(gpuops__dtype dt) {
  switch (dt) {
  case GPUOPS__F16: case GPUOPS__BF16: return 2;
  case GPUOPS__I64: return 8;
  case GPUOPS__I8: return 1;
  default: return 4;
  }
}

/* Element i of an array of storage type dt, as double (the CPU implementations' arithmetic). */
static inline double gpuops__cpu_ld(gpuops__dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case GPUOPS__F32: return ((const float *)p)[i];
  case GPUOPS__F16: return gpuops_f16_to_f32(((const gpuops_f16 *)p)[i]);
  case GPUOPS__BF16: return gpuops_bf16_to_f32(((const gpuops_bf16 *)p)[i]);
  case GPUOPS__I32: return ((const int32_t *)p)[i];
  case GPUOPS__I64: return (double)((const int64_t *)p)[i];
  case GPUOPS__I8: return ((const int8_t *)p)[i];
  }
  return 0.0;
}

/* Store v into element i, rounded once to a floating-point storage type (through f32 for the
   16-bit types); integer types take v truncated, which the caller keeps in range. */
static inline void gpuops__cpu_st(gpuops__dtype dt, void *p, int64_t i, double v) {
  switch (dt) {
  case GPUOPS__F32: ((float *)p)[i] = (float)v; break;
  case GPUOPS__F16: ((gpuops_f16 *)p)[i] = gpuops_f32_to_f16((float)v); break;
  case GPUOPS__BF16: ((gpuops_bf16 *)p)[i] = gpuops_f32_to_bf16((float)v); break;
  case GPUOPS__I32: ((int32_t *)p)[i] = (int32_t)v; break;
  case GPUOPS__I64: ((int64_t *)p)[i] = (int64_t)v; break;
  case GPUOPS__I8: ((int8_t *)p)[i] = (int8_t)v; break;
  }
}

/* p aligned to `align` bytes (a power of two: an element size, 16 for a vector). */
static inline int gpuops__aligned(const void *p, size_t align) { return ((uintptr_t)p % align) == 0; }

/* n * size in bytes, or SIZE_MAX when it does not fit. */
static inline size_t gpuops__bytes(int64_t n, size_t size) {
  return (n < 0 || (uint64_t)n > (uint64_t)SIZE_MAX / size) ? SIZE_MAX : (size_t)n * size;
}

/* rows * cols into *n: GPUOPS_ERR_INVALID_ARGUMENT for a negative size or a product past int64_t. */
static inline gpuops_status gpuops__matrix(int64_t rows, int64_t cols, int64_t *n) {
  if (rows < 0 || cols < 0 || (cols > 0 && rows > INT64_MAX / cols)) return GPUOPS_ERR_INVALID_ARGUMENT;
  *n = rows * cols;
  return GPUOPS_OK;
}

/* Elements from the first to one past the last of a rows x cols matrix with row stride ld (ld >= 1):
   0 when empty, -1 when it does not fit int64_t. */
static inline int64_t gpuops__span(int64_t rows, int64_t cols, int64_t ld) {
  if (rows == 0 || cols == 0) return 0;
  if (rows - 1 > (INT64_MAX - cols) / ld) return -1;
  return (rows - 1) * ld + cols;
}

/* The shape of C = op(A) op(B) (m x n x k) as stored, for the matrix-multiply families: A is m x k
   (OP_N) or k x m (OP_T), B is k x n or n x k; rc gets {A's rows, A's columns, B's rows, B's
   columns}. 1 when every leading dimension is >= 1 and covers its stored row (ldc >= n). */
static inline int gpuops__product_lds(int64_t m, int64_t n, int64_t k, gpuops_op op_a, gpuops_op op_b, int64_t lda, int64_t ldb, int64_t ldc,
                                      int64_t rc[4]) {
  rc[0] = op_a == GPUOPS_OP_N ? m : k;
  rc[1] = op_a == GPUOPS_OP_N ? k : m;
  rc[2] = op_b == GPUOPS_OP_N ? k : n;
  rc[3] = op_b == GPUOPS_OP_N ? n : k;
  return lda >= 1 && lda >= rc[1] && ldb >= 1 && ldb >= rc[3] && ldc >= 1 && ldc >= n;
}

/* The one overlap rule. The byte ranges [p, p + pb) and [q, q + qb) overlap (an empty or NULL
   range overlaps nothing). same_ok: two ranges that start at the same address are the same array,
   which an op that may run in place accepts (y == x); every other overlap is an error. */
static inline int gpuops__overlap(const void *p, size_t pb, const void *q, size_t qb, int same_ok) {
  uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
  if (!p || !q || pb == 0 || qb == 0 || (same_ok && a == b)) return 0;
  return a < b + qb && b < a + pb;
}

/* The one test of an algo argument: a value outside the list is GPUOPS_ERR_INVALID_ARGUMENT; a
   version the family does not have is GPUOPS_ERR_UNSUPPORTED. `versions` is the family's set, an
   OR of GPUOPS__ALGO_BIT(NAME); AUTO is always in it. */
#define GPUOPS__ALGO_BIT(N) (1ull << GPUOPS_ALGO_##N)
static inline int gpuops__algo_listed(gpuops_algo algo) {
#define GPUOPS__ALGO_CASE(N, V, S) case GPUOPS_ALGO_##N:
  switch (algo) {
    GPUOPS_ALGO_LIST(GPUOPS__ALGO_CASE) return 1;
  default: return 0;
  }
#undef GPUOPS__ALGO_CASE
}
static inline gpuops_status gpuops__check_algo(gpuops_algo algo, unsigned long long versions) {
  if ((int)algo < 0 || (int)algo >= GPUOPS_ALGO_COUNT_ || !gpuops__algo_listed(algo)) return GPUOPS_ERR_INVALID_ARGUMENT;
  return ((versions | GPUOPS__ALGO_BIT(AUTO)) >> (int)algo) & 1ull ? GPUOPS_OK : GPUOPS_ERR_UNSUPPORTED;
}

/* The one workspace rule: when an op needs `need` > 0 bytes, the caller's workspace must hold
   them (GPUOPS_ERR_WORKSPACE), start GPUOPS_WORKSPACE_ALIGN-byte aligned (GPUOPS_ERR_MISALIGNED;
   cudaMalloc gives 256) and overlap none of the op's arrays, given as up to two byte ranges
   (GPUOPS_ERR_INVALID_ARGUMENT). need == 0: the workspace is not looked at (it may be NULL). */
static inline gpuops_status gpuops__check_workspace(const void *ws, size_t ws_bytes, size_t need, const void *p, size_t pb,
                                                    const void *q, size_t qb) {
  if (need == 0) return GPUOPS_OK;
  if (!ws || ws_bytes < need) return GPUOPS_ERR_WORKSPACE;
  if (!gpuops__aligned(ws, GPUOPS_WORKSPACE_ALIGN)) return GPUOPS_ERR_MISALIGNED;
  if (gpuops__overlap(ws, need, p, pb, 0) || gpuops__overlap(ws, need, q, qb, 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
  return GPUOPS_OK;
}

/* The host skeleton of a family, written once. A family FAM has an argument struct ARGS, a check
   gpuops__FAM_check(p) (every test the host can make), and a launcher gpuops__FAM_launch(p),
   defined by gpuops_cuda.cuh under nvcc; compiled by a plain C compiler the launcher is a stub
   that returns GPUOPS_ERR_NO_CUDA. GPUOPS__FAMILY_GPU defines gpuops__FAM_gpu(p): check on the
   host, return at once for an empty call (EMPTY, an expression of p), else launch. */
#if defined(__CUDACC__)
#define GPUOPS__LAUNCH_STUB(FAM, ARGS)
#else
#define GPUOPS__LAUNCH_STUB(FAM, ARGS) \
  gpuops_status gpuops__##FAM##_launch(const ARGS *p) { (void)p; return GPUOPS_ERR_NO_CUDA; }
#endif
#define GPUOPS__FAMILY_GPU(FAM, ARGS, EMPTY)                \
  gpuops_status gpuops__##FAM##_launch(const ARGS *p);      \
  GPUOPS__LAUNCH_STUB(FAM, ARGS)                            \
  static gpuops_status gpuops__##FAM##_gpu(const ARGS *p) { \
    gpuops_status st = gpuops__##FAM##_check(p);            \
    if (st != GPUOPS_OK || (EMPTY)) return st;              \
    return gpuops__##FAM##_launch(p);                       \
  }

/* The activations in double, the CPU side of gpuops_activation (every family's reference). */
static inline double gpuops__cpu_gelu(double x, int tanh_form) {
  if (tanh_form) return x / (1.0 + exp(-2.0 * 0.7978845608028654 * (x + 0.044715 * x * x * x)));
  return 0.5 * x * erfc(-x * 0.70710678118654752);
}

static inline double gpuops__cpu_gelu_grad(double x, int tanh_form) {
  if (tanh_form) {
    /* With s = sigmoid(2u) = (1 + tanh u) / 2 the derivative is s + 2 x s (1 - s) u': no 1 - tanh^2
       cancellation in the tails, and where s saturates the second term is exactly 0. */
    double u = 0.7978845608028654 * (x + 0.044715 * x * x * x), s = 1.0 / (1.0 + exp(-2.0 * u)), k = 2.0 * s * (1.0 - s);
    return s + (k == 0.0 ? 0.0 : x * k * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x));
  }
  return 0.5 * erfc(-x * 0.70710678118654752) + x * exp(-0.5 * x * x) * 0.3989422804014327;
}

static inline double gpuops__cpu_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
/* sigmoid' = e / (1 + e)^2 and tanh' = 4 e / (1 + e)^2 with e = exp(-|x|), exp(-2|x|): the forms
   without the cancellation of 1 - s and 1 - t^2 in the tails. */
static inline double gpuops__cpu_sigmoid_grad(double x) {
  const double e = exp(-fabs(x)), q = 1.0 + e;
  return e / (q * q);
}
static inline double gpuops__cpu_tanh_grad(double x) {
  const double e = exp(-2.0 * fabs(x)), q = 1.0 + e;
  return 4.0 * e / (q * q);
}
/* act(x) and act'(x) for a gpuops_activation (NONE: x and 1). */
static inline double gpuops__cpu_activate(double x, int act) {
  switch (act) {
  case GPUOPS_ACT_GELU_ERF: return gpuops__cpu_gelu(x, 0);
  case GPUOPS_ACT_GELU_TANH: return gpuops__cpu_gelu(x, 1);
  case GPUOPS_ACT_SILU: return x * gpuops__cpu_sigmoid(x);
  case GPUOPS_ACT_RELU: return x < 0.0 ? 0.0 : x;
  default: return x;
  }
}
static inline double gpuops__cpu_activate_grad(double x, int act) {
  switch (act) {
  case GPUOPS_ACT_GELU_ERF: return gpuops__cpu_gelu_grad(x, 0);
  case GPUOPS_ACT_GELU_TANH: return gpuops__cpu_gelu_grad(x, 1);
  case GPUOPS_ACT_SILU: return gpuops__cpu_sigmoid(x) * (1.0 + x * (1.0 - gpuops__cpu_sigmoid(x)));
  case GPUOPS_ACT_RELU: return x <= 0.0 ? 0.0 : 1.0;
  default: return 1.0;
  }
}

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- I.2 Elementwise ------------------------------------------------------------------------ */
#ifndef GPUOPS_NO_ELEMENTWISE

#ifdef __cplusplus
extern "C" {
#endif

/* The op enum and its properties, from the registry. */
#define GPUOPS__EW_ENUM(OP, name, SIG, INPUTS, FUSED, LO, HI, CPU) GPUOPS__EW_##OP,
typedef enum gpuops__ew_op { GPUOPS__EW_OPS(GPUOPS__EW_ENUM) } gpuops__ew_op;
#undef GPUOPS__EW_ENUM

/* One elementwise call, as the checks, the CPU loop and the GPU launcher see it. y is the
   output; a and b the inputs (b NULL for one-input ops); for axpy a is x and b is y. The
   quantizers' int8 side is y (quantize) or a (dequantize). Per-channel ops set scale_c and
   zero_point_c and view the n = outer * channels * inner elements as [outer, channels, inner];
   per-tensor ops have channels = inner = 1. */
typedef struct gpuops__ew_args {
  gpuops__ew_op op;
  gpuops__dtype dt;
  void *y;
  const void *a, *b;
  int64_t n, channels, inner;
  float s;                 /* add_scalar's s, axpy's a, add_mul_exp's s, the per-tensor scale */
  int32_t zero_point;      /* per-tensor zero point                                           */
  int gelu_tanh;           /* GELU: 1 for the tanh form                                       */
  int per_channel;         /* quantizers: scale_c and zero_point_c hold one value per channel */
  const float *scale_c;    /* per-channel scales (device memory for the GPU forms)            */
  const int32_t *zero_point_c;
  void *workspace;
  size_t workspace_bytes;
  gpuops_algo algo;
  gpuops_stream stream;
} gpuops__ew_args;

static gpuops__ew_args gpuops__ew_make(gpuops__ew_op op, gpuops__dtype dt, void *y, const void *a, const void *b, int64_t n) {
  gpuops__ew_args p;
  memset(&p, 0, sizeof p);
  p.op = op; p.dt = dt; p.y = y; p.a = a; p.b = b;
  p.n = n; p.channels = 1; p.inner = 1;
  p.algo = GPUOPS_ALGO_AUTO;
  return p;
}

/* Floating-point inputs read, and whether the op has an UNFUSED version. */
static int gpuops__ew_inputs(gpuops__ew_op op) {
#define GPUOPS__EW_INPUTS(OP, name, SIG, INPUTS, FUSED, LO, HI, CPU) case GPUOPS__EW_##OP: return INPUTS;
  switch (op) { GPUOPS__EW_OPS(GPUOPS__EW_INPUTS) default: break; }
#undef GPUOPS__EW_INPUTS
  return 0;
}
static int gpuops__ew_fused(gpuops__ew_op op) {
#define GPUOPS__EW_FUSED(OP, name, SIG, INPUTS, FUSED, LO, HI, CPU) case GPUOPS__EW_##OP: return FUSED;
  switch (op) { GPUOPS__EW_OPS(GPUOPS__EW_FUSED) default: break; }
#undef GPUOPS__EW_FUSED
  return 0;
}

/* Storage types of y and a (the int8 side of the quantizers), and whether b is read. */
static gpuops__dtype gpuops__ew_ydt(const gpuops__ew_args *p) { return p->op == GPUOPS__EW_QUANTIZE ? GPUOPS__I8 : p->dt; }
static gpuops__dtype gpuops__ew_adt(const gpuops__ew_args *p) { return p->op == GPUOPS__EW_DEQUANTIZE ? GPUOPS__I8 : p->dt; }
static int gpuops__ew_has_b(gpuops__ew_op op) { return gpuops__ew_inputs(op) == 2; }

size_t gpuops_quantize_workspace_size(int64_t n, gpuops_algo algo) {
  return (algo == GPUOPS_ALGO_UNFUSED && n > 0) ? gpuops__bytes(n, sizeof(float)) : 0;
}

/* The family's versions (UNFUSED only for the fused ops). */
#define GPUOPS__EW_ALGOS (GPUOPS__ALGO_BIT(NAIVE) | GPUOPS__ALGO_BIT(GRID_STRIDE) | GPUOPS__ALGO_BIT(VECTORIZED))

/* Every check that can be made on the host, in the order the header promises: sizes, enums and
   scalars first, then (for n > 0) pointers, alignment, overlap and workspace. */
static gpuops_status gpuops__ew_check(const gpuops__ew_args *p) {
  const size_t ys = gpuops__dtype_size(gpuops__ew_ydt(p)), as = gpuops__dtype_size(gpuops__ew_adt(p));
  const size_t bs = p->b ? gpuops__dtype_size(p->dt) : 0;
  const int quant = p->op == GPUOPS__EW_QUANTIZE || p->op == GPUOPS__EW_DEQUANTIZE;
  gpuops_status st;
  size_t yb, ab, bb;
  if (p->n < 0 || p->channels < 0 || p->inner < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  st = gpuops__check_algo(p->algo, GPUOPS__EW_ALGOS | (gpuops__ew_fused(p->op) ? GPUOPS__ALGO_BIT(UNFUSED) : 0));
  if (st != GPUOPS_OK) return st;
  if (p->gelu_tanh != 0 && p->gelu_tanh != 1) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (quant && !p->per_channel && (!(p->s > 0.0f) || !isfinite(p->s) || p->zero_point < -128 || p->zero_point > 127))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->n == 0) return GPUOPS_OK;
  if (!p->y || !p->a || (gpuops__ew_has_b(p->op) && !p->b)) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->per_channel && (!p->scale_c || !p->zero_point_c)) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__aligned(p->y, ys) || !gpuops__aligned(p->a, as) || (p->b && !gpuops__aligned(p->b, bs)))
    return GPUOPS_ERR_MISALIGNED;
  if (p->per_channel && (!gpuops__aligned(p->scale_c, sizeof(float)) || !gpuops__aligned(p->zero_point_c, sizeof(int32_t))))
    return GPUOPS_ERR_MISALIGNED;
  yb = gpuops__bytes(p->n, ys); ab = gpuops__bytes(p->n, as); bb = p->b ? gpuops__bytes(p->n, bs) : 0;
  if (yb == SIZE_MAX || ab == SIZE_MAX || bb == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (gpuops__overlap(p->y, yb, p->a, ab, 1) || gpuops__overlap(p->y, yb, p->b, bb, 1)) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->op == GPUOPS__EW_QUANTIZE)
    return gpuops__check_workspace(p->workspace, p->workspace_bytes, gpuops_quantize_workspace_size(p->n, p->algo), p->y, yb,
                                   p->a, ab);
  return GPUOPS_OK;
}

/* Per-channel sizes: n = outer * channels * inner, which must fit int64_t. */
static gpuops_status gpuops__ew_per_channel(gpuops__ew_args *p, const float *scale, const int32_t *zero_point,
                                            int64_t outer, int64_t channels, int64_t inner) {
  int64_t n;
  if (channels < 0 || inner < 0 || gpuops__matrix(channels, inner, &n) != GPUOPS_OK || gpuops__matrix(outer, n, &n) != GPUOPS_OK)
    return GPUOPS_ERR_INVALID_ARGUMENT;
  p->n = n;
  p->channels = channels > 0 ? channels : 1; /* n == 0 then: nothing is read */
  p->inner = inner > 0 ? inner : 1;
  p->per_channel = 1;
  p->scale_c = scale; p->zero_point_c = zero_point;
  return GPUOPS_OK;
}

/* The f32 quantizer shared by every form: round half to even, clamp; NaN goes to -128. */
static int8_t gpuops__quantize1(float x, float scale, float zero_point) {
  float v = nearbyintf(x / scale + zero_point);
  return (int8_t)fminf(fmaxf(v, -128.0f), 127.0f);
}

/* The CPU loop: each element in double through the registry's CPU form, rounded once. */
static gpuops_status gpuops__ew_cpu(const gpuops__ew_args *p) {
  gpuops_status st = gpuops__ew_check(p);
  const gpuops__dtype ydt = gpuops__ew_ydt(p), adt = gpuops__ew_adt(p);
  const int has_b = gpuops__ew_has_b(p->op);
  int64_t i;
  if (st != GPUOPS_OK || p->n == 0) return st;
  if (p->per_channel) /* the host can read the scales here */
    for (i = 0; i < p->channels; ++i)
      if (!(p->scale_c[i] > 0.0f) || !isfinite(p->scale_c[i]) || p->zero_point_c[i] < -128 || p->zero_point_c[i] > 127)
        return GPUOPS_ERR_INVALID_ARGUMENT;
  for (i = 0; i < p->n; ++i) {
    const double x = gpuops__cpu_ld(adt, p->a, i), b = has_b ? gpuops__cpu_ld(p->dt, p->b, i) : 0.0;
    const int64_t c = (i / p->inner) % p->channels;
    const float scale = p->per_channel ? p->scale_c[c] : p->s;
    const int32_t zp = p->per_channel ? p->zero_point_c[c] : p->zero_point;
    double r = 0.0;
    (void)b; (void)scale; (void)zp;
    switch (p->op) {
#define GPUOPS__EW_CPU_CASE(OP, name, SIG, INPUTS, FUSED, LO, HI, CPU) case GPUOPS__EW_##OP: r = (CPU); break;
      GPUOPS__EW_OPS(GPUOPS__EW_CPU_CASE)
#undef GPUOPS__EW_CPU_CASE
    default: return GPUOPS_ERR_INVALID_ARGUMENT;
    }
    gpuops__cpu_st(ydt, p->y, i, r);
  }
  return GPUOPS_OK;
}

GPUOPS__FAMILY_GPU(ew, gpuops__ew_args, p->n == 0)

/* -- The C entry points, generated from the registry: one shape per SIG, each for every float
   storage type. PARAMS: the parameters both forms take; GEXTRA: those only the GPU form takes
   before algo and stream (with a leading comma); MAKE: the call's arguments; SET, GSET: what
   both forms, and the GPU form alone, set in them. -- */
#define GPUOPS__EW_PAIR(name, S, PARAMS, GEXTRA, MAKE, SET, GSET)                                                      \
  gpuops_status gpuops_##name##_##S(GPUOPS__EXPAND PARAMS GPUOPS__EXPAND GEXTRA, gpuops_algo algo, gpuops_stream stream) { \
    gpuops__ew_args p = MAKE;                                                                                          \
    SET; GSET; p.algo = algo; p.stream = stream;                                                                       \
    return gpuops__ew_gpu(&p);                                                                                         \
  }                                                                                                                    \
  gpuops_status gpuops_cpu_##name##_##S(GPUOPS__EXPAND PARAMS) {                                                       \
    gpuops__ew_args p = MAKE;                                                                                          \
    SET;                                                                                                               \
    return gpuops__ew_cpu(&p);                                                                                         \
  }
#define GPUOPS__EW_MAKE(OP, D, Y, A, B, N) gpuops__ew_make(GPUOPS__EW_##OP, D, Y, A, B, N)
#define GPUOPS__EW_SET_GELU p.gelu_tanh = (approx == GPUOPS_GELU_TANH) ? 1 : (approx == GPUOPS_GELU_ERF ? 0 : -1)

#define GPUOPS__EW_DEF_UNARY(OP, name, S, T, D)                                                                        \
  GPUOPS__EW_PAIR(name, S, (T *y, const T *x, int64_t n), (), GPUOPS__EW_MAKE(OP, D, y, x, NULL, n), (void)0, (void)0)
#define GPUOPS__EW_DEF_GRAD(OP, name, S, T, D)                                                                         \
  GPUOPS__EW_PAIR(name, S, (T *dx, const T *dy, const T *x, int64_t n), (), GPUOPS__EW_MAKE(OP, D, dx, dy, x, n), (void)0, (void)0)
#define GPUOPS__EW_DEF_BINARY(OP, name, S, T, D)                                                                       \
  GPUOPS__EW_PAIR(name, S, (T *c, const T *a, const T *b, int64_t n), (), GPUOPS__EW_MAKE(OP, D, c, a, b, n), (void)0, (void)0)
#define GPUOPS__EW_DEF_SCALAR(OP, name, S, T, D)                                                                       \
  GPUOPS__EW_PAIR(name, S, (T *y, const T *x, int64_t n, float s), (), GPUOPS__EW_MAKE(OP, D, y, x, NULL, n), p.s = s, (void)0)
#define GPUOPS__EW_DEF_AXPY(OP, name, S, T, D)                                                                         \
  GPUOPS__EW_PAIR(name, S, (T *y, const T *x, int64_t n, float a), (), GPUOPS__EW_MAKE(OP, D, y, x, y, n), p.s = a, (void)0)
#define GPUOPS__EW_DEF_BINARY_SCALAR(OP, name, S, T, D)                                                                \
  GPUOPS__EW_PAIR(name, S, (T *y, const T *x, const T *z, int64_t n, float s), (), GPUOPS__EW_MAKE(OP, D, y, x, z, n), p.s = s, (void)0)
#define GPUOPS__EW_DEF_GELU_FWD(OP, name, S, T, D)                                                                     \
  GPUOPS__EW_PAIR(name, S, (T *y, const T *x, int64_t n, gpuops_gelu_approx approx), (), GPUOPS__EW_MAKE(OP, D, y, x, NULL, n), \
                  GPUOPS__EW_SET_GELU, (void)0)
#define GPUOPS__EW_DEF_GELU_BWD(OP, name, S, T, D)                                                                     \
  GPUOPS__EW_PAIR(name, S, (T *dx, const T *dy, const T *x, int64_t n, gpuops_gelu_approx approx), (),                 \
                  GPUOPS__EW_MAKE(OP, D, dx, dy, x, n), GPUOPS__EW_SET_GELU, (void)0)
/* The quantizers, per tensor and per channel (whose sizes are checked before anything else). */
#define GPUOPS__EW_WS (, void *workspace, size_t workspace_bytes)
#define GPUOPS__EW_SET_WS p.workspace = workspace; p.workspace_bytes = workspace_bytes
#define GPUOPS__EW_SET_QP p.s = scale; p.zero_point = zero_point
#define GPUOPS__EW_PC_PARAMS const float *scale, const int32_t *zero_point, int64_t outer, int64_t channels, int64_t inner
#define GPUOPS__EW_SET_PC                                                                                              \
  {                                                                                                                    \
    gpuops_status st = gpuops__ew_per_channel(&p, scale, zero_point, outer, channels, inner);                          \
    if (st != GPUOPS_OK) return st;                                                                                    \
  }
#define GPUOPS__EW_DEF_QUANTIZE(OP, name, S, T, D)                                                                     \
  GPUOPS__EW_PAIR(name, S, (int8_t *q, const T *x, int64_t n, float scale, int32_t zero_point), GPUOPS__EW_WS,          \
                  GPUOPS__EW_MAKE(OP, D, q, x, NULL, n), GPUOPS__EW_SET_QP, GPUOPS__EW_SET_WS)                         \
  GPUOPS__EW_PAIR(name##_per_channel, S, (int8_t *q, const T *x, GPUOPS__EW_PC_PARAMS), GPUOPS__EW_WS,                  \
                  GPUOPS__EW_MAKE(OP, D, q, x, NULL, 0), GPUOPS__EW_SET_PC, GPUOPS__EW_SET_WS)
#define GPUOPS__EW_DEF_DEQUANTIZE(OP, name, S, T, D)                                                                   \
  GPUOPS__EW_PAIR(name, S, (T *x, const int8_t *q, int64_t n, float scale, int32_t zero_point), (),                    \
                  GPUOPS__EW_MAKE(OP, D, x, q, NULL, n), GPUOPS__EW_SET_QP, (void)0)                                  \
  GPUOPS__EW_PAIR(name##_per_channel, S, (T *x, const int8_t *q, GPUOPS__EW_PC_PARAMS), (),                            \
                  GPUOPS__EW_MAKE(OP, D, x, q, NULL, 0), GPUOPS__EW_SET_PC, (void)0)

/* Every registry row x every float storage type: the row rides along as the type list's context. */
#define GPUOPS__EW_DEF_TYPE(S, T, D, ROW) GPUOPS__EW_DEF_TYPE_(S, T, D, GPUOPS__EXPAND ROW)
#define GPUOPS__EW_DEF_TYPE_(...) GPUOPS__EW_DEF_TYPE__(__VA_ARGS__)
#define GPUOPS__EW_DEF_TYPE__(S, T, D, OP, name, SIG) GPUOPS__EW_DEF_##SIG(OP, name, S, T, D)
#define GPUOPS__EW_DEF_ROW(OP, name, SIG, INPUTS, FUSED, LO, HI, CPU) GPUOPS__FLOAT_TYPES(GPUOPS__EW_DEF_TYPE, (OP, name, SIG))
GPUOPS__EW_OPS(GPUOPS__EW_DEF_ROW)

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* GPUOPS_NO_ELEMENTWISE */


/* ---- I.3 Reductions and histogram ----------------------------------------------------------- */
#ifndef GPUOPS_NO_REDUCE
#ifdef __cplusplus
extern "C" {
#endif

/* Sizes the host checks and the launchers share. Threads per block of every reduction and
   histogram kernel; partials of the fast vector pass at most (grid <= 2048 blocks: 8 resident
   blocks on up to 256 SMs); elements one block of the fast pass takes at least per partial
   (4 elements per 128-bit vector, 4 vectors in flight, 256 threads). Histogram: 32-bit shared
   counters per block (48 KB, no opt-in needed on any device), bins with one sub-histogram per
   warp, and the bin ranges RUN_AGGREGATE reads x for before it goes to global atomics. */
#define GPUOPS__REDUCE_BLOCK 256
#define GPUOPS__REDUCE_MAX_PARTIALS 2048
#define GPUOPS__REDUCE_FAST_PER_BLOCK 4096
#define GPUOPS__HIST_SHARED_BINS 12288
#define GPUOPS__HIST_WARP_BINS 1536
#define GPUOPS__HIST_RANGES_MAX 8

/* The registry (private): GPUOPS__RED_KINDS(X) calls X(KIND, VERSIONS) for each kind of call,
   VERSIONS being the set of gpuops_algo it has (AUTO is always in it). */
#define GPUOPS__RED_TREE_ALGOS \
  (GPUOPS__ALGO_BIT(INTERLEAVED) | GPUOPS__ALGO_BIT(SEQUENTIAL) | GPUOPS__ALGO_BIT(FIRST_ADD) | GPUOPS__ALGO_BIT(WARP_SHUFFLE))
#define GPUOPS__RED_KINDS(X)                                             \
  X(VECTOR, GPUOPS__RED_TREE_ALGOS | GPUOPS__ALGO_BIT(WARP_REDUCE))      \
  X(ROWS, GPUOPS__ALGO_BIT(WARP_REDUCE))                                 \
  X(HISTOGRAM, GPUOPS__ALGO_BIT(GLOBAL_ATOMIC) | GPUOPS__ALGO_BIT(SHARED_ATOMIC) | GPUOPS__ALGO_BIT(RUN_AGGREGATE))
#define GPUOPS__RED_ENUM(KIND, VERSIONS) GPUOPS__RED_##KIND,
typedef enum gpuops__red_kind { GPUOPS__RED_KINDS(GPUOPS__RED_ENUM) } gpuops__red_kind; /* (C99 allows the trailing comma) */
#undef GPUOPS__RED_ENUM

/* One reduction or histogram call. x has n elements (rows * cols for rows; a vector is 1 x n).
   out is float (one, or rows of them) or the int64 counts (bins of them). host: a CPU form
   (no workspace). */
typedef struct gpuops__red_args {
  gpuops__red_kind kind;
  gpuops__dtype dt;
  void *out;
  const void *x;
  int64_t n, rows, cols;
  gpuops_reduce_op op;
  int32_t bins;
  int host;
  void *workspace;
  size_t workspace_bytes;
  gpuops_algo algo;
  gpuops_stream stream;
} gpuops__red_args;

static gpuops__red_args gpuops__red_make(gpuops__red_kind kind, gpuops__dtype dt, void *out, const void *x, int64_t n) {
  gpuops__red_args p;
  memset(&p, 0, sizeof p);
  p.kind = kind; p.dt = dt; p.out = out; p.x = x;
  p.n = n; p.rows = 1; p.cols = n;
  p.op = GPUOPS_REDUCE_SUM; p.bins = 1;
  p.algo = GPUOPS_ALGO_AUTO;
  return p;
}

/* rows x cols, which must fit int64_t. */
static gpuops_status gpuops__red_matrix(gpuops__red_args *p, int64_t rows, int64_t cols) {
  p->rows = rows; p->cols = cols;
  return gpuops__matrix(rows, cols, &p->n);
}

static int gpuops__red_is_tree(gpuops_algo a) { return (int)a >= 0 && (int)a < 64 && ((GPUOPS__RED_TREE_ALGOS >> (int)a) & 1ull); }

/* The versions a kind of call has. */
static unsigned long long gpuops__red_versions(gpuops__red_kind kind) {
#define GPUOPS__RED_VERSIONS(KIND, VERSIONS) case GPUOPS__RED_##KIND: return VERSIONS;
  switch (kind) { GPUOPS__RED_KINDS(GPUOPS__RED_VERSIONS) default: break; }
#undef GPUOPS__RED_VERSIONS
  return 0;
}

/* Partials of the fast pass over n values (the launcher never uses more). */
static int64_t gpuops__reduce_fast_blocks(int64_t n) {
  int64_t b = n <= 0 ? 0 : (n + GPUOPS__REDUCE_FAST_PER_BLOCK - 1) / GPUOPS__REDUCE_FAST_PER_BLOCK;
  return b < GPUOPS__REDUCE_MAX_PARTIALS ? b : GPUOPS__REDUCE_MAX_PARTIALS;
}

/* Blocks (= partials) of a tree version's first pass: 256 or 512 elements per block. */
static int64_t gpuops__reduce_tree_blocks(int64_t n, gpuops_algo algo) {
  int64_t per = (algo == GPUOPS_ALGO_FIRST_ADD || algo == GPUOPS_ALGO_WARP_SHUFFLE) ? 2 * GPUOPS__REDUCE_BLOCK : GPUOPS__REDUCE_BLOCK;
  return n <= 0 ? 0 : n / per + (n % per != 0);
}

/* Workspace in floats: the partials of the first pass, and for a tree version with more than
   GPUOPS__REDUCE_MAX_PARTIALS of them, the partials of one fast pass over those. */
static int64_t gpuops__reduce_workspace_floats(int64_t n, gpuops_algo algo) {
  int64_t p1;
  if (n <= 0) return 0;
  if (algo == GPUOPS_ALGO_AUTO || algo == GPUOPS_ALGO_WARP_REDUCE) return gpuops__reduce_fast_blocks(n);
  if (!gpuops__red_is_tree(algo)) return 0;
  p1 = gpuops__reduce_tree_blocks(n, algo);
  return p1 + (p1 > GPUOPS__REDUCE_MAX_PARTIALS ? gpuops__reduce_fast_blocks(p1) : 0);
}

size_t gpuops_reduce_workspace_size(int64_t n, gpuops_algo algo) {
  return gpuops__bytes(gpuops__reduce_workspace_floats(n, algo), sizeof(float));
}

/* Every check that can be made on the host: sizes, enums and scalars, then (when anything is
   written) pointers, alignment, overlap, the grid's limits and the workspace. */
static gpuops_status gpuops__red_check(const gpuops__red_args *p) {
  const int hist = p->kind == GPUOPS__RED_HISTOGRAM;
  const size_t xs = gpuops__dtype_size(p->dt), os = hist ? sizeof(int64_t) : sizeof(float);
  int64_t outs;
  size_t xb, ob;
  gpuops_status st;
  if (p->n < 0 || p->rows < 0 || p->cols < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (hist && p->bins < 1) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!hist && ((int)p->op < 0 || (int)p->op > 2)) return GPUOPS_ERR_INVALID_ARGUMENT;
  st = gpuops__check_algo(p->algo, gpuops__red_versions(p->kind));
  if (st != GPUOPS_OK) return st;
  outs = p->kind == GPUOPS__RED_VECTOR ? 1 : p->kind == GPUOPS__RED_ROWS ? p->rows : (int64_t)p->bins;
  if (outs == 0) return GPUOPS_OK; /* no rows: nothing is written */
  if (!p->out || (p->n > 0 && !p->x)) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__aligned(p->out, os) || (p->n > 0 && !gpuops__aligned(p->x, xs))) return GPUOPS_ERR_MISALIGNED;
  ob = gpuops__bytes(outs, os);
  xb = gpuops__bytes(p->n, xs);
  if (ob == SIZE_MAX || xb == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->n > 0 && gpuops__overlap(p->out, ob, p->x, xb, 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->host) return GPUOPS_OK;
  if (p->kind == GPUOPS__RED_VECTOR) {
    if (gpuops__red_is_tree(p->algo) && gpuops__reduce_tree_blocks(p->n, p->algo) > 0x7fffffff) return GPUOPS_ERR_UNSUPPORTED;
    st = gpuops__check_workspace(p->workspace, p->workspace_bytes, gpuops_reduce_workspace_size(p->n, p->algo), p->x, xb, p->out, ob);
    if (st != GPUOPS_OK) return st;
  }
  if (hist && p->algo == GPUOPS_ALGO_SHARED_ATOMIC &&
      (p->bins + (int64_t)GPUOPS__HIST_SHARED_BINS - 1) / GPUOPS__HIST_SHARED_BINS > 65535)
    return GPUOPS_ERR_UNSUPPORTED;
  return GPUOPS_OK;
}

/* op over count elements of x from base, in double; NaN propagates. */
static float gpuops__red_cpu_one(gpuops__dtype dt, const void *x, int64_t base, int64_t count, gpuops_reduce_op op) {
  double acc = op == GPUOPS_REDUCE_SUM ? 0.0 : op == GPUOPS_REDUCE_MAX ? -(double)INFINITY : (double)INFINITY;
  int64_t i;
  for (i = 0; i < count; ++i) {
    const double v = gpuops__cpu_ld(dt, x, base + i);
    if (v != v) return NAN;
    if (op == GPUOPS_REDUCE_SUM) acc += v;
    else if (op == GPUOPS_REDUCE_MAX ? v > acc : v < acc) acc = v;
  }
  return (float)acc;
}

static gpuops_status gpuops__red_cpu(const gpuops__red_args *p) {
  gpuops_status st = gpuops__red_check(p);
  int64_t i;
  if (st != GPUOPS_OK) return st;
  switch (p->kind) {
  case GPUOPS__RED_VECTOR: *(float *)p->out = gpuops__red_cpu_one(p->dt, p->x, 0, p->n, p->op); break;
  case GPUOPS__RED_ROWS:
    for (i = 0; i < p->rows; ++i) ((float *)p->out)[i] = gpuops__red_cpu_one(p->dt, p->x, i * p->cols, p->cols, p->op);
    break;
  case GPUOPS__RED_HISTOGRAM: {
    int64_t *counts = (int64_t *)p->out;
    const int32_t *x = (const int32_t *)p->x;
    memset(counts, 0, (size_t)p->bins * sizeof(int64_t));
    for (i = 0; i < p->n; ++i)
      if (x[i] >= 0 && x[i] < p->bins) ++counts[x[i]];
  } break;
  }
  return GPUOPS_OK;
}

/* A vector launches even for n == 0 (it writes the identity), and a histogram for n == 0 (it
   zeroes counts); rows == 0 launches nothing. */
GPUOPS__FAMILY_GPU(red, gpuops__red_args, p->kind == GPUOPS__RED_ROWS && p->rows == 0)

/* -- The public functions, written once for f32, f16 and bf16. -- */
#define GPUOPS__RED_DEF(S, T, D, C)                                                                                     \
  gpuops_status gpuops_reduce_##S(float *out, const T *x, int64_t n, gpuops_reduce_op op, void *workspace,             \
                                  size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream) {                    \
    gpuops__red_args p = gpuops__red_make(GPUOPS__RED_VECTOR, D, out, x, n);                                           \
    p.op = op; p.workspace = workspace; p.workspace_bytes = workspace_bytes; p.algo = algo; p.stream = stream;         \
    return gpuops__red_gpu(&p);                                                                                        \
  }                                                                                                                    \
  gpuops_status gpuops_cpu_reduce_##S(float *out, const T *x, int64_t n, gpuops_reduce_op op) {                        \
    gpuops__red_args p = gpuops__red_make(GPUOPS__RED_VECTOR, D, out, x, n);                                           \
    p.op = op; p.host = 1; return gpuops__red_cpu(&p);                                                                 \
  }                                                                                                                    \
  gpuops_status gpuops_reduce_rows_##S(float *out, const T *x, int64_t rows, int64_t cols, gpuops_reduce_op op,        \
                                       gpuops_algo algo, gpuops_stream stream) {                                       \
    gpuops__red_args p = gpuops__red_make(GPUOPS__RED_ROWS, D, out, x, 0);                                             \
    gpuops_status st = gpuops__red_matrix(&p, rows, cols);                                                             \
    p.op = op; p.algo = algo; p.stream = stream;                                                                       \
    return st != GPUOPS_OK ? st : gpuops__red_gpu(&p);                                                                 \
  }                                                                                                                    \
  gpuops_status gpuops_cpu_reduce_rows_##S(float *out, const T *x, int64_t rows, int64_t cols, gpuops_reduce_op op) {  \
    gpuops__red_args p = gpuops__red_make(GPUOPS__RED_ROWS, D, out, x, 0);                                             \
    gpuops_status st = gpuops__red_matrix(&p, rows, cols);                                                             \
    p.op = op; p.host = 1;                                                                                             \
    return st != GPUOPS_OK ? st : gpuops__red_cpu(&p);                                                                 \
  }

GPUOPS__FLOAT_TYPES(GPUOPS__RED_DEF, ~)

gpuops_status gpuops_histogram_i32(int64_t *counts, const int32_t *x, int64_t n, int32_t bins, gpuops_algo algo, gpuops_stream stream) {
  gpuops__red_args p = gpuops__red_make(GPUOPS__RED_HISTOGRAM, GPUOPS__I32, counts, x, n);
  p.bins = bins; p.algo = algo; p.stream = stream;
  return gpuops__red_gpu(&p);
}

gpuops_status gpuops_cpu_histogram_i32(int64_t *counts, const int32_t *x, int64_t n, int32_t bins) {
  gpuops__red_args p = gpuops__red_make(GPUOPS__RED_HISTOGRAM, GPUOPS__I32, counts, x, n);
  p.bins = bins; p.host = 1;
  return gpuops__red_cpu(&p);
}


#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* GPUOPS_NO_REDUCE */



/* ---- I.4 Prefix scan ------------------------------------------------------------------------ */
#ifndef GPUOPS_NO_SCAN
#ifdef __cplusplus
extern "C" {
#endif

/* One scan call, as the checks, the CPU loop and the GPU launcher see it. A segmented (rows)
   call has segmented = 1 and n = rows * cols; a plain scan has rows = 1, cols = n. */
typedef struct gpuops__scan_args {
  gpuops__dtype dt;
  void *y;
  const void *x;
  int64_t n, rows, cols;
  int segmented;
  int kind;                /* gpuops_scan_kind as given (checked) */
  void *workspace;
  size_t workspace_bytes;
  gpuops_algo algo;
  gpuops_stream stream;
} gpuops__scan_args;

static gpuops__scan_args gpuops__scan_make(gpuops__dtype dt, void *y, const void *x, int64_t rows, int64_t cols, int segmented,
                                           gpuops_scan_kind kind) {
  gpuops__scan_args p;
  memset(&p, 0, sizeof p);
  p.dt = dt; p.y = y; p.x = x; p.rows = rows; p.cols = cols; p.segmented = segmented; p.kind = (int)kind;
  if (gpuops__matrix(rows, cols, &p.n) != GPUOPS_OK) p.n = -1;
  p.algo = GPUOPS_ALGO_AUTO;
  return p;
}

/* The versions of a plain scan; the segmented scan has AUTO alone. */
#define GPUOPS__SCAN_ALGOS                                                                            \
  (GPUOPS__ALGO_BIT(HILLIS_STEELE) | GPUOPS__ALGO_BIT(BLELLOCH) | GPUOPS__ALGO_BIT(REDUCE_THEN_SCAN) | \
   GPUOPS__ALGO_BIT(DECOUPLED_LOOKBACK))

size_t gpuops_scan_workspace_size(int64_t n, gpuops_algo algo) {
  uint64_t u = (uint64_t)n, tiles = 0, b = 0;
  if (n <= 0) return 0;
  switch (algo) {
  case GPUOPS_ALGO_AUTO:
  case GPUOPS_ALGO_DECOUPLED_LOOKBACK:
    tiles = u / GPUOPS__SCAN_LB_MIN_TILE + 2; /* + 1 for a partial tile, + 1 for the offset of a misaligned x */
    b = GPUOPS__SCAN_LB_HEADER + tiles * GPUOPS__SCAN_LB_STATE_BYTES;
    break;
  case GPUOPS_ALGO_REDUCE_THEN_SCAN:
    tiles = u / GPUOPS__SCAN_LB_MIN_TILE + 2;
    b = 8 * (tiles < GPUOPS__SCAN_RTS_MAX_BLOCKS ? tiles : GPUOPS__SCAN_RTS_MAX_BLOCKS);
    break;
  case GPUOPS_ALGO_HILLIS_STEELE: b = 8 * (u / GPUOPS__SCAN_HS_TILE + 1); break;
  case GPUOPS_ALGO_BLELLOCH: b = 8 * (u / GPUOPS__SCAN_BL_TILE + 1); break;
  default: return 0;
  }
  return b > (uint64_t)SIZE_MAX ? SIZE_MAX : (size_t)b;
}

/* Every host check, in the header's order: sizes and enums, then (for n > 0) pointers,
   alignment, overlap and workspace. cpu != 0: the CPU form (no algo, no workspace). */
static gpuops_status gpuops__scan_check_cpu(const gpuops__scan_args *p, int cpu) {
  const size_t es = gpuops__dtype_size(p->dt);
  size_t bytes;
  if (p->rows < 0 || p->cols < 0 || p->n < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->kind != GPUOPS_SCAN_INCLUSIVE && p->kind != GPUOPS_SCAN_EXCLUSIVE) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!cpu) {
    gpuops_status st = gpuops__check_algo(p->algo, p->segmented ? 0 : GPUOPS__SCAN_ALGOS);
    if (st != GPUOPS_OK) return st;
  }
  if (p->n == 0) return GPUOPS_OK;
  if (!p->y || !p->x) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__aligned(p->y, es) || !gpuops__aligned(p->x, es)) return GPUOPS_ERR_MISALIGNED;
  bytes = gpuops__bytes(p->n, es);
  if (bytes == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (gpuops__overlap(p->y, bytes, p->x, bytes, 1)) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (cpu || p->segmented) return GPUOPS_OK;
  return gpuops__check_workspace(p->workspace, p->workspace_bytes, gpuops_scan_workspace_size(p->n, p->algo), p->y, bytes, p->x,
                                 bytes);
}
static gpuops_status gpuops__scan_check(const gpuops__scan_args *p) { return gpuops__scan_check_cpu(p, 0); }

/* The CPU scan: f32 in double, integers in unsigned arithmetic (wraps, no undefined behaviour).
   Each element is read before its output is written, so y == x works. */
static gpuops_status gpuops__scan_cpu(const gpuops__scan_args *p) {
  gpuops_status st = gpuops__scan_check_cpu(p, 1);
  const int excl = p->kind == GPUOPS_SCAN_EXCLUSIVE;
  int64_t r, c;
  if (st != GPUOPS_OK || p->n == 0) return st;
  for (r = 0; r < p->rows; ++r) {
    const int64_t o = r * p->cols;
    double accf = 0.0;
    uint64_t acci = 0;
    for (c = 0; c < p->cols; ++c) {
      switch (p->dt) {
      case GPUOPS__F32: {
        const double v = ((const float *)p->x)[o + c];
        if (!excl) accf += v;
        ((float *)p->y)[o + c] = (float)accf;
        if (excl) accf += v;
      } break;
      case GPUOPS__I32: {
        const uint32_t v = (uint32_t)((const int32_t *)p->x)[o + c];
        uint32_t a = (uint32_t)acci;
        if (!excl) a += v;
        ((int32_t *)p->y)[o + c] = (int32_t)(a <= 0x7fffffffu ? (int64_t)a : (int64_t)a - 4294967296ll);
        if (excl) a += v;
        acci = a;
      } break;
      case GPUOPS__I64: {
        const uint64_t v = (uint64_t)((const int64_t *)p->x)[o + c];
        if (!excl) acci += v;
        ((int64_t *)p->y)[o + c] = acci <= (uint64_t)INT64_MAX ? (int64_t)acci : -(int64_t)(~acci) - 1;
        if (excl) acci += v;
      } break;
      default: return GPUOPS_ERR_INVALID_ARGUMENT;
      }
    }
  }
  return GPUOPS_OK;
}

GPUOPS__FAMILY_GPU(scan, gpuops__scan_args, p->n == 0)

/* -- The public functions: one-line forwards, written once for f32, i32 and i64. -- */
#define GPUOPS__SCAN_TYPES(DEF) DEF(f32, float, GPUOPS__F32) DEF(i32, int32_t, GPUOPS__I32) DEF(i64, int64_t, GPUOPS__I64)

#define GPUOPS__SCAN_DEF(S, T, D)                                                                                       \
  gpuops_status gpuops_scan_##S(T *y, const T *x, int64_t n, gpuops_scan_kind kind, void *workspace,                   \
                                size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream) {                      \
    gpuops__scan_args p = gpuops__scan_make(D, y, x, 1, n, 0, kind);                                                    \
    p.workspace = workspace; p.workspace_bytes = workspace_bytes; p.algo = algo; p.stream = stream;                     \
    return gpuops__scan_gpu(&p);                                                                                        \
  }                                                                                                                     \
  gpuops_status gpuops_cpu_scan_##S(T *y, const T *x, int64_t n, gpuops_scan_kind kind) {                               \
    gpuops__scan_args p = gpuops__scan_make(D, y, x, 1, n, 0, kind); return gpuops__scan_cpu(&p);                       \
  }                                                                                                                     \
  gpuops_status gpuops_scan_rows_##S(T *y, const T *x, int64_t rows, int64_t cols, gpuops_scan_kind kind,               \
                                     gpuops_algo algo, gpuops_stream stream) {                                         \
    gpuops__scan_args p = gpuops__scan_make(D, y, x, rows, cols, 1, kind);                                              \
    p.algo = algo; p.stream = stream; return gpuops__scan_gpu(&p);                                                      \
  }                                                                                                                     \
  gpuops_status gpuops_cpu_scan_rows_##S(T *y, const T *x, int64_t rows, int64_t cols, gpuops_scan_kind kind) {         \
    gpuops__scan_args p = gpuops__scan_make(D, y, x, rows, cols, 1, kind); return gpuops__scan_cpu(&p);                 \
  }

GPUOPS__SCAN_TYPES(GPUOPS__SCAN_DEF)


#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* GPUOPS_NO_SCAN */



/* ---- I.5 Softmax ---------------------------------------------------------------------------- */
#ifndef GPUOPS_NO_SOFTMAX
#ifdef __cplusplus
extern "C" {
#endif

#define GPUOPS__SM_ENUM(OP, name, INPUTS) GPUOPS__SM_##OP,
typedef enum gpuops__sm_op { GPUOPS__SOFTMAX_OPS(GPUOPS__SM_ENUM) } gpuops__sm_op;
#undef GPUOPS__SM_ENUM

/* One softmax call. Forward: y = out, a = x, b = NULL. Backward: out = dx, a = dy, b = y. */
typedef struct gpuops__softmax_args {
  gpuops__sm_op op;
  gpuops__dtype dt;
  void *out;
  const void *a, *b;
  int64_t rows, cols;
  gpuops_algo algo;
  gpuops_stream stream;
} gpuops__softmax_args;

static gpuops__softmax_args gpuops__softmax_make(gpuops__sm_op op, gpuops__dtype dt, void *out, const void *a, const void *b,
                                                 int64_t rows, int64_t cols) {
  gpuops__softmax_args p;
  memset(&p, 0, sizeof p);
  p.op = op; p.dt = dt; p.out = out; p.a = a; p.b = b; p.rows = rows; p.cols = cols;
  p.algo = GPUOPS_ALGO_AUTO;
  return p;
}

/* Sizes and the version first, then (for a non-empty matrix) pointers, alignment and overlap. */
static gpuops_status gpuops__softmax_check(const gpuops__softmax_args *p) {
  const size_t es = gpuops__dtype_size(p->dt);
  size_t bytes;
  int64_t n;
  gpuops_status st;
  if (p->rows < 0 || p->cols < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  st = gpuops__check_algo(p->algo, GPUOPS__ALGO_BIT(THREE_PASS) | GPUOPS__ALGO_BIT(ONLINE));
  if (st != GPUOPS_OK) return st;
  if (p->rows == 0 || p->cols == 0) return GPUOPS_OK;
  if (gpuops__matrix(p->rows, p->cols, &n) != GPUOPS_OK) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!p->out || !p->a || (p->op == GPUOPS__SM_BWD && !p->b)) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__aligned(p->out, es) || !gpuops__aligned(p->a, es) || (p->b && !gpuops__aligned(p->b, es))) return GPUOPS_ERR_MISALIGNED;
  bytes = gpuops__bytes(n, es);
  if (bytes == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (gpuops__overlap(p->out, bytes, p->a, bytes, 1) || gpuops__overlap(p->out, bytes, p->b, bytes, 1))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  return GPUOPS_OK;
}

/* The CPU oracle, in double. Per row: NaN or +inf anywhere => NaN; only -inf => 0 (softmax) or
   -inf (log_softmax); otherwise the textbook formulas with the maximum subtracted. */
static gpuops_status gpuops__softmax_cpu(const gpuops__softmax_args *p) {
  gpuops_status st = gpuops__softmax_check(p);
  const gpuops__dtype dt = p->dt;
  int64_t r, j;
  if (st != GPUOPS_OK || p->rows == 0 || p->cols == 0) return st;
  for (r = 0; r < p->rows; ++r) {
    const int64_t o = r * p->cols;
    if (p->op == GPUOPS__SM_BWD) {
      double dot = 0.0;
      for (j = 0; j < p->cols; ++j) dot += gpuops__cpu_ld(dt, p->a, o + j) * gpuops__cpu_ld(dt, p->b, o + j);
      for (j = 0; j < p->cols; ++j)
        gpuops__cpu_st(dt, p->out, o + j, gpuops__cpu_ld(dt, p->b, o + j) * (gpuops__cpu_ld(dt, p->a, o + j) - dot));
    } else {
      double m = -INFINITY, s = 0.0, ls;
      int bad = 0;
      for (j = 0; j < p->cols; ++j) {
        const double v = gpuops__cpu_ld(dt, p->a, o + j);
        if (v != v || v == INFINITY) bad = 1;
        else if (v > m) m = v;
      }
      if (!bad && m != -INFINITY)
        for (j = 0; j < p->cols; ++j) s += exp(gpuops__cpu_ld(dt, p->a, o + j) - m);
      ls = log(s);
      for (j = 0; j < p->cols; ++j) {
        const double v = gpuops__cpu_ld(dt, p->a, o + j);
        double out;
        if (bad) out = NAN;
        else if (m == -INFINITY) out = p->op == GPUOPS__SM_FWD ? 0.0 : -INFINITY;
        else out = p->op == GPUOPS__SM_FWD ? exp(v - m) / s : (v - m) - ls;
        gpuops__cpu_st(dt, p->out, o + j, out);
      }
    }
  }
  return GPUOPS_OK;
}

GPUOPS__FAMILY_GPU(softmax, gpuops__softmax_args, p->rows == 0 || p->cols == 0)

/* -- The C entry points, from the registry x the float storage types. -- */
#define GPUOPS__SM_PARAMS_1(T) T *y, const T *x, int64_t rows, int64_t cols
#define GPUOPS__SM_PARAMS_2(T) T *dx, const T *dy, const T *y, int64_t rows, int64_t cols
#define GPUOPS__SM_ARGS_1 y, x, NULL, rows, cols
#define GPUOPS__SM_ARGS_2 dx, dy, y, rows, cols
#define GPUOPS__SM_DEF(S, T, D, ROW) GPUOPS__SM_DEF_(S, T, D, GPUOPS__EXPAND ROW)
#define GPUOPS__SM_DEF_(...) GPUOPS__SM_DEF__(__VA_ARGS__)
#define GPUOPS__SM_DEF__(S, T, D, OP, name, INPUTS)                                                                    \
  gpuops_status gpuops_##name##_##S(GPUOPS__SM_PARAMS_##INPUTS(T), gpuops_algo algo, gpuops_stream stream) {           \
    gpuops__softmax_args p = gpuops__softmax_make(GPUOPS__SM_##OP, D, GPUOPS__SM_ARGS_##INPUTS);                       \
    p.algo = algo; p.stream = stream; return gpuops__softmax_gpu(&p);                                                  \
  }                                                                                                                    \
  gpuops_status gpuops_cpu_##name##_##S(GPUOPS__SM_PARAMS_##INPUTS(T)) {                                               \
    gpuops__softmax_args p = gpuops__softmax_make(GPUOPS__SM_##OP, D, GPUOPS__SM_ARGS_##INPUTS);                       \
    return gpuops__softmax_cpu(&p);                                                                                    \
  }
#define GPUOPS__SM_ROW(OP, name, INPUTS) GPUOPS__FLOAT_TYPES(GPUOPS__SM_DEF, (OP, name, INPUTS))
GPUOPS__SOFTMAX_OPS(GPUOPS__SM_ROW)


#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* GPUOPS_NO_SOFTMAX */



/* ---- I.6 Transpose -------------------------------------------------------------------------- */
#ifndef GPUOPS_NO_TRANSPOSE
#ifdef __cplusplus
extern "C" {
#endif

/* One transpose call, as the checks, the CPU loop and the GPU launcher see it. */
typedef struct gpuops__tr_args {
  gpuops__dtype dt;
  void *y;
  const void *x;
  int64_t rows, cols, ldx, ldy;
  gpuops_algo algo;
  gpuops_stream stream;
} gpuops__tr_args;

static gpuops__tr_args gpuops__tr_make(gpuops__dtype dt, void *y, const void *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy) {
  gpuops__tr_args p;
  memset(&p, 0, sizeof p);
  p.dt = dt; p.y = y; p.x = x;
  p.rows = rows; p.cols = cols; p.ldx = ldx; p.ldy = ldy;
  p.algo = GPUOPS_ALGO_AUTO;
  return p;
}

/* The transpose is a plain copy of rows * cols contiguous elements (AUTO copies then). */
static inline int gpuops__tr_is_copy(const gpuops__tr_args *p) {
  return (p->rows == 1 && p->ldy == 1) || (p->cols == 1 && p->ldx == 1);
}

/* Every check that can be made on the host: sizes and the version first, then (for a non-empty
   matrix) pointers, alignment, size overflow and overlap. */
static gpuops_status gpuops__tr_check(const gpuops__tr_args *p) {
  const size_t e = gpuops__dtype_size(p->dt);
  int64_t span_x, span_y;
  size_t bx, by;
  gpuops_status st;
  if (p->rows < 0 || p->cols < 0 || p->ldx < p->cols || p->ldy < p->rows) return GPUOPS_ERR_INVALID_ARGUMENT;
  st = gpuops__check_algo(p->algo, GPUOPS__ALGO_BIT(NAIVE) | GPUOPS__ALGO_BIT(SHARED_TILED) | GPUOPS__ALGO_BIT(SHARED_PADDED) |
                                       GPUOPS__ALGO_BIT(VECTORIZED));
  if (st != GPUOPS_OK) return st;
  if (p->rows == 0 || p->cols == 0) return GPUOPS_OK;
  if (!p->y || !p->x) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__aligned(p->y, e) || !gpuops__aligned(p->x, e)) return GPUOPS_ERR_MISALIGNED;
  /* Elements from the first to the last one of each matrix; each must fit int64_t and size_t. */
  if (p->rows - 1 > (INT64_MAX - p->cols) / p->ldx || p->cols - 1 > (INT64_MAX - p->rows) / p->ldy)
    return GPUOPS_ERR_INVALID_ARGUMENT;
  span_x = (p->rows - 1) * p->ldx + p->cols;
  span_y = (p->cols - 1) * p->ldy + p->rows;
  bx = gpuops__bytes(span_x, e);
  by = gpuops__bytes(span_y, e);
  if (bx == SIZE_MAX || by == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (gpuops__overlap(p->y, by, p->x, bx, 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
  return GPUOPS_OK;
}

/* The CPU transpose, by 64 x 64 blocks through a local tile: x is read a row piece at a time and y
   written a row piece at a time, so neither side keeps 64 lines of a large (often power-of-two)
   stride alive at once, which would thrash the cache's sets. */
#define GPUOPS__TR_CPU_LOOP(U)                                                                       \
  {                                                                                                  \
    U t[64][64];                                                                                     \
    U *y = (U *)p->y;                                                                                \
    const U *x = (const U *)p->x;                                                                    \
    for (r0 = 0; r0 < p->rows; r0 += 64)                                                             \
      for (c0 = 0; c0 < p->cols; c0 += 64) {                                                         \
        const int64_t nr = p->rows - r0 < 64 ? p->rows - r0 : 64, nc = p->cols - c0 < 64 ? p->cols - c0 : 64; \
        for (r = 0; r < nr; ++r)                                                                     \
          for (c = 0; c < nc; ++c) t[c][r] = x[(r0 + r) * p->ldx + c0 + c];                          \
        for (c = 0; c < nc; ++c)                                                                     \
          for (r = 0; r < nr; ++r) y[(c0 + c) * p->ldy + r0 + r] = t[c][r];                          \
      }                                                                                              \
  }

static gpuops_status gpuops__tr_cpu(const gpuops__tr_args *p) {
  gpuops_status st = gpuops__tr_check(p);
  int64_t r0, c0, r, c;
  if (st != GPUOPS_OK || p->rows == 0 || p->cols == 0) return st;
  switch (gpuops__dtype_size(p->dt)) {
  case 1: GPUOPS__TR_CPU_LOOP(uint8_t) break;
  case 2: GPUOPS__TR_CPU_LOOP(uint16_t) break;
  case 8: GPUOPS__TR_CPU_LOOP(uint64_t) break;
  default: GPUOPS__TR_CPU_LOOP(uint32_t) break;
  }
  return GPUOPS_OK;
}
#undef GPUOPS__TR_CPU_LOOP

GPUOPS__FAMILY_GPU(tr, gpuops__tr_args, p->rows == 0 || p->cols == 0)

/* -- The public functions, written once for every storage type. -- */
#define GPUOPS__TR_TYPES(DEF) \
  DEF(f32, float, GPUOPS__F32) DEF(f16, gpuops_f16, GPUOPS__F16) DEF(bf16, gpuops_bf16, GPUOPS__BF16) DEF(i8, int8_t, GPUOPS__I8) DEF(i64, int64_t, GPUOPS__I64)

#define GPUOPS__TR_DEF(S, T, D)                                                                                        \
  gpuops_status gpuops_transpose_##S(T *y, const T *x, int64_t rows, int64_t cols, gpuops_algo algo, gpuops_stream stream) { \
    gpuops__tr_args p = gpuops__tr_make(D, y, x, rows, cols, cols, rows);                                              \
    p.algo = algo; p.stream = stream; return gpuops__tr_gpu(&p);                                                       \
  }                                                                                                                    \
  gpuops_status gpuops_transpose_ld_##S(T *y, const T *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy,        \
                                        gpuops_algo algo, gpuops_stream stream) {                                      \
    gpuops__tr_args p = gpuops__tr_make(D, y, x, rows, cols, ldx, ldy);                                                \
    p.algo = algo; p.stream = stream; return gpuops__tr_gpu(&p);                                                       \
  }                                                                                                                    \
  gpuops_status gpuops_cpu_transpose_##S(T *y, const T *x, int64_t rows, int64_t cols) {                               \
    gpuops__tr_args p = gpuops__tr_make(D, y, x, rows, cols, cols, rows); return gpuops__tr_cpu(&p);                   \
  }                                                                                                                    \
  gpuops_status gpuops_cpu_transpose_ld_##S(T *y, const T *x, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy) {  \
    gpuops__tr_args p = gpuops__tr_make(D, y, x, rows, cols, ldx, ldy); return gpuops__tr_cpu(&p);                     \
  }

GPUOPS__TR_TYPES(GPUOPS__TR_DEF)

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* GPUOPS_NO_TRANSPOSE */



/* ---- I.7 Matrix multiply -------------------------------------------------------------------- */
#ifndef GPUOPS_NO_MATMUL
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
#define GPUOPS__MM_RESTRICT __restrict__
#else
#define GPUOPS__MM_RESTRICT restrict
#endif

/* One matmul call as the checks, the CPU loops and the GPU launcher see it. */
typedef struct gpuops__mm_args {
  float *c;
  const float *a, *b;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  gpuops_op op_a, op_b;
  gpuops_algo algo;
  int cpu_kind; /* gpuops_cpu_gemm_kind of the baselines; 0 elsewhere */
  gpuops_stream stream;
} gpuops__mm_args;

static gpuops__mm_args gpuops__mm_make(float *c, const float *a, const float *b, int64_t m, int64_t n, int64_t k,
                                       int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a,
                                       gpuops_op op_b) {
  gpuops__mm_args p;
  memset(&p, 0, sizeof p);
  p.c = c; p.a = a; p.b = b; p.m = m; p.n = n; p.k = k; p.lda = lda; p.ldb = ldb; p.ldc = ldc;
  p.alpha = alpha; p.beta = beta; p.op_a = op_a; p.op_b = op_b; p.algo = GPUOPS_ALGO_AUTO;
  return p;
}

/* Element strides of op(A)(i, p) = a[i * sai + p * sap] and op(B)(p, j) = b[p * sbp + j * sbj]. */
typedef struct gpuops__mm_strides { int64_t sai, sap, sbp, sbj; } gpuops__mm_strides;
static gpuops__mm_strides gpuops__mm_strides_of(const gpuops__mm_args *p) {
  gpuops__mm_strides s;
  s.sai = p->op_a == GPUOPS_OP_N ? p->lda : 1;
  s.sap = p->op_a == GPUOPS_OP_N ? 1 : p->lda;
  s.sbp = p->op_b == GPUOPS_OP_N ? p->ldb : 1;
  s.sbj = p->op_b == GPUOPS_OP_N ? 1 : p->ldb;
  return s;
}

#define GPUOPS__MM_ALGOS                                                                                       \
  (GPUOPS__ALGO_BIT(NAIVE) | GPUOPS__ALGO_BIT(COALESCED) | GPUOPS__ALGO_BIT(SHARED_TILED) | GPUOPS__ALGO_BIT(REGISTER_1D) | \
   GPUOPS__ALGO_BIT(REGISTER_2D) | GPUOPS__ALGO_BIT(VECTORIZED) | GPUOPS__ALGO_BIT(WARP_TILED))

/* Every host check, in order: sizes, enums, leading dimensions; then (for a non-empty C) pointers,
   alignment, extents and overlap. A and B are not touched when k = 0 and may then be NULL. */
static gpuops_status gpuops__mm_check(const gpuops__mm_args *p) {
  int64_t arows, acols, brows, bcols, sa, sb, sc, rc[4];
  size_t ab, bb, cb;
  gpuops_status st;
  if (p->m < 0 || p->n < 0 || p->k < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  if ((p->op_a != GPUOPS_OP_N && p->op_a != GPUOPS_OP_T) || (p->op_b != GPUOPS_OP_N && p->op_b != GPUOPS_OP_T))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  st = gpuops__check_algo(p->algo, GPUOPS__MM_ALGOS);
  if (st != GPUOPS_OK) return st;
  if (p->cpu_kind < GPUOPS_CPU_GEMM_NAIVE || p->cpu_kind > GPUOPS_CPU_GEMM_SIMD) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__product_lds(p->m, p->n, p->k, p->op_a, p->op_b, p->lda, p->ldb, p->ldc, rc)) return GPUOPS_ERR_INVALID_ARGUMENT;
  arows = rc[0], acols = rc[1], brows = rc[2], bcols = rc[3]; /* A and B as stored */
  if (p->m == 0 || p->n == 0) return GPUOPS_OK;
  if (!p->c || (p->k > 0 && (!p->a || !p->b))) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__aligned(p->c, sizeof(float)) || (p->k > 0 && (!gpuops__aligned(p->a, sizeof(float)) || !gpuops__aligned(p->b, sizeof(float)))))
    return GPUOPS_ERR_MISALIGNED;
  sc = gpuops__span(p->m, p->n, p->ldc);
  sa = p->k > 0 ? gpuops__span(arows, acols, p->lda) : 0;
  sb = p->k > 0 ? gpuops__span(brows, bcols, p->ldb) : 0;
  if (sa < 0 || sb < 0 || sc < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  ab = gpuops__bytes(sa, sizeof(float)); bb = gpuops__bytes(sb, sizeof(float)); cb = gpuops__bytes(sc, sizeof(float));
  if (ab == SIZE_MAX || bb == SIZE_MAX || cb == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->k > 0 && (gpuops__overlap(p->c, cb, p->a, ab, 0) || gpuops__overlap(p->c, cb, p->b, bb, 0)) /* C written while A, B read */)
    return GPUOPS_ERR_INVALID_ARGUMENT;
  return GPUOPS_OK;
}

/* The reference: each element's dot product in double (each product exact), then
   alpha * dot + beta * c rounded once. k = 0 leaves beta * c; beta = 0 never reads c. */
static gpuops_status gpuops__mm_cpu_reference(const gpuops__mm_args *p) {
  gpuops_status st = gpuops__mm_check(p);
  gpuops__mm_strides s = gpuops__mm_strides_of(p);
  int64_t i, j, q;
  if (st != GPUOPS_OK || p->m == 0 || p->n == 0) return st;
  for (i = 0; i < p->m; ++i)
    for (j = 0; j < p->n; ++j) {
      double dot = 0.0, r;
      float *cij = p->c + i * p->ldc + j;
      for (q = 0; q < p->k; ++q) dot += (double)p->a[i * s.sai + q * s.sap] * (double)p->b[q * s.sbp + j * s.sbj];
      r = p->k > 0 ? (double)p->alpha * dot : 0.0;
      if (p->beta != 0.0f) r += (double)p->beta * (double)*cij;
      *cij = (float)r;
    }
  return GPUOPS_OK;
}

/* C = beta * C (0 where beta = 0, without reading C): the baselines then add alpha op(A) op(B). */
static void gpuops__mm_cpu_scale_c(const gpuops__mm_args *p) {
  int64_t i, j;
  for (i = 0; i < p->m; ++i) {
    float *crow = p->c + i * p->ldc;
    for (j = 0; j < p->n; ++j) crow[j] = p->beta == 0.0f ? 0.0f : p->beta * crow[j];
  }
}

/* Baseline 1: i-j-k, one f32 dot product per element. */
static void gpuops__mm_cpu_naive(const gpuops__mm_args *p, gpuops__mm_strides s) {
  int64_t i, j, q;
  for (i = 0; i < p->m; ++i)
    for (j = 0; j < p->n; ++j) {
      float dot = 0.0f, *cij = p->c + i * p->ldc + j;
      for (q = 0; q < p->k; ++q) dot += p->a[i * s.sai + q * s.sap] * p->b[q * s.sbp + j * s.sbj];
      *cij = p->alpha * dot + (p->beta == 0.0f ? 0.0f : p->beta * *cij);
    }
}

/* Baseline 2: 64 x 64 x 64 blocks; a block of op(B) stays in cache while every row block of C
   passes over it; i-k-j inside, so the innermost loop walks a row of C and of op(B). */
#define GPUOPS__MM_CPU_BS 64
static void gpuops__mm_cpu_blocked(const gpuops__mm_args *p, gpuops__mm_strides s) {
  int64_t i0, j0, q0, i, j, q;
  gpuops__mm_cpu_scale_c(p);
  for (j0 = 0; j0 < p->n; j0 += GPUOPS__MM_CPU_BS)
    for (q0 = 0; q0 < p->k; q0 += GPUOPS__MM_CPU_BS)
      for (i0 = 0; i0 < p->m; i0 += GPUOPS__MM_CPU_BS) {
        const int64_t ie = i0 + GPUOPS__MM_CPU_BS < p->m ? i0 + GPUOPS__MM_CPU_BS : p->m;
        const int64_t je = j0 + GPUOPS__MM_CPU_BS < p->n ? j0 + GPUOPS__MM_CPU_BS : p->n;
        const int64_t qe = q0 + GPUOPS__MM_CPU_BS < p->k ? q0 + GPUOPS__MM_CPU_BS : p->k;
        for (i = i0; i < ie; ++i) {
          float *crow = p->c + i * p->ldc;
          for (q = q0; q < qe; ++q) {
            const float aiq = p->alpha * p->a[i * s.sai + q * s.sap];
            const float *brow = p->b + q * s.sbp;
            for (j = j0; j < je; ++j) crow[j] += aiq * brow[j * s.sbj];
          }
        }
      }
}

/* Baseline 3: a KC x NC panel of op(B) packed contiguous (on the stack, 128 KiB), then C is
   computed in 4 x 16 blocks held in a local array: per k step one row of the panel (16 floats,
   unit stride) times 4 values of A, 64 multiply-adds on data in registers. The j loops have
   constant trip counts, unit strides and no dependences, so gcc -O3 turns them into packed SIMD
   (4 SSE registers per row of the block, 16 for the block). Edge blocks take a plain loop. Row
   blocks are independent, so OpenMP (when enabled) splits them across threads. */
#define GPUOPS__MM_CPU_KC 128
#define GPUOPS__MM_CPU_NC 256
#define GPUOPS__MM_CPU_MR 4 /* rows of a register block: acc0..acc3 below */
#define GPUOPS__MM_CPU_NR 16
static void gpuops__mm_cpu_simd(const gpuops__mm_args *p, gpuops__mm_strides s) {
  float panel[GPUOPS__MM_CPU_KC * GPUOPS__MM_CPU_NC];
  int64_t j0, q0;
  gpuops__mm_cpu_scale_c(p);
  for (j0 = 0; j0 < p->n; j0 += GPUOPS__MM_CPU_NC)
    for (q0 = 0; q0 < p->k; q0 += GPUOPS__MM_CPU_KC) {
      const int64_t nb = p->n - j0 < GPUOPS__MM_CPU_NC ? p->n - j0 : GPUOPS__MM_CPU_NC;
      const int64_t kb = p->k - q0 < GPUOPS__MM_CPU_KC ? p->k - q0 : GPUOPS__MM_CPU_KC;
      const int64_t row_blocks = (p->m + GPUOPS__MM_CPU_MR - 1) / GPUOPS__MM_CPU_MR;
      int64_t ib, j, q;
      for (q = 0; q < kb; ++q)
        for (j = 0; j < nb; ++j) panel[q * nb + j] = p->b[(q0 + q) * s.sbp + (j0 + j) * s.sbj];
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
      for (ib = 0; ib < row_blocks; ++ib) {
        const int64_t i0 = ib * GPUOPS__MM_CPU_MR;
        const int rows = p->m - i0 < GPUOPS__MM_CPU_MR ? (int)(p->m - i0) : GPUOPS__MM_CPU_MR;
        int64_t jj, qq;
        int r, c;
        for (jj = 0; jj < nb; jj += GPUOPS__MM_CPU_NR) {
          if (rows == GPUOPS__MM_CPU_MR && jj + GPUOPS__MM_CPU_NR <= nb) {
            /* four rows of the block, one statement each in a single unit-stride loop */
            float acc0[GPUOPS__MM_CPU_NR] = {0.0f}, acc1[GPUOPS__MM_CPU_NR] = {0.0f};
            float acc2[GPUOPS__MM_CPU_NR] = {0.0f}, acc3[GPUOPS__MM_CPU_NR] = {0.0f};
            float *accs[GPUOPS__MM_CPU_MR];
            const float *a0 = p->a + i0 * s.sai + q0 * s.sap;
            const int64_t sai = s.sai, sap = s.sap;
            const float alpha = p->alpha;
            for (qq = 0; qq < kb; ++qq) {
              const float *GPUOPS__MM_RESTRICT bq = panel + qq * nb + jj;
              const float ar0 = alpha * a0[qq * sap], ar1 = alpha * a0[sai + qq * sap];
              const float ar2 = alpha * a0[2 * sai + qq * sap], ar3 = alpha * a0[3 * sai + qq * sap];
              for (c = 0; c < GPUOPS__MM_CPU_NR; ++c) {
                acc0[c] += ar0 * bq[c];
                acc1[c] += ar1 * bq[c];
                acc2[c] += ar2 * bq[c];
                acc3[c] += ar3 * bq[c];
              }
            }
            accs[0] = acc0, accs[1] = acc1, accs[2] = acc2, accs[3] = acc3;
            for (r = 0; r < GPUOPS__MM_CPU_MR; ++r) {
              float *GPUOPS__MM_RESTRICT crow = p->c + (i0 + r) * p->ldc + j0 + jj;
              for (c = 0; c < GPUOPS__MM_CPU_NR; ++c) crow[c] += accs[r][c];
            }
          } else { /* an edge block: fewer rows or columns */
            const int cols = nb - jj < GPUOPS__MM_CPU_NR ? (int)(nb - jj) : GPUOPS__MM_CPU_NR;
            for (r = 0; r < rows; ++r) {
              float *crow = p->c + (i0 + r) * p->ldc + j0 + jj;
              for (qq = 0; qq < kb; ++qq) {
                const float ar = p->alpha * p->a[(i0 + r) * s.sai + (q0 + qq) * s.sap];
                for (c = 0; c < cols; ++c) crow[c] += ar * panel[qq * nb + jj + c];
              }
            }
          }
        }
      }
    }
}

static gpuops_status gpuops__mm_cpu_baseline(const gpuops__mm_args *p) {
  gpuops_status st = gpuops__mm_check(p);
  gpuops__mm_strides s = gpuops__mm_strides_of(p);
  if (st != GPUOPS_OK || p->m == 0 || p->n == 0) return st;
  switch (p->cpu_kind) {
  case GPUOPS_CPU_GEMM_NAIVE: gpuops__mm_cpu_naive(p, s); break;
  case GPUOPS_CPU_GEMM_BLOCKED: gpuops__mm_cpu_blocked(p, s); break;
  default: gpuops__mm_cpu_simd(p, s); break;
  }
  return GPUOPS_OK;
}

GPUOPS__FAMILY_GPU(mm, gpuops__mm_args, p->m == 0 || p->n == 0)

gpuops_status gpuops_matmul_f32(float *c, const float *a, const float *b, int64_t m, int64_t n, int64_t k, int64_t lda,
                                int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a, gpuops_op op_b,
                                gpuops_algo algo, gpuops_stream stream) {
  gpuops__mm_args p = gpuops__mm_make(c, a, b, m, n, k, lda, ldb, ldc, alpha, beta, op_a, op_b);
  p.algo = algo; p.stream = stream; return gpuops__mm_gpu(&p);
}

gpuops_status gpuops_cpu_matmul_f32(float *c, const float *a, const float *b, int64_t m, int64_t n, int64_t k,
                                    int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a,
                                    gpuops_op op_b) {
  gpuops__mm_args p = gpuops__mm_make(c, a, b, m, n, k, lda, ldb, ldc, alpha, beta, op_a, op_b);
  return gpuops__mm_cpu_reference(&p);
}

gpuops_status gpuops_cpu_matmul_baseline_f32(float *c, const float *a, const float *b, int64_t m, int64_t n, int64_t k,
                                             int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta,
                                             gpuops_op op_a, gpuops_op op_b, gpuops_cpu_gemm_kind kind) {
  gpuops__mm_args p = gpuops__mm_make(c, a, b, m, n, k, lda, ldb, ldc, alpha, beta, op_a, op_b);
  p.cpu_kind = (int)kind; return gpuops__mm_cpu_baseline(&p);
}


#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* GPUOPS_NO_MATMUL */


/* ---- I.9 Tensor-core matrix multiply and linear layers -------------------------------------- */
#ifndef GPUOPS_NO_GEMM
#ifdef __cplusplus
extern "C" {
#endif

/* One GEMM call as the checks, the CPU reference and the GPU launcher see it: A and B of storage
   ab (f16 or bf16), C (and bias, residual, preact) of storage ct. */
typedef struct gpuops__gemm_args {
  gpuops__dtype ab, ct;
  void *c;
  const void *a, *b;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  gpuops_op op_a, op_b;
  gpuops_epilogue epi; /* all zero: none */
  gpuops_algo algo;
  gpuops_stream stream;
} gpuops__gemm_args;

static gpuops__gemm_args gpuops__gemm_make(gpuops__dtype ab, gpuops__dtype ct, void *c, const void *a, const void *b, int64_t m,
                                           int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, float alpha, float beta,
                                           gpuops_op op_a, gpuops_op op_b, const gpuops_epilogue *epi) {
  gpuops__gemm_args p;
  memset(&p, 0, sizeof p);
  p.ab = ab; p.ct = ct; p.c = c; p.a = a; p.b = b; p.m = m; p.n = n; p.k = k; p.lda = lda; p.ldb = ldb; p.ldc = ldc;
  p.alpha = alpha; p.beta = beta; p.op_a = op_a; p.op_b = op_b; p.algo = GPUOPS_ALGO_AUTO;
  if (epi) p.epi = *epi;
  return p;
}

#define GPUOPS__GEMM_ALGOS (GPUOPS__ALGO_BIT(WMMA) | GPUOPS__ALGO_BIT(MMA_SYNC) | GPUOPS__ALGO_BIT(WGMMA))

/* Every host check, in order: sizes, enums, leading dimensions; then (for a non-empty C) pointers,
   alignment, extents and overlap. A and B are not touched when k = 0 and may then be NULL. */
static gpuops_status gpuops__gemm_check(const gpuops__gemm_args *p) {
  const size_t es = gpuops__dtype_size(p->ab), cs = gpuops__dtype_size(p->ct);
  const gpuops_epilogue *e = &p->epi;
  int64_t arows, acols, brows, bcols, sa, sb, sc, sr, sp, rc[4];
  size_t ab, bb, cb, rb, pb, biasb;
  gpuops_status st;
  if (p->m < 0 || p->n < 0 || p->k < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  if ((p->op_a != GPUOPS_OP_N && p->op_a != GPUOPS_OP_T) || (p->op_b != GPUOPS_OP_N && p->op_b != GPUOPS_OP_T))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  if ((int)e->act < GPUOPS_ACT_NONE || (int)e->act > GPUOPS_ACT_RELU) return GPUOPS_ERR_INVALID_ARGUMENT;
  st = gpuops__check_algo(p->algo, GPUOPS__GEMM_ALGOS);
  if (st != GPUOPS_OK) return st;
  if (!gpuops__product_lds(p->m, p->n, p->k, p->op_a, p->op_b, p->lda, p->ldb, p->ldc, rc)) return GPUOPS_ERR_INVALID_ARGUMENT;
  arows = rc[0], acols = rc[1], brows = rc[2], bcols = rc[3]; /* A and B as stored */
  if ((e->residual && (e->ldr < 1 || e->ldr < p->n)) || (e->preact && (e->ldp < 1 || e->ldp < p->n)))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->m == 0 || p->n == 0) return GPUOPS_OK;
  if (!p->c || (p->k > 0 && (!p->a || !p->b))) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__aligned(p->c, cs) || (p->k > 0 && (!gpuops__aligned(p->a, es) || !gpuops__aligned(p->b, es))) ||
      (e->bias && !gpuops__aligned(e->bias, cs)) || (e->residual && !gpuops__aligned(e->residual, cs)) ||
      (e->preact && !gpuops__aligned(e->preact, cs)))
    return GPUOPS_ERR_MISALIGNED;
  sc = gpuops__span(p->m, p->n, p->ldc);
  sa = p->k > 0 ? gpuops__span(arows, acols, p->lda) : 0;
  sb = p->k > 0 ? gpuops__span(brows, bcols, p->ldb) : 0;
  sr = e->residual ? gpuops__span(p->m, p->n, e->ldr) : 0;
  sp = e->preact ? gpuops__span(p->m, p->n, e->ldp) : 0;
  if (sa < 0 || sb < 0 || sc < 0 || sr < 0 || sp < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  ab = gpuops__bytes(sa, es); bb = gpuops__bytes(sb, es); cb = gpuops__bytes(sc, cs);
  rb = gpuops__bytes(sr, cs); pb = gpuops__bytes(sp, cs); biasb = e->bias ? gpuops__bytes(p->n, cs) : 0;
  if (ab == SIZE_MAX || bb == SIZE_MAX || cb == SIZE_MAX || rb == SIZE_MAX || pb == SIZE_MAX || biasb == SIZE_MAX)
    return GPUOPS_ERR_INVALID_ARGUMENT;
  /* C and preact are written while A, B, bias and residual are read; residual may be C itself. */
  if (gpuops__overlap(p->c, cb, p->a, ab, 0) || gpuops__overlap(p->c, cb, p->b, bb, 0) ||
      gpuops__overlap(p->c, cb, e->bias, biasb, 0) || gpuops__overlap(p->c, cb, e->preact, pb, 0) ||
      gpuops__overlap(p->c, cb, e->residual, rb, e->ldr == p->ldc))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  if (gpuops__overlap(e->preact, pb, p->a, ab, 0) || gpuops__overlap(e->preact, pb, p->b, bb, 0) ||
      gpuops__overlap(e->preact, pb, e->bias, biasb, 0) || gpuops__overlap(e->preact, pb, e->residual, rb, 0))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  return GPUOPS_OK;
}

/* The reference: each dot product in double (each product exact), the epilogue in double, then
   one rounding to C's type (preact rounded once too). k = 0 gives the epilogue of 0; beta = 0
   never reads C. Each element of C is read (beta, residual == C) before it is written. */
static gpuops_status gpuops__gemm_cpu(const gpuops__gemm_args *p) {
  const gpuops_epilogue *e = &p->epi;
  gpuops_status st = gpuops__gemm_check(p);
  int64_t sai, sap, sbp, sbj, i, j, q;
  if (st != GPUOPS_OK || p->m == 0 || p->n == 0) return st;
  sai = p->op_a == GPUOPS_OP_N ? p->lda : 1; sap = p->op_a == GPUOPS_OP_N ? 1 : p->lda;
  sbp = p->op_b == GPUOPS_OP_N ? p->ldb : 1; sbj = p->op_b == GPUOPS_OP_N ? 1 : p->ldb;
  for (i = 0; i < p->m; ++i)
    for (j = 0; j < p->n; ++j) {
      double dot = 0.0, v;
      for (q = 0; q < p->k; ++q) dot += gpuops__cpu_ld(p->ab, p->a, i * sai + q * sap) * gpuops__cpu_ld(p->ab, p->b, q * sbp + j * sbj);
      v = (double)p->alpha * dot;
      if (p->beta != 0.0f) v += (double)p->beta * gpuops__cpu_ld(p->ct, p->c, i * p->ldc + j);
      if (e->bias) v += gpuops__cpu_ld(p->ct, e->bias, j);
      if (e->preact) gpuops__cpu_st(p->ct, e->preact, i * e->ldp + j, v);
      v = gpuops__cpu_activate(v, (int)e->act);
      if (e->residual) v += gpuops__cpu_ld(p->ct, e->residual, i * e->ldr + j);
      gpuops__cpu_st(p->ct, p->c, i * p->ldc + j, v);
    }
  return GPUOPS_OK;
}

GPUOPS__FAMILY_GPU(gemm, gpuops__gemm_args, p->m == 0 || p->n == 0)

/* -- The GEMM entry points: (suffix, operand type, its dtype, C's type, C's dtype). -- */
#define GPUOPS__GEMM_TYPES(X)                                                                              \
  X(f16, gpuops_f16, GPUOPS__F16, gpuops_f16, GPUOPS__F16) X(bf16, gpuops_bf16, GPUOPS__BF16, gpuops_bf16, GPUOPS__BF16) \
  X(f16_f32, gpuops_f16, GPUOPS__F16, float, GPUOPS__F32) X(bf16_f32, gpuops_bf16, GPUOPS__BF16, float, GPUOPS__F32)
#define GPUOPS__GEMM_DEF(S, T, D, TC, DC)                                                                                  \
  gpuops_status gpuops_gemm_##S(TC *c, const T *a, const T *b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,  \
                                int64_t ldc, float alpha, float beta, gpuops_op op_a, gpuops_op op_b,                     \
                                const gpuops_epilogue *epi, gpuops_algo algo, gpuops_stream stream) {                     \
    gpuops__gemm_args p = gpuops__gemm_make(D, DC, c, a, b, m, n, k, lda, ldb, ldc, alpha, beta, op_a, op_b, epi);         \
    p.algo = algo; p.stream = stream; return gpuops__gemm_gpu(&p);                                                         \
  }                                                                                                                        \
  gpuops_status gpuops_cpu_gemm_##S(TC *c, const T *a, const T *b, int64_t m, int64_t n, int64_t k, int64_t lda,           \
                                    int64_t ldb, int64_t ldc, float alpha, float beta, gpuops_op op_a, gpuops_op op_b,     \
                                    const gpuops_epilogue *epi) {                                                          \
    gpuops__gemm_args p = gpuops__gemm_make(D, DC, c, a, b, m, n, k, lda, ldb, ldc, alpha, beta, op_a, op_b, epi);         \
    return gpuops__gemm_cpu(&p);                                                                                           \
  }
GPUOPS__GEMM_TYPES(GPUOPS__GEMM_DEF)
#undef GPUOPS__GEMM_DEF

/* -- Linear layers ------------------------------------------------------------------------------ */
/* The forward as a GEMM: x (batch x in) times W^T (W: out x in), the bias and activation fused. */
static gpuops__gemm_args gpuops__linear_fwd_make(gpuops__dtype dt, void *y, void *preact, const void *x, const void *w,
                                                 const void *bias, int64_t batch, int64_t in, int64_t out, gpuops_activation act) {
  gpuops_epilogue e;
  memset(&e, 0, sizeof e);
  e.bias = bias; e.preact = preact; e.ldp = out; e.act = act;
  return gpuops__gemm_make(dt, dt, y, x, w, batch, out, in, in < 1 ? 1 : in, in < 1 ? 1 : in, out < 1 ? 1 : out, 1.0f, 0.0f,
                           GPUOPS_OP_N, GPUOPS_OP_T, &e);
}

size_t gpuops_linear_bwd_workspace_size(int64_t batch, int64_t out_features, gpuops_activation act) {
  int64_t dh, parts;
  if (batch <= 0 || out_features <= 0) return 0;
  if (gpuops__matrix(batch, out_features, &dh) != GPUOPS_OK || dh > (INT64_MAX - 16) / 4) return SIZE_MAX;
  parts = (batch + GPUOPS__LIN_ROWS - 1) / GPUOPS__LIN_ROWS;
  dh = act == GPUOPS_ACT_NONE ? 0 : (dh * 2 + 15) / 16 * 16;
  if (parts > (INT64_MAX - dh) / 4 / out_features) return SIZE_MAX;
  return (size_t)(dh + parts * out_features * 4);
}

/* One linear backward call. */
typedef struct gpuops__linbwd_args {
  gpuops__dtype dt;
  void *dx;
  float *dw, *db;
  const void *dy, *preact, *x, *w;
  int64_t batch, in, out;
  gpuops_activation act;
  void *workspace;
  size_t workspace_bytes;
  gpuops_algo algo;
  gpuops_stream stream;
} gpuops__linbwd_args;

static gpuops__linbwd_args gpuops__linbwd_make(gpuops__dtype dt, void *dx, float *dw, float *db, const void *dy, const void *preact,
                                               const void *x, const void *w, int64_t batch, int64_t in, int64_t out,
                                               gpuops_activation act) {
  gpuops__linbwd_args p;
  memset(&p, 0, sizeof p);
  p.dt = dt; p.dx = dx; p.dw = dw; p.db = db; p.dy = dy; p.preact = preact; p.x = x; p.w = w;
  p.batch = batch; p.in = in; p.out = out; p.act = act; p.algo = GPUOPS_ALGO_AUTO;
  return p;
}

/* Sizes, enums, then pointers (each needed input present, element-aligned), extents, overlap,
   and (GPU only) the workspace. */
static gpuops_status gpuops__linbwd_check_cpu(const gpuops__linbwd_args *p, int cpu) {
  int64_t nx, nw, ny;
  size_t bx, bw, by, bb, fx, fw;
  const int need_dh = p->dx || p->dw || p->db;
  gpuops_status st;
  if (p->batch < 0 || p->in < 0 || p->out < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  if ((int)p->act < GPUOPS_ACT_NONE || (int)p->act > GPUOPS_ACT_RELU) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!cpu) {
    st = gpuops__check_algo(p->algo, GPUOPS__GEMM_ALGOS);
    if (st != GPUOPS_OK) return st;
  }
  if (gpuops__matrix(p->batch, p->in, &nx) != GPUOPS_OK || gpuops__matrix(p->out, p->in, &nw) != GPUOPS_OK ||
      gpuops__matrix(p->batch, p->out, &ny) != GPUOPS_OK)
    return GPUOPS_ERR_INVALID_ARGUMENT;
  bx = gpuops__bytes(nx, 2); bw = gpuops__bytes(nw, 2); by = gpuops__bytes(ny, 2);
  fw = gpuops__bytes(nw, 4); bb = gpuops__bytes(p->out, 4); fx = bx;
  if (bx == SIZE_MAX || bw == SIZE_MAX || by == SIZE_MAX || fw == SIZE_MAX || bb == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  /* What each output reads: dx needs dy (and preact) and W; dW needs dy and x; db needs dy. */
  if (need_dh && ny > 0 && (!p->dy || (p->act != GPUOPS_ACT_NONE && !p->preact))) return GPUOPS_ERR_INVALID_ARGUMENT;
  if ((p->dx && nx > 0 && p->out > 0 && !p->w) || (p->dw && nw > 0 && p->batch > 0 && !p->x)) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__aligned(p->dx, 2) || !gpuops__aligned(p->dy, 2) || !gpuops__aligned(p->preact, 2) || !gpuops__aligned(p->x, 2) ||
      !gpuops__aligned(p->w, 2) || !gpuops__aligned(p->dw, 4) || !gpuops__aligned(p->db, 4))
    return GPUOPS_ERR_MISALIGNED;
  {
    const void *outs[3] = {p->dx, p->dw, p->db}, *ins[4] = {p->dy, p->act != GPUOPS_ACT_NONE ? p->preact : NULL, p->x, p->w};
    const size_t outb[3] = {fx, fw, bb}, inb[4] = {by, by, bx, bw};
    int o, i;
    for (o = 0; o < 3; ++o) {
      for (i = 0; i < 4; ++i)
        if (gpuops__overlap(outs[o], outb[o], ins[i], inb[i], 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
      for (i = o + 1; i < 3; ++i)
        if (gpuops__overlap(outs[o], outb[o], outs[i], outb[i], 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
    }
    if (cpu || !need_dh) return GPUOPS_OK;
    st = gpuops__check_workspace(p->workspace, p->workspace_bytes, gpuops_linear_bwd_workspace_size(p->batch, p->out, p->act),
                                 p->dy, by, p->preact, p->act != GPUOPS_ACT_NONE ? by : 0);
    if (st != GPUOPS_OK) return st;
    for (o = 0; o < 3; ++o)
      if (gpuops__overlap(p->workspace, gpuops_linear_bwd_workspace_size(p->batch, p->out, p->act), outs[o], outb[o], 0) ||
          gpuops__overlap(p->workspace, gpuops_linear_bwd_workspace_size(p->batch, p->out, p->act), ins[o + 1], inb[o + 1], 0))
        return GPUOPS_ERR_INVALID_ARGUMENT;
  }
  return GPUOPS_OK;
}
static gpuops_status gpuops__linbwd_check(const gpuops__linbwd_args *p) { return gpuops__linbwd_check_cpu(p, 0); }

/* The CPU backward in double: dh(i, j) = dy act'(preact), then dx = dh W, dW = dh^T x, db = the
   column sums of dh (dh kept in double, not rounded to the storage type). */
static gpuops_status gpuops__linbwd_cpu(const gpuops__linbwd_args *p) {
  gpuops_status st = gpuops__linbwd_check_cpu(p, 1);
  int64_t i, j, q;
  if (st != GPUOPS_OK) return st;
#define GPUOPS__LIN_DH(i, j)                                                                                       \
  (gpuops__cpu_ld(p->dt, p->dy, (i) * p->out + (j)) *                                                              \
   (p->act == GPUOPS_ACT_NONE ? 1.0 : gpuops__cpu_activate_grad(gpuops__cpu_ld(p->dt, p->preact, (i) * p->out + (j)), (int)p->act)))
  if (p->dx)
    for (i = 0; i < p->batch; ++i)
      for (q = 0; q < p->in; ++q) {
        double s = 0.0;
        for (j = 0; j < p->out; ++j) s += GPUOPS__LIN_DH(i, j) * gpuops__cpu_ld(p->dt, p->w, j * p->in + q);
        gpuops__cpu_st(p->dt, p->dx, i * p->in + q, s);
      }
  if (p->dw)
    for (j = 0; j < p->out; ++j)
      for (q = 0; q < p->in; ++q) {
        double s = 0.0;
        for (i = 0; i < p->batch; ++i) s += GPUOPS__LIN_DH(i, j) * gpuops__cpu_ld(p->dt, p->x, i * p->in + q);
        p->dw[j * p->in + q] = (float)s;
      }
  if (p->db)
    for (j = 0; j < p->out; ++j) {
      double s = 0.0;
      for (i = 0; i < p->batch; ++i) s += GPUOPS__LIN_DH(i, j);
      p->db[j] = (float)s;
    }
#undef GPUOPS__LIN_DH
  return GPUOPS_OK;
}

GPUOPS__FAMILY_GPU(linbwd, gpuops__linbwd_args, !p->dx && !p->dw && !p->db)

#define GPUOPS__LIN_TYPES(X) X(f16, gpuops_f16, GPUOPS__F16) X(bf16, gpuops_bf16, GPUOPS__BF16)
#define GPUOPS__LIN_DEF(S, T, D)                                                                                            \
  gpuops_status gpuops_linear_fwd_##S(T *y, T *preact, const T *x, const T *w, const T *bias, int64_t batch, int64_t in,    \
                                      int64_t out, gpuops_activation act, gpuops_algo algo, gpuops_stream stream) {         \
    gpuops__gemm_args p = gpuops__linear_fwd_make(D, y, preact, x, w, bias, batch, in, out, act);                           \
    p.algo = algo; p.stream = stream; return gpuops__gemm_gpu(&p);                                                          \
  }                                                                                                                         \
  gpuops_status gpuops_cpu_linear_fwd_##S(T *y, T *preact, const T *x, const T *w, const T *bias, int64_t batch,           \
                                          int64_t in, int64_t out, gpuops_activation act) {                                 \
    gpuops__gemm_args p = gpuops__linear_fwd_make(D, y, preact, x, w, bias, batch, in, out, act);                           \
    return gpuops__gemm_cpu(&p);                                                                                            \
  }                                                                                                                         \
  gpuops_status gpuops_linear_bwd_##S(T *dx, float *dw, float *db, const T *dy, const T *preact, const T *x, const T *w,    \
                                      int64_t batch, int64_t in, int64_t out, gpuops_activation act, void *workspace,       \
                                      size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream) {                     \
    gpuops__linbwd_args p = gpuops__linbwd_make(D, dx, dw, db, dy, preact, x, w, batch, in, out, act);                      \
    p.workspace = workspace; p.workspace_bytes = workspace_bytes; p.algo = algo; p.stream = stream;                         \
    return gpuops__linbwd_gpu(&p);                                                                                          \
  }                                                                                                                         \
  gpuops_status gpuops_cpu_linear_bwd_##S(T *dx, float *dw, float *db, const T *dy, const T *preact, const T *x,            \
                                          const T *w, int64_t batch, int64_t in, int64_t out, gpuops_activation act) {      \
    gpuops__linbwd_args p = gpuops__linbwd_make(D, dx, dw, db, dy, preact, x, w, batch, in, out, act);                      \
    return gpuops__linbwd_cpu(&p);                                                                                          \
  }
GPUOPS__LIN_TYPES(GPUOPS__LIN_DEF)
#undef GPUOPS__LIN_DEF

/* -- The training step's loss and optimizer ------------------------------------------------------ */
size_t gpuops_mse_loss_workspace_size(int64_t n) {
  int64_t blocks;
  if (n <= 0) return 0;
  blocks = (n + GPUOPS__MSE_CHUNK - 1) / GPUOPS__MSE_CHUNK;
  return (size_t)(blocks < GPUOPS__MSE_BLOCKS ? blocks : GPUOPS__MSE_BLOCKS) * 4;
}

/* One loss or optimizer call. MSE: out = loss, o16 = dy, a = y, b = target, n = rows * cols (rows,
   cols kept for the checks). AdamW: w, m, v, o16 = w16, g, n, and the scalars. */
typedef enum gpuops__train_op { GPUOPS__TRAIN_MSE = 0, GPUOPS__TRAIN_ADAMW = 1 } gpuops__train_op;
typedef struct gpuops__train_args {
  gpuops__train_op op;
  gpuops__dtype dt;
  float *out, *w, *m, *v;
  void *o16;
  const void *a, *b;
  const float *g;
  int64_t rows, cols, n, step;
  float lr, beta1, beta2, eps, wd;
  void *workspace;
  size_t workspace_bytes;
  gpuops_stream stream;
} gpuops__train_args;

static gpuops__train_args gpuops__mse_make(gpuops__dtype dt, float *loss, void *dy, const void *y, const void *t, int64_t rows, int64_t cols) {
  gpuops__train_args p;
  memset(&p, 0, sizeof p);
  p.op = GPUOPS__TRAIN_MSE; p.dt = dt; p.out = loss; p.o16 = dy; p.a = y; p.b = t; p.rows = rows; p.cols = cols;
  return p;
}
static gpuops__train_args gpuops__adamw_make(gpuops__dtype dt, float *w, float *m, float *v, void *w16, const float *g, int64_t n, float lr,
                                             float b1, float b2, float eps, float wd, int64_t step) {
  gpuops__train_args p;
  memset(&p, 0, sizeof p);
  p.op = GPUOPS__TRAIN_ADAMW; p.dt = dt; p.w = w; p.m = m; p.v = v; p.o16 = w16; p.g = g; p.n = n;
  p.lr = lr; p.beta1 = b1; p.beta2 = b2; p.eps = eps; p.wd = wd; p.step = step;
  return p;
}

static gpuops_status gpuops__train_check_cpu(gpuops__train_args *p, int cpu) {
  size_t b16, b32;
  if (p->op == GPUOPS__TRAIN_MSE) {
    if (gpuops__matrix(p->rows, p->cols, &p->n) != GPUOPS_OK) return GPUOPS_ERR_INVALID_ARGUMENT;
    if (!p->out) return GPUOPS_ERR_INVALID_ARGUMENT;
    if (!gpuops__aligned(p->out, 4)) return GPUOPS_ERR_MISALIGNED;
    if (p->n == 0) return GPUOPS_OK;
    if (!p->a || !p->b) return GPUOPS_ERR_INVALID_ARGUMENT;
    if (!gpuops__aligned(p->a, 2) || !gpuops__aligned(p->b, 2) || !gpuops__aligned(p->o16, 2)) return GPUOPS_ERR_MISALIGNED;
    b16 = gpuops__bytes(p->n, 2);
    if (b16 == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
    if (gpuops__overlap(p->o16, b16, p->a, b16, 1) || gpuops__overlap(p->o16, b16, p->b, b16, 0) || gpuops__overlap(p->out, 4, p->a, b16, 0) ||
        gpuops__overlap(p->out, 4, p->b, b16, 0) || gpuops__overlap(p->out, 4, p->o16, b16, 0))
      return GPUOPS_ERR_INVALID_ARGUMENT;
    if (cpu) return GPUOPS_OK;
    {
      const size_t need = gpuops_mse_loss_workspace_size(p->n);
      gpuops_status st = gpuops__check_workspace(p->workspace, p->workspace_bytes, need, p->a, b16, p->b, b16);
      if (st == GPUOPS_OK && (gpuops__overlap(p->workspace, need, p->o16, b16, 0) || gpuops__overlap(p->workspace, need, p->out, 4, 0)))
        st = GPUOPS_ERR_INVALID_ARGUMENT;
      return st;
    }
  }
  if (p->n < 0 || p->step < 1 || !(p->beta1 >= 0.0f && p->beta1 < 1.0f) || !(p->beta2 >= 0.0f && p->beta2 < 1.0f) || !(p->eps >= 0.0f) ||
      !(p->lr - p->lr == 0.0f) || !(p->wd - p->wd == 0.0f))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->n == 0) return GPUOPS_OK;
  if (!p->w || !p->m || !p->v || !p->g) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__aligned(p->w, 4) || !gpuops__aligned(p->m, 4) || !gpuops__aligned(p->v, 4) || !gpuops__aligned(p->g, 4) || !gpuops__aligned(p->o16, 2))
    return GPUOPS_ERR_MISALIGNED;
  b32 = gpuops__bytes(p->n, 4); b16 = gpuops__bytes(p->n, 2);
  if (b32 == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  {
    const void *ptr[5] = {p->w, p->m, p->v, p->o16, p->g};
    const size_t len[5] = {b32, b32, b32, b16, b32};
    int i, j;
    for (i = 0; i < 5; ++i)
      for (j = i + 1; j < 5; ++j)
        if (gpuops__overlap(ptr[i], len[i], ptr[j], len[j], 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
  }
  return GPUOPS_OK;
}
static gpuops_status gpuops__train_check(const gpuops__train_args *p) {
  gpuops__train_args q = *p;
  return gpuops__train_check_cpu(&q, 0);
}

/* The CPU forms, in double. */
static gpuops_status gpuops__train_cpu(gpuops__train_args *p) {
  gpuops_status st = gpuops__train_check_cpu(p, 1);
  int64_t i;
  if (st != GPUOPS_OK) return st;
  if (p->op == GPUOPS__TRAIN_MSE) {
    double s = 0.0;
    for (i = 0; i < p->n; ++i) {
      const double d = gpuops__cpu_ld(p->dt, p->a, i) - gpuops__cpu_ld(p->dt, p->b, i);
      s += d * d;
      if (p->o16) gpuops__cpu_st(p->dt, p->o16, i, 2.0 * d / (double)p->n);
    }
    *p->out = p->n > 0 ? (float)(s / (double)p->n) : 0.0f;
    return GPUOPS_OK;
  }
  {
    const double bc1 = 1.0 - pow((double)p->beta1, (double)p->step), bc2 = 1.0 - pow((double)p->beta2, (double)p->step);
    for (i = 0; i < p->n; ++i) {
      const double g = p->g[i];
      double w = p->w[i], m = p->m[i], v = p->v[i];
      w -= (double)p->lr * (double)p->wd * w;
      m = (double)p->beta1 * m + (1.0 - (double)p->beta1) * g;
      v = (double)p->beta2 * v + (1.0 - (double)p->beta2) * g * g;
      w -= (double)p->lr * (m / bc1) / (sqrt(v / bc2) + (double)p->eps);
      p->w[i] = (float)w, p->m[i] = (float)m, p->v[i] = (float)v;
      if (p->o16) gpuops__cpu_st(p->dt, p->o16, i, (double)(float)w);
    }
  }
  return GPUOPS_OK;
}

GPUOPS__FAMILY_GPU(train, gpuops__train_args, p->op == GPUOPS__TRAIN_ADAMW && p->n == 0)

#define GPUOPS__TRAIN_DEF(S, T, D)                                                                                         \
  gpuops_status gpuops_mse_loss_##S(float *loss, T *dy, const T *y, const T *target, int64_t rows, int64_t cols,          \
                                    void *workspace, size_t workspace_bytes, gpuops_stream stream) {                      \
    gpuops__train_args p = gpuops__mse_make(D, loss, dy, y, target, rows, cols);                                           \
    p.workspace = workspace; p.workspace_bytes = workspace_bytes; p.stream = stream;                                       \
    if (gpuops__matrix(rows, cols, &p.n) != GPUOPS_OK) return GPUOPS_ERR_INVALID_ARGUMENT;                                 \
    return gpuops__train_gpu(&p);                                                                                          \
  }                                                                                                                        \
  gpuops_status gpuops_cpu_mse_loss_##S(float *loss, T *dy, const T *y, const T *target, int64_t rows, int64_t cols) {     \
    gpuops__train_args p = gpuops__mse_make(D, loss, dy, y, target, rows, cols);                                           \
    return gpuops__train_cpu(&p);                                                                                          \
  }                                                                                                                        \
  gpuops_status gpuops_adamw_step_##S(float *w, float *m, float *v, T *w16, const float *grad, int64_t n, float lr,       \
                                      float beta1, float beta2, float eps, float weight_decay, int64_t step,              \
                                      gpuops_stream stream) {                                                              \
    gpuops__train_args p = gpuops__adamw_make(D, w, m, v, w16, grad, n, lr, beta1, beta2, eps, weight_decay, step);        \
    p.stream = stream; return gpuops__train_gpu(&p);                                                                       \
  }                                                                                                                        \
  gpuops_status gpuops_cpu_adamw_step_##S(float *w, float *m, float *v, T *w16, const float *grad, int64_t n, float lr,   \
                                          float beta1, float beta2, float eps, float weight_decay, int64_t step) {        \
    gpuops__train_args p = gpuops__adamw_make(D, w, m, v, w16, grad, n, lr, beta1, beta2, eps, weight_decay, step);        \
    return gpuops__train_cpu(&p);                                                                                          \
  }
GPUOPS__LIN_TYPES(GPUOPS__TRAIN_DEF)
#undef GPUOPS__TRAIN_DEF

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* GPUOPS_NO_GEMM */


/* ---- I.8 Normalization and rotary embeddings ------------------------------------------------ */
#ifndef GPUOPS_NO_NORM
#ifdef __cplusplus
extern "C" {
#endif

#define GPUOPS__NORM_ENUM(OP, name, RMS, RES, GELU, BWD) GPUOPS__NORM_##OP,
typedef enum gpuops__norm_op { GPUOPS__NORM_OPS(GPUOPS__NORM_ENUM) GPUOPS__NORM_COUNT_ } gpuops__norm_op;
#undef GPUOPS__NORM_ENUM

/* An op's properties, from the registry. */
typedef struct gpuops__norm_props { int rms, res, gelu, bwd; } gpuops__norm_props;
static inline gpuops__norm_props gpuops__norm_prop(gpuops__norm_op op) {
#define GPUOPS__NORM_PROP(OP, name, RMS, RES, GELU, BWD) { RMS, RES, GELU, BWD },
  static const gpuops__norm_props props[] = { GPUOPS__NORM_OPS(GPUOPS__NORM_PROP) };
#undef GPUOPS__NORM_PROP
  return props[op];
}

/* One norm call. Forward: y, h (add_* only), mean, rstd written; x, res, gamma, beta read. Backward:
   y = dx, dgamma, dbeta written; dy, x, mean_in, rstd_in, gamma, beta (layernorm_gelu) read. */
typedef struct gpuops__norm_args {
  gpuops__norm_op op;
  gpuops__dtype dt;
  void *y, *h, *dgamma, *dbeta;
  float *mean, *rstd;
  const void *x, *res, *dy, *gamma, *beta;
  const float *mean_in, *rstd_in;
  int64_t rows, cols;
  float eps;
  int act; /* gpuops_activation: GELU erf or tanh for layernorm_gelu, else NONE */
  int cpu;  /* the CPU form: no workspace */
  void *ws;
  size_t ws_bytes;
  gpuops_algo algo;
  gpuops_stream stream;
} gpuops__norm_args;

static gpuops__norm_args gpuops__norm_make(gpuops__norm_op op, gpuops__dtype dt) {
  gpuops__norm_args p;
  memset(&p, 0, sizeof p);
  p.op = op; p.dt = dt; p.eps = 1.0f; p.algo = GPUOPS_ALGO_AUTO;
  return p;
}

/* Partial sums per gradient of a backward over rows x cols (the kernels use at most this many
   rows of partials), and the bytes of both levels of both gradients. */
static inline int64_t gpuops__norm_cols4(int64_t cols) { return (cols + 3) / 4 * 4; }
static inline int64_t gpuops__norm_max_parts(int64_t rows, int64_t cols) {
  /* A multiple of 8 (the row groups of a block) where the cap allows, at least 1. */
  int64_t cap = GPUOPS__NORM_PART_FLOATS / gpuops__norm_cols4(cols), r8 = rows / 8 * 8 + (rows % 8 ? 8 : 0);
  cap = cap >= 8 ? cap / 8 * 8 : cap < 1 ? 1 : cap;
  return r8 < cap ? r8 : cap;
}
size_t gpuops_norm_bwd_workspace_size(int64_t rows, int64_t cols) {
  int64_t parts;
  if (rows <= 0 || cols <= 0) return 0;
  parts = gpuops__norm_max_parts(rows, cols);
  parts += (parts + GPUOPS__NORM_FINISH_ROWS - 1) / GPUOPS__NORM_FINISH_ROWS;
  return gpuops__bytes(2 * parts * gpuops__norm_cols4(cols), 4);
}

/* The versions of a norm op (AUTO always). */
static inline unsigned long long gpuops__norm_versions(gpuops__norm_op op) {
  const gpuops__norm_props pr = gpuops__norm_prop(op);
  unsigned long long v = GPUOPS__ALGO_BIT(ROW_REGISTERS) | GPUOPS__ALGO_BIT(ONLINE);
  if (!pr.bwd) v |= GPUOPS__ALGO_BIT(BLOCK_PER_ROW) | GPUOPS__ALGO_BIT(WARP_PER_ROW);
  if (pr.res || pr.gelu) v |= GPUOPS__ALGO_BIT(UNFUSED);
  return v;
}

/* Sizes, version and scalars first, then (for a non-empty call) pointers, alignment, overlap and
   the workspace. */
static gpuops_status gpuops__norm_check(const gpuops__norm_args *p) {
  const gpuops__norm_props pr = gpuops__norm_prop(p->op);
  const size_t es = gpuops__dtype_size(p->dt);
  size_t mb, vb, sb;
  int64_t n;
  int grads, i, k;
  gpuops_status st;
  if (p->rows < 0 || p->cols < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  st = gpuops__check_algo(p->algo, gpuops__norm_versions(p->op));
  if (st != GPUOPS_OK) return st;
  if (!pr.bwd && !(p->eps > 0.0f && p->eps <= 3.4028235e38f)) return GPUOPS_ERR_INVALID_ARGUMENT; /* NaN fails too */
  if (pr.gelu && p->act != GPUOPS_ACT_GELU_ERF && p->act != GPUOPS_ACT_GELU_TANH) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (gpuops__matrix(p->rows, p->cols, &n) != GPUOPS_OK) return GPUOPS_ERR_INVALID_ARGUMENT;
  grads = pr.bwd && (p->dgamma || p->dbeta);
  if (p->cols == 0 || (p->rows == 0 && !grads)) return GPUOPS_OK;
  mb = gpuops__bytes(n, es), vb = gpuops__bytes(p->cols, es), sb = gpuops__bytes(p->rows, 4);
  if (mb == SIZE_MAX || vb == SIZE_MAX || sb == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->rows > 0 && (!p->y || !p->x || (pr.res && (!p->res || !p->h)) || (pr.bwd && (!p->dy || !p->rstd_in || (!pr.rms && !p->mean_in)))))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  {
    /* Every array: outputs first (OUTS of them), matrices flagged (in place allowed among them). */
    enum { OUTS = 4, ALL = 13 };
    const void *ptr[ALL] = {p->y, p->h, pr.bwd ? (const void *)p->dgamma : (const void *)p->mean,
                            pr.bwd ? (const void *)p->dbeta : (const void *)p->rstd,
                            p->x, p->res, p->dy, p->gamma, p->beta, p->mean_in, p->rstd_in, NULL, NULL};
    const size_t bytes[ALL] = {mb, mb, pr.bwd ? vb : sb, pr.bwd ? vb : sb, mb, mb, mb, vb, vb, sb, sb, 0, 0};
    const size_t align[ALL] = {es, es, pr.bwd ? es : 4, pr.bwd ? es : 4, es, es, es, es, es, 4, 4, 1, 1};
    const int matrix[ALL] = {1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0};
    for (i = 0; i < ALL; ++i)
      if (ptr[i] && !gpuops__aligned(ptr[i], align[i])) return GPUOPS_ERR_MISALIGNED;
    for (i = 0; i < OUTS; ++i)
      for (k = i + 1; k < ALL; ++k)
        if (gpuops__overlap(ptr[i], bytes[i], ptr[k], bytes[k], k >= OUTS && matrix[i] && matrix[k]))
          return GPUOPS_ERR_INVALID_ARGUMENT;
    /* UNFUSED layernorm_gelu backward writes dz into dx before it reads x again. */
    if (pr.bwd && p->algo == GPUOPS_ALGO_UNFUSED && p->y == p->x) return GPUOPS_ERR_INVALID_ARGUMENT;
    if (grads && p->rows > 0 && !p->cpu) {
      const size_t need = gpuops_norm_bwd_workspace_size(p->rows, p->cols);
      st = gpuops__check_workspace(p->ws, p->ws_bytes, need, NULL, 0, NULL, 0);
      if (st != GPUOPS_OK) return st;
      for (i = 0; i < ALL; ++i)
        if (gpuops__overlap(p->ws, need, ptr[i], bytes[i], 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
    }
  }
  return GPUOPS_OK;
}

/* The CPU oracle, in double. Forward per row: h (add_*: x + residual rounded, stored first and read
   back), the two-pass statistics, the outputs. Backward: dgamma and dbeta column by column first
   (they read dy and x, which dx may overwrite), then dx row by row. */
static gpuops_status gpuops__norm_cpu(const gpuops__norm_args *p) {
  const gpuops__norm_props pr = gpuops__norm_prop(p->op);
  const gpuops__dtype dt = p->dt;
  gpuops_status st = gpuops__norm_check(p);
  int64_t r, j;
  if (st != GPUOPS_OK || p->cols == 0) return st;
  if (!pr.bwd) {
    if (p->rows == 0) return GPUOPS_OK;
    for (r = 0; r < p->rows; ++r) {
      const int64_t o = r * p->cols;
      const void *src = p->x;
      double mean = 0.0, var = 0.0, rstd;
      if (pr.res) {
        for (j = 0; j < p->cols; ++j) gpuops__cpu_st(dt, p->h, o + j, gpuops__cpu_ld(dt, p->x, o + j) + gpuops__cpu_ld(dt, p->res, o + j));
        src = p->h;
      }
      if (!pr.rms) {
        for (j = 0; j < p->cols; ++j) mean += gpuops__cpu_ld(dt, src, o + j);
        mean /= (double)p->cols;
      }
      for (j = 0; j < p->cols; ++j) {
        const double d = gpuops__cpu_ld(dt, src, o + j) - mean;
        var += d * d;
      }
      var /= (double)p->cols;
      rstd = 1.0 / sqrt(var + (double)p->eps);
      if (p->mean) p->mean[r] = (float)mean;
      if (p->rstd) p->rstd[r] = (float)rstd;
      for (j = 0; j < p->cols; ++j) {
        double v = (gpuops__cpu_ld(dt, src, o + j) - mean) * rstd;
        if (p->gamma) v *= gpuops__cpu_ld(dt, p->gamma, j);
        if (p->beta && !pr.rms) v += gpuops__cpu_ld(dt, p->beta, j);
        gpuops__cpu_st(dt, p->y, o + j, gpuops__cpu_activate(v, p->act));
      }
    }
    return GPUOPS_OK;
  }
#define GPUOPS__NORM_CPU_DZ(R, J, XHAT, DZ)                                                                  \
  do {                                                                                                       \
    const double mu_ = pr.rms ? 0.0 : (double)p->mean_in[R];                                                 \
    const double g_ = p->gamma ? gpuops__cpu_ld(dt, p->gamma, J) : 1.0;                                      \
    XHAT = (gpuops__cpu_ld(dt, p->x, (R) * p->cols + (J)) - mu_) * (double)p->rstd_in[R];                    \
    DZ = gpuops__cpu_ld(dt, p->dy, (R) * p->cols + (J));                                                     \
    if (pr.gelu) DZ *= gpuops__cpu_activate_grad(XHAT * g_ + (p->beta ? gpuops__cpu_ld(dt, p->beta, J) : 0.0), p->act); \
  } while (0)
  if (p->dgamma || p->dbeta)
    for (j = 0; j < p->cols; ++j) {
      double sg = 0.0, sb = 0.0, xhat, dz;
      for (r = 0; r < p->rows; ++r) {
        GPUOPS__NORM_CPU_DZ(r, j, xhat, dz);
        sg += dz * xhat, sb += dz;
      }
      if (p->dgamma) gpuops__cpu_st(dt, p->dgamma, j, sg);
      if (p->dbeta) gpuops__cpu_st(dt, p->dbeta, j, sb);
    }
  for (r = 0; r < p->rows; ++r) {
    const int64_t o = r * p->cols;
    double a = 0.0, b = 0.0, xhat, dz;
    for (j = 0; j < p->cols; ++j) {
      const double g = p->gamma ? gpuops__cpu_ld(dt, p->gamma, j) : 1.0;
      GPUOPS__NORM_CPU_DZ(r, j, xhat, dz);
      a += dz * g, b += dz * g * xhat;
    }
    a /= (double)p->cols, b /= (double)p->cols;
    if (pr.rms) a = 0.0;
    for (j = 0; j < p->cols; ++j) {
      const double g = p->gamma ? gpuops__cpu_ld(dt, p->gamma, j) : 1.0;
      GPUOPS__NORM_CPU_DZ(r, j, xhat, dz);
      gpuops__cpu_st(dt, p->y, o + j, (double)p->rstd_in[r] * (dz * g - a - xhat * b));
    }
  }
#undef GPUOPS__NORM_CPU_DZ
  return GPUOPS_OK;
}

GPUOPS__FAMILY_GPU(norm, gpuops__norm_args, p->cols == 0 || (p->rows == 0 && !(gpuops__norm_prop(p->op).bwd && (p->dgamma || p->dbeta))))

/* -- The C entry points, from the registry x the float storage types: each op's parameters (after
   the pointer arguments' types T) and how they fill the argument struct. -- */
#define GPUOPS__NORM_P_LN_FWD(T) T *y, float *mean, float *rstd, const T *x, const T *gamma, const T *beta, int64_t rows, int64_t cols, float eps
#define GPUOPS__NORM_A_LN_FWD p.y = y, p.mean = mean, p.rstd = rstd, p.x = x, p.gamma = gamma, p.beta = beta, p.rows = rows, p.cols = cols, p.eps = eps
#define GPUOPS__NORM_P_RMS_FWD(T) T *y, float *rstd, const T *x, const T *gamma, int64_t rows, int64_t cols, float eps
#define GPUOPS__NORM_A_RMS_FWD p.y = y, p.rstd = rstd, p.x = x, p.gamma = gamma, p.rows = rows, p.cols = cols, p.eps = eps
#define GPUOPS__NORM_P_ADD_LN_FWD(T) \
  T *y, T *h, float *mean, float *rstd, const T *x, const T *residual, const T *gamma, const T *beta, int64_t rows, int64_t cols, float eps
#define GPUOPS__NORM_A_ADD_LN_FWD GPUOPS__NORM_A_LN_FWD, p.h = h, p.res = residual
#define GPUOPS__NORM_P_ADD_RMS_FWD(T) T *y, T *h, float *rstd, const T *x, const T *residual, const T *gamma, int64_t rows, int64_t cols, float eps
#define GPUOPS__NORM_A_ADD_RMS_FWD GPUOPS__NORM_A_RMS_FWD, p.h = h, p.res = residual
#define GPUOPS__NORM_P_LN_GELU_FWD(T) GPUOPS__NORM_P_LN_FWD(T), gpuops_gelu_approx approx
#define GPUOPS__NORM_A_LN_GELU_FWD GPUOPS__NORM_A_LN_FWD, p.act = approx == GPUOPS_GELU_ERF ? GPUOPS_ACT_GELU_ERF : approx == GPUOPS_GELU_TANH ? GPUOPS_ACT_GELU_TANH : -1
#define GPUOPS__NORM_P_LN_BWD(T) \
  T *dx, T *dgamma, T *dbeta, const T *dy, const T *x, const float *mean, const float *rstd, const T *gamma, int64_t rows, int64_t cols
#define GPUOPS__NORM_A_LN_BWD                                                                                  \
  p.y = dx, p.dgamma = dgamma, p.dbeta = dbeta, p.dy = dy, p.x = x, p.mean_in = mean, p.rstd_in = rstd, p.gamma = gamma, \
  p.rows = rows, p.cols = cols
#define GPUOPS__NORM_P_RMS_BWD(T) T *dx, T *dgamma, const T *dy, const T *x, const float *rstd, const T *gamma, int64_t rows, int64_t cols
#define GPUOPS__NORM_A_RMS_BWD p.y = dx, p.dgamma = dgamma, p.dy = dy, p.x = x, p.rstd_in = rstd, p.gamma = gamma, p.rows = rows, p.cols = cols
#define GPUOPS__NORM_P_LN_GELU_BWD(T)                                                                                   \
  T *dx, T *dgamma, T *dbeta, const T *dy, const T *x, const float *mean, const float *rstd, const T *gamma, const T *beta, \
  int64_t rows, int64_t cols, gpuops_gelu_approx approx
#define GPUOPS__NORM_A_LN_GELU_BWD GPUOPS__NORM_A_LN_BWD, p.beta = beta, p.act = approx == GPUOPS_GELU_ERF ? GPUOPS_ACT_GELU_ERF : approx == GPUOPS_GELU_TANH ? GPUOPS_ACT_GELU_TANH : -1
/* The GPU form's trailing parameters: a backward takes the workspace. */
#define GPUOPS__NORM_WS_0
#define GPUOPS__NORM_WS_1 void *workspace, size_t workspace_bytes,
#define GPUOPS__NORM_WSA_0
#define GPUOPS__NORM_WSA_1 p.ws = workspace, p.ws_bytes = workspace_bytes;
#define GPUOPS__NORM_DEF(S, T, D, ROW) GPUOPS__NORM_DEF_(S, T, D, GPUOPS__EXPAND ROW)
#define GPUOPS__NORM_DEF_(...) GPUOPS__NORM_DEF__(__VA_ARGS__)
#define GPUOPS__NORM_DEF__(S, T, D, OP, name, RMS, RES, GELU, BWD)                                                           \
  gpuops_status gpuops_##name##_##S(GPUOPS__NORM_P_##OP(T), GPUOPS__NORM_WS_##BWD gpuops_algo algo, gpuops_stream stream) { \
    gpuops__norm_args p = gpuops__norm_make(GPUOPS__NORM_##OP, D);                                                          \
    GPUOPS__NORM_A_##OP;                                                                                                    \
    GPUOPS__NORM_WSA_##BWD p.algo = algo; p.stream = stream;                                                                \
    return gpuops__norm_gpu(&p);                                                                                            \
  }                                                                                                                         \
  gpuops_status gpuops_cpu_##name##_##S(GPUOPS__NORM_P_##OP(T)) {                                                           \
    gpuops__norm_args p = gpuops__norm_make(GPUOPS__NORM_##OP, D);                                                          \
    GPUOPS__NORM_A_##OP;                                                                                                    \
    p.cpu = 1;                                                                                                              \
    return gpuops__norm_cpu(&p);                                                                                            \
  }
#define GPUOPS__NORM_ROW(OP, name, RMS, RES, GELU, BWD) GPUOPS__FLOAT_TYPES(GPUOPS__NORM_DEF, (OP, name, RMS, RES, GELU, BWD))
GPUOPS__NORM_OPS(GPUOPS__NORM_ROW)

/* -- RoPE -- */
/* One RoPE call: y = rotate(x) (forward) or dx = rotate^-1(dy) (backward: y = dx, x = dy). */
typedef struct gpuops__rope_args {
  gpuops__dtype dt;
  int bwd;
  void *y;
  const void *x;
  const int64_t *positions;
  const float *cos_sin;
  int64_t tokens, heads, head_dim, rot_dim, ldy, ldx;
  float base;
  int pairing;
  gpuops_algo algo;
  gpuops_stream stream;
} gpuops__rope_args;

static gpuops_status gpuops__rope_check(const gpuops__rope_args *p) {
  const size_t es = gpuops__dtype_size(p->dt);
  int64_t width, sx, sy;
  size_t bx, by;
  gpuops_status st;
  if (p->tokens < 0 || p->heads < 0 || p->head_dim < 0 || p->rot_dim < 0 || p->rot_dim > p->head_dim || p->rot_dim % 2)
    return GPUOPS_ERR_INVALID_ARGUMENT;
  st = gpuops__check_algo(p->algo, GPUOPS__ALGO_BIT(NAIVE));
  if (st != GPUOPS_OK) return st;
  if (p->pairing != GPUOPS_ROPE_ADJACENT && p->pairing != GPUOPS_ROPE_HALVES) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!p->cos_sin && !(p->base > 0.0f && p->base <= 3.4028235e38f)) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (gpuops__matrix(p->heads, p->head_dim, &width) != GPUOPS_OK) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->ldx < 1 || p->ldy < 1 || p->ldx < width || p->ldy < width) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->tokens == 0 || width == 0) return GPUOPS_OK;
  sx = gpuops__span(p->tokens, width, p->ldx), sy = gpuops__span(p->tokens, width, p->ldy);
  if (sx < 0 || sy < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  bx = gpuops__bytes(sx, es), by = gpuops__bytes(sy, es);
  if (bx == SIZE_MAX || by == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!p->y || !p->x) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__aligned(p->y, es) || !gpuops__aligned(p->x, es) || (p->positions && !gpuops__aligned(p->positions, 8)) ||
      (p->cos_sin && !gpuops__aligned(p->cos_sin, 4)))
    return GPUOPS_ERR_MISALIGNED;
  if (gpuops__overlap(p->y, by, p->x, bx, p->ldy == p->ldx) || gpuops__overlap(p->y, by, p->positions, gpuops__bytes(p->tokens, 8), 0))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  /* The cache's extent is unknown (positions index it): y may not start inside its first row. */
  if (p->cos_sin && gpuops__overlap(p->y, by, p->cos_sin, gpuops__bytes(p->rot_dim > 0 ? p->rot_dim : 1, 4), 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
  return GPUOPS_OK;
}

/* f_i = base^(-2i / rot_dim) rounded to f32, computed in double: the GPU forms compute it the same way. */
static inline float gpuops__rope_freq(int64_t i, int64_t rot_dim, double log2_base) {
  return (float)exp2(-(double)(2 * i) / (double)rot_dim * log2_base);
}

/* The CPU oracle: the angle p * f_i rounded to f32 (the product of two f32 is exact in double), its
   cos and sin in double, the rotation in double. */
static gpuops_status gpuops__rope_cpu(const gpuops__rope_args *p) {
  gpuops_status st = gpuops__rope_check(p);
  const int64_t half = p->rot_dim / 2;
  const double l2b = log2((double)p->base), sgn = p->bwd ? -1.0 : 1.0;
  int64_t t, h, d;
  if (st != GPUOPS_OK || p->tokens == 0 || p->heads == 0 || p->head_dim == 0) return st;
  for (t = 0; t < p->tokens; ++t) {
    const int64_t pos = p->positions ? p->positions[t] : t;
    for (h = 0; h < p->heads; ++h) {
      const int64_t ox = t * p->ldx + h * p->head_dim, oy = t * p->ldy + h * p->head_dim;
      for (d = 0; d < half; ++d) {
        const int64_t ia = p->pairing == GPUOPS_ROPE_ADJACENT ? 2 * d : d, ib = p->pairing == GPUOPS_ROPE_ADJACENT ? 2 * d + 1 : d + half;
        const double a = gpuops__cpu_ld(p->dt, p->x, ox + ia), b = gpuops__cpu_ld(p->dt, p->x, ox + ib);
        double c, s;
        if (p->cos_sin) {
          c = p->cos_sin[pos * p->rot_dim + d], s = sgn * p->cos_sin[pos * p->rot_dim + half + d];
        } else {
          const float ang = (float)((double)(float)pos * (double)gpuops__rope_freq(d, p->rot_dim, l2b));
          c = cos((double)ang), s = sgn * sin((double)ang);
        }
        gpuops__cpu_st(p->dt, p->y, oy + ia, a * c - b * s);
        gpuops__cpu_st(p->dt, p->y, oy + ib, b * c + a * s);
      }
      for (d = p->rot_dim; d < p->head_dim; ++d) gpuops__cpu_st(p->dt, p->y, oy + d, gpuops__cpu_ld(p->dt, p->x, ox + d));
    }
  }
  return GPUOPS_OK;
}

GPUOPS__FAMILY_GPU(rope, gpuops__rope_args, p->tokens == 0 || p->heads == 0 || p->head_dim == 0)

#define GPUOPS__ROPE_DEF__(S, T, D, DIR, BWD)                                                                                      \
  static gpuops__rope_args gpuops__rope_make_##DIR##_##S(T *y, const T *x, const int64_t *positions, const float *cos_sin,  \
                                                          int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim,   \
                                                          int64_t ldy, int64_t ldx, float base, gpuops_rope_pairing pairing) { \
    gpuops__rope_args p;                                                                                                      \
    memset(&p, 0, sizeof p);                                                                                                  \
    p.dt = D, p.bwd = BWD, p.y = y, p.x = x, p.positions = positions, p.cos_sin = cos_sin, p.tokens = tokens;                 \
    p.heads = heads, p.head_dim = head_dim, p.rot_dim = rot_dim, p.ldy = ldy, p.ldx = ldx, p.base = base;                     \
    p.pairing = (int)pairing, p.algo = GPUOPS_ALGO_AUTO;                                                                      \
    return p;                                                                                                                 \
  }                                                                                                                           \
  gpuops_status gpuops_rope_##DIR##_##S(T *y, const T *x, const int64_t *positions, const float *cos_sin, int64_t tokens,   \
                                        int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t ldy, int64_t ldx, float base, \
                                        gpuops_rope_pairing pairing, gpuops_algo algo, gpuops_stream stream) {               \
    gpuops__rope_args p = gpuops__rope_make_##DIR##_##S(y, x, positions, cos_sin, tokens, heads, head_dim, rot_dim, ldy, ldx, \
                                                          base, pairing);                                                     \
    p.algo = algo, p.stream = stream;                                                                                         \
    return gpuops__rope_gpu(&p);                                                                                              \
  }                                                                                                                           \
  gpuops_status gpuops_cpu_rope_##DIR##_##S(T *y, const T *x, const int64_t *positions, const float *cos_sin, int64_t tokens, \
                                            int64_t heads, int64_t head_dim, int64_t rot_dim, int64_t ldy, int64_t ldx,      \
                                            float base, gpuops_rope_pairing pairing) {                                      \
    gpuops__rope_args p = gpuops__rope_make_##DIR##_##S(y, x, positions, cos_sin, tokens, heads, head_dim, rot_dim, ldy, ldx, \
                                                          base, pairing);                                                     \
    return gpuops__rope_cpu(&p);                                                                                              \
  }
#define GPUOPS__ROPE_DEF(S, T, D, C) GPUOPS__ROPE_DEF_(S, T, D, GPUOPS__EXPAND C)
#define GPUOPS__ROPE_DEF_(...) GPUOPS__ROPE_DEF__(__VA_ARGS__)
GPUOPS__FLOAT_TYPES(GPUOPS__ROPE_DEF, (fwd, 0))
GPUOPS__FLOAT_TYPES(GPUOPS__ROPE_DEF, (bwd, 1))

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* GPUOPS_NO_NORM */



/* ---- I.10 Attention ---------------------------------------------------------------------------- */
#ifndef GPUOPS_NO_ATTENTION
#ifdef __cplusplus
extern "C" {
#endif

gpuops_attention_dims gpuops_attention_dims_bshd(int64_t batch, int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q, int64_t heads_kv, int64_t head_dim) {
  gpuops_attention_dims d;
  memset(&d, 0, sizeof d);
  d.batch = batch, d.seqlen_q = seqlen_q, d.seqlen_k = seqlen_k, d.heads_q = heads_q, d.heads_kv = heads_kv, d.head_dim = head_dim;
  d.q_stride[0] = d.o_stride[0] = seqlen_q * heads_q * head_dim, d.q_stride[1] = d.o_stride[1] = heads_q * head_dim;
  d.q_stride[2] = d.o_stride[2] = head_dim;
  d.k_stride[0] = d.v_stride[0] = seqlen_k * heads_kv * head_dim, d.k_stride[1] = d.v_stride[1] = heads_kv * head_dim;
  d.k_stride[2] = d.v_stride[2] = head_dim;
  return d;
}

gpuops_attention_dims gpuops_attention_dims_bhsd(int64_t batch, int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q, int64_t heads_kv, int64_t head_dim) {
  gpuops_attention_dims d;
  memset(&d, 0, sizeof d);
  d.batch = batch, d.seqlen_q = seqlen_q, d.seqlen_k = seqlen_k, d.heads_q = heads_q, d.heads_kv = heads_kv, d.head_dim = head_dim;
  d.q_stride[0] = d.o_stride[0] = heads_q * seqlen_q * head_dim, d.q_stride[1] = d.o_stride[1] = head_dim;
  d.q_stride[2] = d.o_stride[2] = seqlen_q * head_dim;
  d.k_stride[0] = d.v_stride[0] = heads_kv * seqlen_k * head_dim, d.k_stride[1] = d.v_stride[1] = head_dim;
  d.k_stride[2] = d.v_stride[2] = seqlen_k * head_dim;
  return d;
}

float gpuops_attention_default_scale(int64_t head_dim) { return head_dim > 0 ? (float)(1.0 / sqrt((double)head_dim)) : 0.0f; }

/* One attention call, forward or backward, as the checks, the CPU reference and the launcher see it. */
typedef struct gpuops__attn_args {
  gpuops__dtype dt;
  int bwd;
  void *o, *dq, *dk, *dv; /* outputs: o (forward), dq, dk, dv (backward) */
  float *lse;             /* forward output (may be NULL)                 */
  const void *q, *k, *v, *oin, *dout;
  const float *lse_in;    /* backward input                               */
  gpuops_attention_dims d;
  float scale;
  int mask;
  void *workspace;
  size_t workspace_bytes;
  gpuops_algo algo;
  gpuops_stream stream;
} gpuops__attn_args;

#define GPUOPS__ATTN_ALGOS (GPUOPS__ALGO_BIT(NAIVE) | GPUOPS__ALGO_BIT(FLASH) | GPUOPS__ALGO_BIT(FLASH2) | GPUOPS__ALGO_BIT(WGMMA))

/* The elements a [n0, n1, n2, head_dim] tensor with strides st covers (first to one past the last),
   or -1 when two of its rows overlap, a stride is negative or the span does not fit int64_t. The
   three dimensions are taken from the smallest stride up: each must step past everything inside it. */
static inline int64_t gpuops__attn_span(const int64_t st[3], int64_t n0, int64_t n1, int64_t n2, int64_t head_dim) {
  int64_t s[3], n[3], span = head_dim;
  int i, j;
  s[0] = st[0], s[1] = st[1], s[2] = st[2], n[0] = n0, n[1] = n1, n[2] = n2;
  if (n0 == 0 || n1 == 0 || n2 == 0 || head_dim == 0) return 0;
  for (i = 0; i < 3; ++i)
    for (j = i + 1; j < 3; ++j)
      if (s[j] < s[i]) {
        int64_t t = s[i]; s[i] = s[j], s[j] = t;
        t = n[i], n[i] = n[j], n[j] = t;
      }
  for (i = 0; i < 3; ++i) {
    if (n[i] == 1) continue;
    if (s[i] < span) return -1;
    if (n[i] - 1 > (INT64_MAX - span) / s[i]) return -1;
    span += (n[i] - 1) * s[i];
  }
  return span;
}

static inline int gpuops__attn_empty(const gpuops__attn_args *p) {
  const gpuops_attention_dims *d = &p->d;
  return d->batch == 0 || d->heads_q == 0 || (p->bwd ? d->seqlen_q == 0 && d->seqlen_k == 0 : d->seqlen_q == 0);
}

/* Every host check, in order: sizes, scalars and enums, then (for a call that is not empty)
   pointers, alignment, extents and overlap. The workspace is the launcher's (it depends on the
   version that runs). */
static gpuops_status gpuops__attn_check_cpu(const gpuops__attn_args *p, int cpu) {
  const gpuops_attention_dims *d = &p->d;
  const size_t es = gpuops__dtype_size(p->dt);
  int64_t sq, sk, sv, so, rows;
  size_t bq, bk, bv, bo, bl;
  gpuops_status st;
  if (d->batch < 0 || d->seqlen_q < 0 || d->seqlen_k < 0 || d->heads_q < 0 || d->heads_kv < 1) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (d->heads_q % d->heads_kv != 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (d->head_dim < 8 || d->head_dim > 256 || d->head_dim % 8 != 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!(p->scale - p->scale == 0.0f)) return GPUOPS_ERR_INVALID_ARGUMENT; /* NaN or infinite */
  if (p->mask != GPUOPS_ATTN_MASK_NONE && p->mask != GPUOPS_ATTN_MASK_CAUSAL) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!cpu) {
    st = gpuops__check_algo(p->algo, GPUOPS__ATTN_ALGOS);
    if (st != GPUOPS_OK) return st;
  }
  if (gpuops__attn_empty(p)) return GPUOPS_OK;
  if (d->seqlen_k == 0 && d->seqlen_q > 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  sq = gpuops__attn_span(d->q_stride, d->batch, d->seqlen_q, d->heads_q, d->head_dim);
  so = gpuops__attn_span(d->o_stride, d->batch, d->seqlen_q, d->heads_q, d->head_dim);
  sk = gpuops__attn_span(d->k_stride, d->batch, d->seqlen_k, d->heads_kv, d->head_dim);
  sv = gpuops__attn_span(d->v_stride, d->batch, d->seqlen_k, d->heads_kv, d->head_dim);
  if (sq < 0 || so < 0 || sk < 0 || sv < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (gpuops__matrix(d->batch, d->heads_q, &rows) != GPUOPS_OK || gpuops__matrix(rows, d->seqlen_q, &rows) != GPUOPS_OK)
    return GPUOPS_ERR_INVALID_ARGUMENT;
  bq = gpuops__bytes(sq, es), bo = gpuops__bytes(so, es), bk = gpuops__bytes(sk, es), bv = gpuops__bytes(sv, es), bl = gpuops__bytes(rows, 4);
  if (bq == SIZE_MAX || bo == SIZE_MAX || bk == SIZE_MAX || bv == SIZE_MAX || bl == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!p->bwd) {
    const void *ins[3] = {p->q, p->k, p->v};
    const size_t inb[3] = {bq, bk, bv};
    int i;
    if (!p->o || !p->q || !p->k || !p->v) return GPUOPS_ERR_INVALID_ARGUMENT;
    if (!gpuops__aligned(p->o, es) || !gpuops__aligned(p->q, es) || !gpuops__aligned(p->k, es) || !gpuops__aligned(p->v, es) ||
        !gpuops__aligned(p->lse, 4))
      return GPUOPS_ERR_MISALIGNED;
    if (gpuops__overlap(p->o, bo, p->lse, bl, 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
    for (i = 0; i < 3; ++i)
      if (gpuops__overlap(p->o, bo, ins[i], inb[i], 0) || gpuops__overlap(p->lse, bl, ins[i], inb[i], 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
  } else {
    const void *outs[3] = {p->dq, p->dk, p->dv}, *ins[6] = {p->q, p->k, p->v, p->oin, p->dout, p->lse_in};
    const size_t outb[3] = {bq, bk, bv}, inb[6] = {bq, bk, bv, bo, bo, bl};
    int i, j;
    if (!p->dq || !p->dk || !p->dv || !p->q || !p->k || !p->v || !p->oin || !p->dout || !p->lse_in) return GPUOPS_ERR_INVALID_ARGUMENT;
    for (i = 0; i < 3; ++i)
      if (!gpuops__aligned(outs[i], es)) return GPUOPS_ERR_MISALIGNED;
    for (i = 0; i < 5; ++i)
      if (!gpuops__aligned(ins[i], es)) return GPUOPS_ERR_MISALIGNED;
    if (!gpuops__aligned(p->lse_in, 4)) return GPUOPS_ERR_MISALIGNED;
    for (i = 0; i < 3; ++i) {
      for (j = 0; j < 6; ++j)
        if (gpuops__overlap(outs[i], outb[i], ins[j], inb[j], 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
      for (j = i + 1; j < 3; ++j)
        if (gpuops__overlap(outs[i], outb[i], outs[j], outb[j], 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
    }
  }
  return GPUOPS_OK;
}
static gpuops_status gpuops__attn_check(const gpuops__attn_args *p) { return gpuops__attn_check_cpu(p, 0); }

/* Workspace bytes of one version (AUTO: the most any version AUTO picks needs). Layouts:
   NAIVE forward  one head's S (seqlen_q x seqlen_k f32) then its P in 16 bits (the f32 storage
                  uses S alone), reused head after head;
   FLASH forward  the running O (f32, [batch, heads_q, seqlen_q, head_dim]) then the running max
                  and sum of each row (f32 pairs);
   FLASH backward D_i = dO_i . O_i (f32, one a row);
   FLASH2 and WGMMA backward D_i (to a 16-byte boundary), then dQ in f32 ([batch, heads_q,
                  seqlen_q, head_dim]), then the split dK and dV partials below. */
/* FLASH2's (and WGMMA's) backward runs a block per (batch, kv head, GPUOPS__ATTN_BWD_KEYS keys), walking the
   query heads of its group. Where those blocks are few (MQA, small batches: 128 blocks at batch 4,
   seqlen 4096, one kv head, short of two waves on a GPU of 132 SMs) the group's query heads are
   split over `splits` blocks (a divisor of the group, up to 512 blocks in all; a rule of the
   dimensions alone, so the workspace size does not depend on the device). Each writes its f32 dK and
   dV partial sums to the workspace, and a second kernel adds them in a fixed order: deterministic. */
static inline int64_t gpuops__attn_bwd_splits(const gpuops_attention_dims *d) {
  int64_t g, blocks, s = 1, c;
  if (d->heads_kv <= 0 || d->heads_q % d->heads_kv != 0 || d->seqlen_k <= 0) return 1;
  g = d->heads_q / d->heads_kv;
  if (d->batch > 512 || d->heads_kv > 512) return 1;
  blocks = d->batch * d->heads_kv;
  if (blocks > 512 || (d->seqlen_k + GPUOPS__ATTN_BWD_KEYS - 1) / GPUOPS__ATTN_BWD_KEYS > 512 / blocks) return 1;
  blocks *= (d->seqlen_k + GPUOPS__ATTN_BWD_KEYS - 1) / GPUOPS__ATTN_BWD_KEYS;
  for (c = 2; c <= g && blocks * c <= 512; ++c)
    if (g % c == 0) s = c;
  return s;
}

static inline size_t gpuops__attn_ws(const gpuops_attention_dims *d, gpuops_algo algo, int bwd) {
  int64_t rows, n, s, splits;
  size_t naive = 0, flash = 0;
  if (!d || d->batch <= 0 || d->heads_q <= 0 || d->seqlen_q < 0 || d->seqlen_k < 0 || d->head_dim <= 0 || d->head_dim > 256) return 0;
  if (gpuops__matrix(d->batch, d->heads_q, &rows) != GPUOPS_OK || gpuops__matrix(rows, d->seqlen_q, &rows) != GPUOPS_OK ||
      gpuops__matrix(rows, d->head_dim + 2, &n) != GPUOPS_OK || n > INT64_MAX / 4 - 16)
    return SIZE_MAX;
  if (bwd) {
    if (algo == GPUOPS_ALGO_FLASH) return gpuops__bytes(rows, 4); /* D */
    if (algo != GPUOPS_ALGO_AUTO && algo != GPUOPS_ALGO_FLASH2 && algo != GPUOPS_ALGO_WGMMA) return 0;
    if (gpuops__matrix(rows, d->head_dim, &s) != GPUOPS_OK || s > INT64_MAX / 4 - rows - 16) return SIZE_MAX;
    n = 0; /* the split backward's dK and dV partials: 2 x splits x batch x heads_kv x seqlen_k x head_dim */
    splits = gpuops__attn_bwd_splits(d);
    if (splits > 1 &&
        (gpuops__matrix(2 * splits * d->batch * d->heads_kv, d->seqlen_k, &n) != GPUOPS_OK ||
         gpuops__matrix(n, d->head_dim, &n) != GPUOPS_OK || n > INT64_MAX / 4 - rows - s - 16))
      return SIZE_MAX;
    return gpuops__bytes((rows + 3) / 4 * 4 + s + n, 4); /* D (to a 16-byte boundary), dQ in f32, dK and dV partials */
  }
  if (gpuops__matrix(d->seqlen_q, d->seqlen_k, &s) != GPUOPS_OK || s > INT64_MAX / 6 - 16) return SIZE_MAX;
  naive = gpuops__bytes((s * 4 + 15) / 16 * 16 + s * 2, 1);
  flash = gpuops__bytes(n, 4);
  if (algo == GPUOPS_ALGO_NAIVE) return naive;
  if (algo == GPUOPS_ALGO_FLASH) return flash;
  if (algo == GPUOPS_ALGO_AUTO) return naive > flash ? naive : flash;
  return 0;
}
size_t gpuops_attention_fwd_workspace_size(const gpuops_attention_dims *dims, gpuops_algo algo) { return gpuops__attn_ws(dims, algo, 0); }
size_t gpuops_attention_bwd_workspace_size(const gpuops_attention_dims *dims, gpuops_algo algo) { return gpuops__attn_ws(dims, algo, 1); }

/* The workspace rule for the version that runs (called by the launcher before any launch). */
static inline gpuops_status gpuops__attn_check_ws(const gpuops__attn_args *p, gpuops_algo version) {
  const size_t es = gpuops__dtype_size(p->dt);
  const gpuops_attention_dims *d = &p->d;
  const size_t need = gpuops__attn_ws(d, version, p->bwd);
  const int64_t sq = gpuops__attn_span(d->q_stride, d->batch, d->seqlen_q, d->heads_q, d->head_dim);
  const int64_t so = gpuops__attn_span(d->o_stride, d->batch, d->seqlen_q, d->heads_q, d->head_dim);
  const int64_t sk = gpuops__attn_span(d->k_stride, d->batch, d->seqlen_k, d->heads_kv, d->head_dim);
  const int64_t sv = gpuops__attn_span(d->v_stride, d->batch, d->seqlen_k, d->heads_kv, d->head_dim);
  const size_t bl = gpuops__bytes(d->batch * d->heads_q * d->seqlen_q, 4);
  gpuops_status st;
  if (need == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  st = gpuops__check_workspace(p->workspace, p->workspace_bytes, need, p->q, gpuops__bytes(sq, es), p->k, gpuops__bytes(sk, es));
  if (st != GPUOPS_OK || need == 0) return st;
  if (gpuops__overlap(p->workspace, need, p->v, gpuops__bytes(sv, es), 0) ||
      gpuops__overlap(p->workspace, need, p->bwd ? p->oin : p->o, gpuops__bytes(so, es), 0) ||
      gpuops__overlap(p->workspace, need, p->bwd ? (const void *)p->lse_in : (const void *)p->lse, bl, 0))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->bwd && (gpuops__overlap(p->workspace, need, p->dout, gpuops__bytes(so, es), 0) ||
                 gpuops__overlap(p->workspace, need, p->dq, gpuops__bytes(sq, es), 0) ||
                 gpuops__overlap(p->workspace, need, p->dk, gpuops__bytes(sk, es), 0) ||
                 gpuops__overlap(p->workspace, need, p->dv, gpuops__bytes(sv, es), 0)))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  return GPUOPS_OK;
}

/* Whether query i of a call sees key j. */
static inline int gpuops__attn_sees(const gpuops__attn_args *p, int64_t i, int64_t j) {
  return p->mask != GPUOPS_ATTN_MASK_CAUSAL || j <= i + p->d.seqlen_k - p->d.seqlen_q;
}

/* The forward reference: per row, the scores in double, their maximum, the sum of exponentials,
   O = sum p v / sum and lse = m + log(sum), each rounded once. */
static gpuops_status gpuops__attn_fwd_cpu(const gpuops__attn_args *p) {
  const gpuops_attention_dims *d = &p->d;
  const int64_t group = d->heads_kv > 0 ? d->heads_q / d->heads_kv : 1, D = d->head_dim;
  int64_t b, h, i, j, e;
  gpuops_status st = gpuops__attn_check_cpu(p, 1);
  if (st != GPUOPS_OK || gpuops__attn_empty(p)) return st;
  for (b = 0; b < d->batch; ++b)
    for (h = 0; h < d->heads_q; ++h)
      for (i = 0; i < d->seqlen_q; ++i) {
        const int64_t qo = b * d->q_stride[0] + i * d->q_stride[1] + h * d->q_stride[2];
        const int64_t oo = b * d->o_stride[0] + i * d->o_stride[1] + h * d->o_stride[2];
        double m = -INFINITY, sum = 0.0, acc[256];
        for (e = 0; e < D; ++e) acc[e] = 0.0;
        for (j = 0; j < d->seqlen_k; ++j) { /* the maximum */
          const int64_t ko = b * d->k_stride[0] + j * d->k_stride[1] + (h / group) * d->k_stride[2];
          double s = 0.0;
          if (!gpuops__attn_sees(p, i, j)) continue;
          for (e = 0; e < D; ++e) s += gpuops__cpu_ld(p->dt, p->q, qo + e) * gpuops__cpu_ld(p->dt, p->k, ko + e);
          s *= (double)p->scale;
          if (s > m || s != s) m = s;
        }
        for (j = 0; j < d->seqlen_k && m > -INFINITY; ++j) {
          const int64_t ko = b * d->k_stride[0] + j * d->k_stride[1] + (h / group) * d->k_stride[2];
          const int64_t vo = b * d->v_stride[0] + j * d->v_stride[1] + (h / group) * d->v_stride[2];
          double s = 0.0, w;
          if (!gpuops__attn_sees(p, i, j)) continue;
          for (e = 0; e < D; ++e) s += gpuops__cpu_ld(p->dt, p->q, qo + e) * gpuops__cpu_ld(p->dt, p->k, ko + e);
          w = exp(s * (double)p->scale - m);
          sum += w;
          for (e = 0; e < D; ++e) acc[e] += w * gpuops__cpu_ld(p->dt, p->v, vo + e);
        }
        for (e = 0; e < D; ++e) gpuops__cpu_st(p->dt, p->o, oo + e, sum > 0.0 ? acc[e] / sum : 0.0);
        if (p->lse) p->lse[(b * d->heads_q + h) * d->seqlen_q + i] = sum > 0.0 ? (float)(m + log(sum)) : -INFINITY;
      }
  return GPUOPS_OK;
}

/* P_ij of the backward from the forward's lse (0 where the row sees nothing or the key is masked). */
static inline double gpuops__attn_p(const gpuops__attn_args *p, int64_t b, int64_t h, int64_t i, int64_t j) {
  const gpuops_attention_dims *d = &p->d;
  const int64_t group = d->heads_q / d->heads_kv, qo = b * d->q_stride[0] + i * d->q_stride[1] + h * d->q_stride[2];
  const int64_t ko = b * d->k_stride[0] + j * d->k_stride[1] + (h / group) * d->k_stride[2];
  const double lse = p->lse_in[(b * d->heads_q + h) * d->seqlen_q + i];
  double s = 0.0;
  int64_t e;
  if (!gpuops__attn_sees(p, i, j) || lse == -INFINITY) return 0.0;
  for (e = 0; e < d->head_dim; ++e) s += gpuops__cpu_ld(p->dt, p->q, qo + e) * gpuops__cpu_ld(p->dt, p->k, ko + e);
  return exp(s * (double)p->scale - lse);
}
/* dS_ij = P_ij (dO_i . v_j - D_i), D_i = dO_i . O_i. */
static inline double gpuops__attn_ds(const gpuops__attn_args *p, double pij, double di, int64_t b, int64_t h, int64_t i, int64_t j) {
  const gpuops_attention_dims *d = &p->d;
  const int64_t group = d->heads_q / d->heads_kv, oo = b * d->o_stride[0] + i * d->o_stride[1] + h * d->o_stride[2];
  const int64_t vo = b * d->v_stride[0] + j * d->v_stride[1] + (h / group) * d->v_stride[2];
  double dp = 0.0;
  int64_t e;
  if (pij == 0.0) return 0.0;
  for (e = 0; e < d->head_dim; ++e) dp += gpuops__cpu_ld(p->dt, p->dout, oo + e) * gpuops__cpu_ld(p->dt, p->v, vo + e);
  return pij * (dp - di);
}
static inline double gpuops__attn_di(const gpuops__attn_args *p, int64_t b, int64_t h, int64_t i) {
  const gpuops_attention_dims *d = &p->d;
  const int64_t oo = b * d->o_stride[0] + i * d->o_stride[1] + h * d->o_stride[2];
  double di = 0.0;
  int64_t e;
  for (e = 0; e < d->head_dim; ++e) di += gpuops__cpu_ld(p->dt, p->dout, oo + e) * gpuops__cpu_ld(p->dt, p->oin, oo + e);
  return di;
}

/* The backward reference, from the forward's O and lse as given (the algorithm the GPU runs, in
   double): dQ_i = scale sum_j dS_ij k_j; dK_j = scale sum_(h in group, i) dS_ij q_i;
   dV_j = sum_(h in group, i) P_ij dO_i. */
static gpuops_status gpuops__attn_bwd_cpu(const gpuops__attn_args *p) {
  const gpuops_attention_dims *d = &p->d;
  const int64_t D = d->head_dim;
  int64_t b, h, i, j, e, g;
  gpuops_status st = gpuops__attn_check_cpu(p, 1);
  if (st != GPUOPS_OK || gpuops__attn_empty(p)) return st;
  for (b = 0; b < d->batch; ++b)
    for (h = 0; h < d->heads_q; ++h)
      for (i = 0; i < d->seqlen_q; ++i) {
        const int64_t qo = b * d->q_stride[0] + i * d->q_stride[1] + h * d->q_stride[2], kvh = h / (d->heads_q / d->heads_kv);
        const double di = gpuops__attn_di(p, b, h, i);
        double acc[256];
        for (e = 0; e < D; ++e) acc[e] = 0.0;
        for (j = 0; j < d->seqlen_k; ++j) {
          const double ds = gpuops__attn_ds(p, gpuops__attn_p(p, b, h, i, j), di, b, h, i, j);
          const int64_t ko = b * d->k_stride[0] + j * d->k_stride[1] + kvh * d->k_stride[2];
          if (ds != 0.0)
            for (e = 0; e < D; ++e) acc[e] += ds * gpuops__cpu_ld(p->dt, p->k, ko + e);
        }
        for (e = 0; e < D; ++e) gpuops__cpu_st(p->dt, p->dq, qo + e, acc[e] * (double)p->scale);
      }
  for (b = 0; b < d->batch; ++b)
    for (h = 0; h < d->heads_kv; ++h)
      for (j = 0; j < d->seqlen_k; ++j) {
        const int64_t group = d->heads_q / d->heads_kv;
        const int64_t ko = b * d->k_stride[0] + j * d->k_stride[1] + h * d->k_stride[2];
        const int64_t vo = b * d->v_stride[0] + j * d->v_stride[1] + h * d->v_stride[2];
        double ak[256], av[256];
        for (e = 0; e < D; ++e) ak[e] = av[e] = 0.0;
        for (g = h * group; g < (h + 1) * group; ++g)
          for (i = 0; i < d->seqlen_q; ++i) {
            const double pij = gpuops__attn_p(p, b, g, i, j);
            const int64_t qo = b * d->q_stride[0] + i * d->q_stride[1] + g * d->q_stride[2];
            const int64_t oo = b * d->o_stride[0] + i * d->o_stride[1] + g * d->o_stride[2];
            double ds;
            if (pij == 0.0) continue;
            ds = gpuops__attn_ds(p, pij, gpuops__attn_di(p, b, g, i), b, g, i, j);
            for (e = 0; e < D; ++e) {
              ak[e] += ds * gpuops__cpu_ld(p->dt, p->q, qo + e);
              av[e] += pij * gpuops__cpu_ld(p->dt, p->dout, oo + e);
            }
          }
        for (e = 0; e < D; ++e) {
          gpuops__cpu_st(p->dt, p->dk, ko + e, ak[e] * (double)p->scale);
          gpuops__cpu_st(p->dt, p->dv, vo + e, av[e]);
        }
      }
  return GPUOPS_OK;
}

GPUOPS__FAMILY_GPU(attn, gpuops__attn_args, gpuops__attn_empty(p))

/* -- The entry points, per floating-point storage type. -- */
static gpuops__attn_args gpuops__attn_make(gpuops__dtype dt, int bwd, const gpuops_attention_dims *dims, float scale, gpuops_attention_mask mask) {
  gpuops__attn_args p;
  memset(&p, 0, sizeof p);
  p.dt = dt, p.bwd = bwd, p.scale = scale, p.mask = (int)mask, p.algo = GPUOPS_ALGO_AUTO;
  if (dims) p.d = *dims;
  else p.d.heads_kv = -1; /* fails the checks */
  return p;
}
#define GPUOPS__ATTN_DEF(S, T, D, C)                                                                                              \
  gpuops_status gpuops_attention_fwd_##S(T *o, float *lse, const T *q, const T *k, const T *v, const gpuops_attention_dims *dims,  \
                                         float scale, gpuops_attention_mask mask, void *workspace, size_t workspace_bytes,       \
                                         gpuops_algo algo, gpuops_stream stream) {                                               \
    gpuops__attn_args p = gpuops__attn_make(D, 0, dims, scale, mask);                                                            \
    p.o = o, p.lse = lse, p.q = q, p.k = k, p.v = v, p.workspace = workspace, p.workspace_bytes = workspace_bytes;               \
    p.algo = algo, p.stream = stream;                                                                                            \
    return gpuops__attn_gpu(&p);                                                                                                 \
  }                                                                                                                              \
  gpuops_status gpuops_attention_bwd_##S(T *dq, T *dk, T *dv, const T *dout, const T *q, const T *k, const T *v, const T *o,     \
                                         const float *lse, const gpuops_attention_dims *dims, float scale,                       \
                                         gpuops_attention_mask mask, void *workspace, size_t workspace_bytes, gpuops_algo algo,  \
                                         gpuops_stream stream) {                                                                 \
    gpuops__attn_args p = gpuops__attn_make(D, 1, dims, scale, mask);                                                            \
    p.dq = dq, p.dk = dk, p.dv = dv, p.dout = dout, p.q = q, p.k = k, p.v = v, p.oin = o, p.lse_in = lse;                        \
    p.workspace = workspace, p.workspace_bytes = workspace_bytes, p.algo = algo, p.stream = stream;                              \
    return gpuops__attn_gpu(&p);                                                                                                 \
  }                                                                                                                              \
  gpuops_status gpuops_cpu_attention_fwd_##S(T *o, float *lse, const T *q, const T *k, const T *v, const gpuops_attention_dims *dims, \
                                             float scale, gpuops_attention_mask mask) {                                          \
    gpuops__attn_args p = gpuops__attn_make(D, 0, dims, scale, mask);                                                            \
    p.o = o, p.lse = lse, p.q = q, p.k = k, p.v = v;                                                                             \
    return gpuops__attn_fwd_cpu(&p);                                                                                             \
  }                                                                                                                              \
  gpuops_status gpuops_cpu_attention_bwd_##S(T *dq, T *dk, T *dv, const T *dout, const T *q, const T *k, const T *v, const T *o, \
                                             const float *lse, const gpuops_attention_dims *dims, float scale,                   \
                                             gpuops_attention_mask mask) {                                                       \
    gpuops__attn_args p = gpuops__attn_make(D, 1, dims, scale, mask);                                                            \
    p.dq = dq, p.dk = dk, p.dv = dv, p.dout = dout, p.q = q, p.k = k, p.v = v, p.oin = o, p.lse_in = lse;                        \
    return gpuops__attn_bwd_cpu(&p);                                                                                             \
  }
GPUOPS__FLOAT_TYPES(GPUOPS__ATTN_DEF, ~)
#undef GPUOPS__ATTN_DEF

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* GPUOPS_NO_ATTENTION */


/* ---- I.11 Convolution ----------------------------------------------------------------------- */
#ifndef GPUOPS_NO_CONV
#ifdef __cplusplus
extern "C" {
#endif

/* The ops of the family. */
typedef enum gpuops__conv_op {
  GPUOPS__CONV_1D = 0,        /* learning path: y = x * f, one signal              */
  GPUOPS__CONV_PLANE = 1,     /* learning path: one h x w plane, one fh x fw filter */
  GPUOPS__CONV_FWD = 2,       /* image models: y = act(conv(x, w) + bias)           */
  GPUOPS__CONV_BWD_DATA = 3,  /* dx from dy and w                                   */
  GPUOPS__CONV_BWD_FILTER = 4 /* dw from dy and x                                   */
} gpuops__conv_op;

/* One convolution call as the checks, the CPU reference and the GPU launcher see it. The
   learning-path ops use the shape as one image of one channel: conv1d is h = 1, w = n, r = 1,
   s = fw; conv2d_plane is h x w with an r = fh by s = fw filter (stride, dilation 1). */
typedef struct gpuops__conv_args {
  gpuops__conv_op op;
  gpuops__dtype dt;
  void *y;             /* the output: y, dx or dw                                   */
  const void *a, *b;   /* the inputs: (x, f), (x, w), (dy, w) for dx, (dy, x) for dw */
  const void *bias;
  gpuops_conv2d_shape sh;
  int shape_null;      /* the caller passed no shape                                */
  int cpu;             /* the CPU form: no workspace                                */
  gpuops_activation act;
  void *ws;
  size_t ws_bytes;
  gpuops_algo algo;
  gpuops_stream stream;
} gpuops__conv_args;

static gpuops__conv_args gpuops__conv_make(gpuops__conv_op op, gpuops__dtype dt, void *y, const void *a, const void *b, const gpuops_conv2d_shape *sh) {
  gpuops__conv_args p;
  memset(&p, 0, sizeof p);
  p.op = op; p.dt = dt; p.y = y; p.a = a; p.b = b; p.algo = GPUOPS_ALGO_AUTO; p.act = GPUOPS_ACT_NONE;
  if (sh) p.sh = *sh; else p.shape_null = 1;
  return p;
}
static gpuops__conv_args gpuops__conv_make_plane(gpuops__conv_op op, float *y, const float *x, const float *f, int64_t h, int64_t w, int64_t fh, int64_t fw) {
  gpuops_conv2d_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.n = 1; sh.c = 1; sh.k = 1; sh.h = h; sh.w = w; sh.r = fh; sh.s = fw;
  sh.stride_h = sh.stride_w = sh.dil_h = sh.dil_w = 1;
  sh.pad_h = (fh - 1) / 2; sh.pad_w = (fw - 1) / 2;
  return gpuops__conv_make(op, GPUOPS__F32, y, x, f, &sh);
}

/* The learning path's versions of both ops; conv1d adds REGISTER_1D, conv2d_plane REGISTER_2D. */
#define GPUOPS__CONV_LEARN_ALGOS (GPUOPS__ALGO_BIT(NAIVE) | GPUOPS__ALGO_BIT(CONST_FILTER) | GPUOPS__ALGO_BIT(SHARED_TILED) | GPUOPS__ALGO_BIT(CACHED_HALO))
#define GPUOPS__CONV_FWD_ALGOS (GPUOPS__ALGO_BIT(UNFUSED) | GPUOPS__ALGO_BIT(IMPLICIT_GEMM) | GPUOPS__ALGO_BIT(MMA_SYNC) | GPUOPS__ALGO_BIT(WGMMA))
#define GPUOPS__CONV_BWD_ALGOS (GPUOPS__ALGO_BIT(IMPLICIT_GEMM))

/* The output size of one dimension: (in + 2 pad - dil (f - 1) - 1) / stride + 1, or 0 when the
   window never fits (the caller has checked the operands' ranges, so nothing overflows). */
static inline int64_t gpuops__conv_out_dim(int64_t in, int64_t f, int64_t stride, int64_t pad, int64_t dil) {
  const int64_t span = in + 2 * pad - dil * (f - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

/* Sizes and scalars of a shape: GPUOPS_OK with P, Q (>= 1) in pq, else GPUOPS_ERR_INVALID_ARGUMENT.
   Each size is bounded (2^40; filters and steps 2^20) so that no product below overflows int64_t. */
static gpuops_status gpuops__conv_shape_check(const gpuops_conv2d_shape *s, int64_t pq[2]) {
  const int64_t big = (int64_t)1 << 40, step = (int64_t)1 << 20;
  if (s->n < 0 || s->k < 0 || s->c < 1 || s->h < 1 || s->w < 1 || s->r < 1 || s->s < 1) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (s->n > big || s->k > big || s->c > big || s->h > big || s->w > big || s->r > step || s->s > step) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (s->stride_h < 1 || s->stride_w < 1 || s->dil_h < 1 || s->dil_w < 1 || s->pad_h < 0 || s->pad_w < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (s->stride_h > step || s->stride_w > step || s->dil_h > step || s->dil_w > step || s->pad_h > step || s->pad_w > step)
    return GPUOPS_ERR_INVALID_ARGUMENT;
  if (s->layout != GPUOPS_LAYOUT_NCHW && s->layout != GPUOPS_LAYOUT_NHWC) return GPUOPS_ERR_INVALID_ARGUMENT;
  pq[0] = gpuops__conv_out_dim(s->h, s->r, s->stride_h, s->pad_h, s->dil_h);
  pq[1] = gpuops__conv_out_dim(s->w, s->s, s->stride_w, s->pad_w, s->dil_w);
  return pq[0] >= 1 && pq[1] >= 1 ? GPUOPS_OK : GPUOPS_ERR_INVALID_ARGUMENT;
}

/* Element counts of x, w and y (or -1 past int64_t). */
static void gpuops__conv_counts(const gpuops_conv2d_shape *s, const int64_t pq[2], int64_t cnt[3]) {
  int64_t t;
  cnt[0] = cnt[1] = cnt[2] = -1;
  if (gpuops__matrix(s->n, s->c, &t) == GPUOPS_OK && gpuops__matrix(t, s->h, &t) == GPUOPS_OK && gpuops__matrix(t, s->w, &t) == GPUOPS_OK) cnt[0] = t;
  if (gpuops__matrix(s->k, s->c, &t) == GPUOPS_OK && gpuops__matrix(t, s->r, &t) == GPUOPS_OK && gpuops__matrix(t, s->s, &t) == GPUOPS_OK) cnt[1] = t;
  if (gpuops__matrix(s->n, s->k, &t) == GPUOPS_OK && gpuops__matrix(t, pq[0], &t) == GPUOPS_OK && gpuops__matrix(t, pq[1], &t) == GPUOPS_OK) cnt[2] = t;
}

/* Workspace of UNFUSED: the unrolled matrix (N P Q) x (C R S) of 4-byte elements (the largest
   dtype), rounded up to 256 bytes, then the (N P Q) x K f32 product. 0 when it does not fit. */
static size_t gpuops__conv_unfused_ws(const gpuops_conv2d_shape *s, const int64_t pq[2]) {
  int64_t m, crs, a, c;
  size_t ab, cb;
  if (gpuops__matrix(s->n, pq[0], &m) != GPUOPS_OK || gpuops__matrix(m, pq[1], &m) != GPUOPS_OK) return 0;
  if (gpuops__matrix(s->c, s->r, &crs) != GPUOPS_OK || gpuops__matrix(crs, s->s, &crs) != GPUOPS_OK) return 0;
  if (gpuops__matrix(m, crs, &a) != GPUOPS_OK || gpuops__matrix(m, s->k, &c) != GPUOPS_OK) return 0;
  ab = gpuops__bytes(a, 4); cb = gpuops__bytes(c, 4);
  if (ab == SIZE_MAX || cb == SIZE_MAX || ab > SIZE_MAX / 2 - 256 || cb > SIZE_MAX / 2) return 0;
  return (ab + 255) / 256 * 256 + cb;
}

/* The filter gradient's reduction split (see the contract): its kernel's tiles are
   GPUOPS__CONV_WGRAD_TILE square and take 8 output pixels a step. Parts of at least 64 steps,
   up to 512 blocks in all; 1 (no split, no workspace) from 256 tiles up. */
#define GPUOPS__CONV_WGRAD_TILE 128
static int64_t gpuops__conv_wgrad_splits(const gpuops_conv2d_shape *s, const int64_t pq[2]) {
  const int64_t t = GPUOPS__CONV_WGRAD_TILE;
  int64_t tiles, steps, splits;
  if (s->k < 1) return 1; /* (the callers have checked that K C R S fits int64_t for K >= 1) */
  tiles = (s->k + t - 1) / t * ((s->c * s->r * s->s + t - 1) / t);
  if (tiles < 1 || tiles >= 256 || s->n > ((int64_t)1 << 40) / pq[0] / pq[1]) return 1;
  steps = (s->n * pq[0] * pq[1] + 7) / 8;
  splits = 512 / tiles;
  if (splits > steps / 64) splits = steps / 64;
  return splits < 2 ? 1 : splits;
}
/* The bytes of the filter gradient's parts (0: no split, or too large). */
static size_t gpuops__conv_wgrad_ws(const gpuops_conv2d_shape *s, const int64_t pq[2], int64_t nw) {
  const int64_t splits = gpuops__conv_wgrad_splits(s, pq);
  int64_t n;
  if (splits < 2 || gpuops__matrix(splits, nw, &n) != GPUOPS_OK) return 0;
  return gpuops__bytes(n, 4) == SIZE_MAX ? 0 : gpuops__bytes(n, 4);
}

/* Whether the op has no output elements (the checks passed): nothing to launch. */
static int gpuops__conv_empty(const gpuops__conv_args *p) {
  switch (p->op) {
  case GPUOPS__CONV_1D: case GPUOPS__CONV_PLANE: return p->sh.h == 0 || p->sh.w == 0;
  case GPUOPS__CONV_FWD: return p->sh.n == 0 || p->sh.k == 0;
  case GPUOPS__CONV_BWD_DATA: return p->sh.n == 0;
  default: return p->sh.k == 0;
  }
}

/* Every host check, in the contract's order: shape and sizes, enums, version; then (for a
   non-empty call) pointers, alignment, extents, overlap, workspace. */
static gpuops_status gpuops__conv_check(const gpuops__conv_args *p) {
  const gpuops_conv2d_shape *s = &p->sh;
  const size_t es = gpuops__dtype_size(p->dt);
  int64_t pq[2] = {0, 0}, cnt[3], nin_a, nin_b, nout;
  size_t yb, ab, bb, biasb;
  gpuops_status st;
  if (p->shape_null) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->op == GPUOPS__CONV_1D || p->op == GPUOPS__CONV_PLANE) {
    if (s->h < 0 || s->w < 0 || s->r < 1 || s->s < 1 || s->r > GPUOPS__CONV_MAX_F || s->s > GPUOPS__CONV_MAX_F) return GPUOPS_ERR_INVALID_ARGUMENT;
    st = gpuops__check_algo(p->algo, GPUOPS__CONV_LEARN_ALGOS | (p->op == GPUOPS__CONV_1D ? GPUOPS__ALGO_BIT(REGISTER_1D) : GPUOPS__ALGO_BIT(REGISTER_2D)));
    if (st != GPUOPS_OK) return st;
    if (gpuops__conv_empty(p)) return GPUOPS_OK;
    if (gpuops__matrix(s->h, s->w, &nout) != GPUOPS_OK) return GPUOPS_ERR_INVALID_ARGUMENT;
    nin_a = nout; nin_b = s->r * s->s;
  } else {
    st = gpuops__conv_shape_check(s, pq);
    if (st != GPUOPS_OK) return st;
    if (p->op == GPUOPS__CONV_FWD && ((int)p->act < GPUOPS_ACT_NONE || (int)p->act > GPUOPS_ACT_RELU)) return GPUOPS_ERR_INVALID_ARGUMENT;
    st = gpuops__check_algo(p->algo, p->op == GPUOPS__CONV_FWD ? GPUOPS__CONV_FWD_ALGOS : GPUOPS__CONV_BWD_ALGOS);
    if (st != GPUOPS_OK) return st;
    if ((p->algo == GPUOPS_ALGO_MMA_SYNC || p->algo == GPUOPS_ALGO_WGMMA) && (p->dt == GPUOPS__F32 || s->layout != GPUOPS_LAYOUT_NHWC))
      return GPUOPS_ERR_UNSUPPORTED;
    if (p->algo == GPUOPS_ALGO_WGMMA && s->c % 8 != 0) return GPUOPS_ERR_UNSUPPORTED;
    gpuops__conv_counts(s, pq, cnt);
    if (cnt[0] < 0 || cnt[1] < 0 || cnt[2] < 0) return GPUOPS_ERR_INVALID_ARGUMENT;
    if (gpuops__conv_empty(p)) return GPUOPS_OK;
    /* (output, input a, input b) element counts per op: x, w, y = cnt[0], cnt[1], cnt[2] */
    if (p->op == GPUOPS__CONV_FWD) nout = cnt[2], nin_a = cnt[0], nin_b = cnt[1];
    else if (p->op == GPUOPS__CONV_BWD_DATA) nout = cnt[0], nin_a = cnt[2], nin_b = cnt[1];
    else nout = cnt[1], nin_a = cnt[2], nin_b = cnt[0];
  }
  if (!p->y || (nin_a > 0 && !p->a) || (nin_b > 0 && !p->b)) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (!gpuops__aligned(p->y, es) || !gpuops__aligned(p->a, es) || !gpuops__aligned(p->b, es) || (p->bias && !gpuops__aligned(p->bias, es)))
    return GPUOPS_ERR_MISALIGNED;
  if ((p->algo == GPUOPS_ALGO_WGMMA || (p->algo == GPUOPS_ALGO_MMA_SYNC && s->c % 8 == 0)) && (!gpuops__aligned(p->a, 16) || !gpuops__aligned(p->b, 16)))
    return GPUOPS_ERR_MISALIGNED;
  yb = gpuops__bytes(nout, es); ab = gpuops__bytes(nin_a, es); bb = gpuops__bytes(nin_b, es);
  biasb = p->bias ? gpuops__bytes(s->k, es) : 0;
  if (yb == SIZE_MAX || ab == SIZE_MAX || bb == SIZE_MAX || biasb == SIZE_MAX) return GPUOPS_ERR_INVALID_ARGUMENT;
  if (gpuops__overlap(p->y, yb, p->a, ab, 0) || gpuops__overlap(p->y, yb, p->b, bb, 0) || gpuops__overlap(p->y, yb, p->bias, biasb, 0))
    return GPUOPS_ERR_INVALID_ARGUMENT;
  if (p->op == GPUOPS__CONV_FWD && p->algo == GPUOPS_ALGO_UNFUSED) {
    const size_t need = gpuops__conv_unfused_ws(s, pq);
    if (need == 0) return GPUOPS_ERR_INVALID_ARGUMENT;
    st = gpuops__check_workspace(p->ws, p->ws_bytes, need, p->y, yb, p->a, ab);
    if (st != GPUOPS_OK) return st;
    if (gpuops__overlap(p->ws, need, p->b, bb, 0) || gpuops__overlap(p->ws, need, p->bias, biasb, 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
  }
  if (p->op == GPUOPS__CONV_BWD_FILTER && !p->cpu && gpuops__conv_wgrad_splits(s, pq) > 1) {
    const size_t need = gpuops__conv_wgrad_ws(s, pq, nout);
    if (need == 0) return GPUOPS_ERR_INVALID_ARGUMENT;
    st = gpuops__check_workspace(p->ws, p->ws_bytes, need, p->y, yb, p->a, ab);
    if (st != GPUOPS_OK) return st;
    if (gpuops__overlap(p->ws, need, p->b, bb, 0)) return GPUOPS_ERR_INVALID_ARGUMENT;
  }
  return GPUOPS_OK;
}

/* Element offsets in either layout (x: n, c, h, w; w: k, c, r, s; y: n, k, p, q). */
static inline int64_t gpuops__conv_xi(const gpuops_conv2d_shape *s, int64_t n, int64_t c, int64_t h, int64_t w) {
  return s->layout == GPUOPS_LAYOUT_NCHW ? ((n * s->c + c) * s->h + h) * s->w + w : ((n * s->h + h) * s->w + w) * s->c + c;
}
static inline int64_t gpuops__conv_wi(const gpuops_conv2d_shape *s, int64_t k, int64_t c, int64_t r, int64_t q) {
  return s->layout == GPUOPS_LAYOUT_NCHW ? ((k * s->c + c) * s->r + r) * s->s + q : ((k * s->r + r) * s->s + q) * s->c + c;
}
static inline int64_t gpuops__conv_yi(const gpuops_conv2d_shape *s, const int64_t pq[2], int64_t n, int64_t k, int64_t p, int64_t q) {
  return s->layout == GPUOPS_LAYOUT_NCHW ? ((n * s->k + k) * pq[0] + p) * pq[1] + q : ((n * pq[0] + p) * pq[1] + q) * s->k + k;
}

/* The reference: every output's sum in double (the learning-path ops are the forward with one
   image, one channel and one filter), rounded once. */
static gpuops_status gpuops__conv_cpu(const gpuops__conv_args *a) {
  const gpuops_conv2d_shape *s = &a->sh;
  const gpuops__dtype dt = a->dt;
  int64_t pq[2], n, k, c, h, w, r, q, oh, ow;
  gpuops_status st = gpuops__conv_check(a);
  if (st != GPUOPS_OK || gpuops__conv_empty(a)) return st;
  pq[0] = gpuops__conv_out_dim(s->h, s->r, s->stride_h, s->pad_h, s->dil_h);
  pq[1] = gpuops__conv_out_dim(s->w, s->s, s->stride_w, s->pad_w, s->dil_w);
  if (a->op == GPUOPS__CONV_1D || a->op == GPUOPS__CONV_PLANE) pq[0] = s->h, pq[1] = s->w; /* "same": an even filter pads one more after */
  if (a->op == GPUOPS__CONV_1D || a->op == GPUOPS__CONV_PLANE || a->op == GPUOPS__CONV_FWD) {
    for (n = 0; n < s->n; ++n)
      for (k = 0; k < s->k; ++k)
        for (oh = 0; oh < pq[0]; ++oh)
          for (ow = 0; ow < pq[1]; ++ow) {
            double v = a->bias ? gpuops__cpu_ld(dt, a->bias, k) : 0.0;
            for (c = 0; c < s->c; ++c)
              for (r = 0; r < s->r; ++r) {
                h = oh * s->stride_h - s->pad_h + r * s->dil_h;
                if (h < 0 || h >= s->h) continue;
                for (q = 0; q < s->s; ++q) {
                  w = ow * s->stride_w - s->pad_w + q * s->dil_w;
                  if (w < 0 || w >= s->w) continue;
                  v += gpuops__cpu_ld(dt, a->a, gpuops__conv_xi(s, n, c, h, w)) * gpuops__cpu_ld(dt, a->b, gpuops__conv_wi(s, k, c, r, q));
                }
              }
            gpuops__cpu_st(dt, a->y, gpuops__conv_yi(s, pq, n, k, oh, ow), gpuops__cpu_activate(v, (int)a->act));
          }
  } else if (a->op == GPUOPS__CONV_BWD_DATA) {
    for (n = 0; n < s->n; ++n)
      for (c = 0; c < s->c; ++c)
        for (h = 0; h < s->h; ++h)
          for (w = 0; w < s->w; ++w) {
            double v = 0.0;
            for (k = 0; k < s->k; ++k)
              for (r = 0; r < s->r; ++r) {
                const int64_t th = h + s->pad_h - r * s->dil_h;
                if (th < 0 || th % s->stride_h || th / s->stride_h >= pq[0]) continue;
                for (q = 0; q < s->s; ++q) {
                  const int64_t tw = w + s->pad_w - q * s->dil_w;
                  if (tw < 0 || tw % s->stride_w || tw / s->stride_w >= pq[1]) continue;
                  v += gpuops__cpu_ld(dt, a->a, gpuops__conv_yi(s, pq, n, k, th / s->stride_h, tw / s->stride_w)) *
                       gpuops__cpu_ld(dt, a->b, gpuops__conv_wi(s, k, c, r, q));
                }
              }
            gpuops__cpu_st(dt, a->y, gpuops__conv_xi(s, n, c, h, w), v);
          }
  } else {
    for (k = 0; k < s->k; ++k)
      for (c = 0; c < s->c; ++c)
        for (r = 0; r < s->r; ++r)
          for (q = 0; q < s->s; ++q) {
            double v = 0.0;
            for (n = 0; n < s->n; ++n)
              for (oh = 0; oh < pq[0]; ++oh) {
                h = oh * s->stride_h - s->pad_h + r * s->dil_h;
                if (h < 0 || h >= s->h) continue;
                for (ow = 0; ow < pq[1]; ++ow) {
                  w = ow * s->stride_w - s->pad_w + q * s->dil_w;
                  if (w < 0 || w >= s->w) continue;
                  v += gpuops__cpu_ld(dt, a->a, gpuops__conv_yi(s, pq, n, k, oh, ow)) * gpuops__cpu_ld(dt, a->b, gpuops__conv_xi(s, n, c, h, w));
                }
              }
            gpuops__cpu_st(dt, a->y, gpuops__conv_wi(s, k, c, r, q), v);
          }
  }
  return GPUOPS_OK;
}

GPUOPS__FAMILY_GPU(conv, gpuops__conv_args, gpuops__conv_empty(p))

gpuops_status gpuops_conv2d_out_size(const gpuops_conv2d_shape *shape, int64_t *p, int64_t *q) {
  int64_t pq[2];
  gpuops_status st;
  if (!shape) return GPUOPS_ERR_INVALID_ARGUMENT;
  st = gpuops__conv_shape_check(shape, pq);
  if (st != GPUOPS_OK) return st;
  if (p) *p = pq[0];
  if (q) *q = pq[1];
  return GPUOPS_OK;
}

size_t gpuops_conv2d_workspace_size(const gpuops_conv2d_shape *shape, gpuops_algo algo) {
  int64_t pq[2];
  if (!shape || algo != GPUOPS_ALGO_UNFUSED || gpuops__conv_shape_check(shape, pq) != GPUOPS_OK) return 0;
  return gpuops__conv_unfused_ws(shape, pq);
}
size_t gpuops_conv2d_bwd_filter_workspace_size(const gpuops_conv2d_shape *shape, gpuops_algo algo) {
  int64_t pq[2], cnt[3];
  if (!shape || (algo != GPUOPS_ALGO_AUTO && algo != GPUOPS_ALGO_IMPLICIT_GEMM) || gpuops__conv_shape_check(shape, pq) != GPUOPS_OK) return 0;
  gpuops__conv_counts(shape, pq, cnt);
  return cnt[1] < 0 ? 0 : gpuops__conv_wgrad_ws(shape, pq, cnt[1]);
}

gpuops_status gpuops_conv1d_f32(float *y, const float *x, const float *f, int64_t n, int64_t fw, gpuops_algo algo, gpuops_stream stream) {
  gpuops__conv_args p = gpuops__conv_make_plane(GPUOPS__CONV_1D, y, x, f, 1, n, 1, fw);
  p.algo = algo; p.stream = stream; return gpuops__conv_gpu(&p);
}
gpuops_status gpuops_cpu_conv1d_f32(float *y, const float *x, const float *f, int64_t n, int64_t fw) {
  gpuops__conv_args p = gpuops__conv_make_plane(GPUOPS__CONV_1D, y, x, f, 1, n, 1, fw);
  return gpuops__conv_cpu(&p);
}
gpuops_status gpuops_conv2d_plane_f32(float *y, const float *x, const float *f, int64_t h, int64_t w, int64_t fh, int64_t fw, gpuops_algo algo, gpuops_stream stream) {
  gpuops__conv_args p = gpuops__conv_make_plane(GPUOPS__CONV_PLANE, y, x, f, h, w, fh, fw);
  p.algo = algo; p.stream = stream; return gpuops__conv_gpu(&p);
}
gpuops_status gpuops_cpu_conv2d_plane_f32(float *y, const float *x, const float *f, int64_t h, int64_t w, int64_t fh, int64_t fw) {
  gpuops__conv_args p = gpuops__conv_make_plane(GPUOPS__CONV_PLANE, y, x, f, h, w, fh, fw);
  return gpuops__conv_cpu(&p);
}

/* The forward's entry points, GPU and CPU, for every floating-point storage type. */
#define GPUOPS__CONV_DEF(SUF, CT, DT, C)                                                                                              \
  gpuops_status gpuops_conv2d_##SUF(CT *y, const CT *x, const CT *w, const CT *bias, const gpuops_conv2d_shape *shape,             \
                                    gpuops_activation act, void *workspace, size_t workspace_bytes, gpuops_algo algo,              \
                                    gpuops_stream stream) {                                                                        \
    gpuops__conv_args p = gpuops__conv_make(GPUOPS__CONV_FWD, DT, y, x, w, shape);                                                 \
    p.bias = bias; p.act = act; p.ws = workspace; p.ws_bytes = workspace_bytes; p.algo = algo; p.stream = stream;                  \
    return gpuops__conv_gpu(&p);                                                                                                   \
  }                                                                                                                                \
  gpuops_status gpuops_cpu_conv2d_##SUF(CT *y, const CT *x, const CT *w, const CT *bias, const gpuops_conv2d_shape *shape,         \
                                        gpuops_activation act) {                                                                   \
    gpuops__conv_args p = gpuops__conv_make(GPUOPS__CONV_FWD, DT, y, x, w, shape);                                                 \
    p.bias = bias; p.act = act;                                                                                                    \
    return gpuops__conv_cpu(&p);                                                                                                   \
  }
GPUOPS__FLOAT_TYPES(GPUOPS__CONV_DEF, ~)
#undef GPUOPS__CONV_DEF

gpuops_status gpuops_conv2d_bwd_data_f32(float *dx, const float *dy, const float *w, const gpuops_conv2d_shape *shape, gpuops_algo algo, gpuops_stream stream) {
  gpuops__conv_args p = gpuops__conv_make(GPUOPS__CONV_BWD_DATA, GPUOPS__F32, dx, dy, w, shape);
  p.algo = algo; p.stream = stream; return gpuops__conv_gpu(&p);
}
gpuops_status gpuops_cpu_conv2d_bwd_data_f32(float *dx, const float *dy, const float *w, const gpuops_conv2d_shape *shape) {
  gpuops__conv_args p = gpuops__conv_make(GPUOPS__CONV_BWD_DATA, GPUOPS__F32, dx, dy, w, shape);
  return gpuops__conv_cpu(&p);
}
gpuops_status gpuops_conv2d_bwd_filter_f32(float *dw, const float *dy, const float *x, const gpuops_conv2d_shape *shape, void *workspace, size_t workspace_bytes, gpuops_algo algo, gpuops_stream stream) {
  gpuops__conv_args p = gpuops__conv_make(GPUOPS__CONV_BWD_FILTER, GPUOPS__F32, dw, dy, x, shape);
  p.ws = workspace; p.ws_bytes = workspace_bytes; p.algo = algo; p.stream = stream; return gpuops__conv_gpu(&p);
}
gpuops_status gpuops_cpu_conv2d_bwd_filter_f32(float *dw, const float *dy, const float *x, const gpuops_conv2d_shape *shape) {
  gpuops__conv_args p = gpuops__conv_make(GPUOPS__CONV_BWD_FILTER, GPUOPS__F32, dw, dy, x, shape);
  p.cpu = 1;
  return gpuops__conv_cpu(&p);
}

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* GPUOPS_NO_CONV */


/* ---- I.12 The GPU side: gpuops_cuda.cuh defines every launcher ------------------------------- */
#if defined(__CUDACC__)
#include "gpuops_cuda.cuh"
#endif

#endif /* GPUOPS_IMPLEMENTATION */
