/*
 * The version of libtpuemu: the numbers this header was installed with, and the
 * version of the library a program runs against (tpu_version()), so that a program
 * can check the two agree.  CMake refuses to configure when these numbers differ
 * from project(VERSION).
 */
#ifndef TPU_VERSION_H
#define TPU_VERSION_H

#include "tpu/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_VERSION_MAJOR 0
#define TPU_VERSION_MINOR 1
#define TPU_VERSION_PATCH 0
/* One number that grows with the version: 10000 * major + 100 * minor + patch. */
#define TPU_VERSION_NUMBER (10000 * TPU_VERSION_MAJOR + 100 * TPU_VERSION_MINOR + TPU_VERSION_PATCH)

/* "MAJOR.MINOR.PATCH" of the library linked in; never NULL. */
TPU_API const char *tpu_version(void);

#ifdef __cplusplus
}
#endif

#endif /* TPU_VERSION_H */
