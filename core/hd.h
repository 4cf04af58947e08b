/// \file core/hd.h
/// The host/device qualifier of the code compiled for host and device: the per-element math
/// headers in core/math/ and the counter-based random numbers of core/random.h.
///
/// Under nvcc (`__CUDACC__`) `HETSGD_HD` expands to `__host__ __device__`, elsewhere to nothing,
/// so one definition of each formula serves the CPU backend, the CUDA kernels and the host
/// tests that cover both.
#pragma once

#if defined(__CUDACC__)
#define HETSGD_HD __host__ __device__
#else
#define HETSGD_HD
#endif
