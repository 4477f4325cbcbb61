/*
 * NumPy .npy files: read and write the arrays a user exchanges with tpuemu
 * (training data, labels, initial and final weights).
 *
 * The format (numpy.lib.format, versions 1.0, 2.0 and 3.0): the magic
 * "\x93NUMPY", a major and a minor version byte, the header length (2 bytes
 * little-endian in version 1, 4 bytes in versions 2 and 3), then the header: a
 * Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 784), }
 * padded with spaces and ended by a newline, then the raw elements in C order.
 *
 * Supported element types: '<f4' (float32), '<i4' (int32), '<i8' (int64),
 * little-endian only.  Refused with a message that names the file: a bad magic
 * or version, a malformed header, big-endian or other types, Fortran order,
 * more than TPU_NPY_MAX_DIMS dimensions, data shorter or longer than the
 * shape says.  Files are written as version 1.0 with the header padded to a
 * multiple of 64 bytes, as numpy does.
 *
 * Ownership: tpu_npy_read() allocates 'data' (through the allocator hook, tpu/alloc.h) and
 * tpu_npy_map() maps the file; the caller frees either with tpu_npy_fini().  The writers borrow
 * their arguments for the call.
 */
#ifndef TPU_NPY_H
#define TPU_NPY_H

#include "tpu/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPU_NPY_MAX_DIMS 8

typedef enum {
    TPU_NPY_F32 = 0, /* '<f4' */
    TPU_NPY_I32 = 1, /* '<i4' */
    TPU_NPY_I64 = 2, /* '<i8' */
    TPU_NPY_TYPE_COUNT
} tpu_npy_type_t;

/* An array read from a file. */
typedef struct tpu_npy {
    tpu_npy_type_t type;
    int ndim; /* 0 (a scalar) to TPU_NPY_MAX_DIMS */
    int64_t shape[TPU_NPY_MAX_DIMS];
    int64_t count; /* elements: the product of the shape */
    void *data;    /* count elements, C order, host byte order */
    void *map;     /* tpu_npy_map(): the file's mapping (NULL: 'data' is allocated) */
    size_t map_len;
} tpu_npy_t;

/* "'<f4' (float32)" etc., for messages; "?" for anything else. */
TPU_API const char *tpu_npy_type_name(tpu_npy_type_t type);

/* Bytes per element: 4, 4, 8; 0 for anything else. */
TPU_API int tpu_npy_type_size(tpu_npy_type_t type);

/*
 * Read the .npy file 'path' into '*arr_p' (set only on success; free it with
 * tpu_npy_fini()).
 * @return TPU_OK, TPU_ERR_INVALID (cannot open, malformed, unsupported; the
 *         message starts with the path), TPU_ERR_NO_MEMORY.
 */
TPU_API tpu_status_t tpu_npy_read(const char *path, tpu_npy_t *arr_p, tpu_err_t *err);

/*
 * As tpu_npy_read(), but the data is the file mapped read-only (shared with every
 * process that maps it, and only the pages touched are read): a rank that trains
 * on its shard of a large dataset holds that shard, not the file.  Where mapping
 * does not fit (a big-endian host, data not aligned to its element size, mmap
 * refused) the file is read as tpu_npy_read() does.  The data must not be written.
 * Free with tpu_npy_fini().
 */
TPU_API tpu_status_t tpu_npy_map(const char *path, tpu_npy_t *arr_p, tpu_err_t *err);

/*
 * Check that 'arr' (read from 'path') is f32 with 'ndim' dimensions matching
 * 'shape' (-1 matches any size; the actual shape is written back).  Otherwise
 * TPU_ERR_INVALID naming the file, what was found and what was expected ('what'
 * names the array in the message).
 */
TPU_API tpu_status_t tpu_npy_check_f32(const tpu_npy_t *arr, const char *path, const char *what,
                                       int ndim, int64_t *shape, tpu_err_t *err);

/* Free the data of 'arr' (or unmap it) and zero it.  A zeroed 'arr' is a no-op. */
TPU_API void tpu_npy_fini(tpu_npy_t *arr);

/*
 * Read an f32 array of 'ndim' dimensions whose shape matches 'shape' (an entry
 * of -1 matches any size; the actual shape is written back into 'shape').
 * Any other type or shape is TPU_ERR_INVALID naming the file, what was found
 * and what was expected ('what' names the array in the message, e.g. "w1").
 * The caller frees '*data_p' with tpu_free() (tpu/alloc.h).
 */
TPU_API tpu_status_t tpu_npy_read_f32(const char *path, const char *what, int ndim, int64_t *shape,
                                      float **data_p, tpu_err_t *err);

/*
 * Write 'data' (the product of 'shape' elements of 'type', C order) to 'path'
 * as a version 1.0 .npy file, replacing it.
 * @return TPU_OK, TPU_ERR_INVALID (bad arguments, cannot write: the message
 *         names the path and the reason).
 */
TPU_API tpu_status_t tpu_npy_write(const char *path, tpu_npy_type_t type, int ndim,
                                   const int64_t *shape, const void *data, tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_NPY_H */
