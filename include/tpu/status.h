/*
 * Status codes and error messages of libtpuemu.
 *
 * Every fallible function returns a tpu_status_t: 0 is success, a negative value
 * an error.  Functions that fail for a reason the user must act on also take a
 * caller-owned tpu_err_t as their last parameter; the function that detects the
 * error writes one message into it, and callers that only propagate leave it alone.
 * The library never prints and never exits.
 */
#ifndef TPU_STATUS_H
#define TPU_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TPU_API            __attribute__((visibility("default")))
#define TPU_PRINTF(_f, _a) __attribute__((format(printf, _f, _a)))
#else
#define TPU_API
#define TPU_PRINTF(_f, _a)
#endif

/* One table for every status code: name, value, text. */
#define TPU_STATUS_MAP(X)                                    \
    X(OK, 0, "success")                                      \
    X(ERR_INVALID, -1, "invalid argument")                   \
    X(ERR_NO_MEMORY, -2, "out of memory")                    \
    X(ERR_CONFIG, -3, "invalid configuration")               \
    X(ERR_UNREACHABLE, -4, "no route between chips")         \
    X(ERR_TRANSPORT, -5, "transport failure")                \
    X(ERR_UNSUPPORTED, -6, "operation not supported")        \
    X(ERR_RESOURCE_EXHAUSTED, -7, "resource exhausted")      \
    X(ERR_MISMATCH, -8, "collective mismatch between chips") \
    X(ERR_TIMEOUT, -9, "timed out")                          \
    X(ERR_INTERNAL, -10, "internal error")                   \
    X(ERR_IO, -11, "input/output error")

typedef enum {
#define X(name, value, msg) TPU_##name = value,
    TPU_STATUS_MAP(X)
#undef X
} tpu_status_t;

#define TPU_ERR_MSG_LEN 512

/*
 * The message first: 'tpu_err_t err = {0};' then compiles as C and as C++ (where 0 would
 * not convert to the enum of a first member 'status').
 */
typedef struct tpu_err {
    char msg[TPU_ERR_MSG_LEN]; /* "pod.yaml:12:7: unknown key 'topolgy'" */
    tpu_status_t status;       /* TPU_OK until the first error is recorded */
} tpu_err_t;

/* The text of 'status' ("invalid argument"); never NULL. */
TPU_API const char *tpu_status_str(tpu_status_t status);

/*
 * Record the first error into 'err' (which may be NULL) and return 'status'.
 * A later call on an 'err' that already holds an error changes nothing, so the
 * message stays the one written where the problem was found.
 */
TPU_API tpu_status_t tpu_err_set(tpu_err_t *err, tpu_status_t status, const char *fmt, ...)
    TPU_PRINTF(3, 4);

/* Clear 'err' so that it can record a new error. */
TPU_API void tpu_err_clear(tpu_err_t *err);

#ifdef __cplusplus
}
#endif

#endif /* TPU_STATUS_H */
