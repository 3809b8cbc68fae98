#pragma once
// Eigen's core, included once for every symflow header that uses it, with two warnings of GCC 12
// silenced inside Eigen and the compiler's intrinsics headers: `__Y` "is used uninitialized" /
// "may be used uninitialized" in avx512fintrin.h and avxintrin.h, where an intrinsic makes an
// undefined vector with `__m512 __Y = __Y;` on purpose. GCC reports them at the intrinsic's line
// wherever Eigen's packet code is inlined (dozens per program that multiplies matrices under
// -march with AVX-512). The state that counts is the one in effect where those headers' text is
// read, so the pragmas surround the include; symflow's own code keeps every warning.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Core>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
