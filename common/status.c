/* Status strings and the first-writer-wins error record. */
#include "tpu/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *tpu_status_str(tpu_status_t status)
{
    switch (status) {
#define X(name, value, msg) \
    case TPU_##name:        \
        return msg;
        TPU_STATUS_MAP(X)
#undef X
    }
    return "unknown status";
}

tpu_status_t tpu_err_set(tpu_err_t *err, tpu_status_t status, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || err->status != TPU_OK || status == TPU_OK) {
        return status;
    }
    err->status = status;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return status;
}

void tpu_err_clear(tpu_err_t *err)
{
    if (err != NULL) {
        err->status = TPU_OK;
        err->msg[0] = '\0';
    }
}
