/// \file core/math/hd.h
/// The host/device qualifier shared by every per-element math header in core/math/.
///
/// Under nvcc (`__CUDACC__`) `HETSGD_HD` expands to `__host__ __device__`, elsewhere to nothing,
/// so one definition of each formula serves the CPU backend, the CUDA kernels and the host
/// tests that cover both (core/random.h uses it too).
#pragma once

#if defined(__CUDACC__)
#define HETSGD_HD __host__ __device__
#else
#define HETSGD_HD
#endif
