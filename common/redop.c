/* Reductions: names and parsing. */
#include "tpu/redop.h"

#include <string.h>

static const char *const redop_names[] = {
    [TPU_REDOP_SUM] = "sum",
    [TPU_REDOP_MAX] = "max",
    [TPU_REDOP_MIN] = "min",
};
_Static_assert(sizeof(redop_names) / sizeof(redop_names[0]) == TPU_REDOP_COUNT,
               "redop_names lists every tpu_redop_t");

const char *tpu_redop_name(tpu_redop_t op)
{
    return (unsigned)op < TPU_REDOP_COUNT ? redop_names[op] : "?";
}

tpu_status_t tpu_redop_parse(const char *text, tpu_redop_t *op_p, tpu_err_t *err)
{
    int i;

    for (i = 0; i < TPU_REDOP_COUNT; i++) {
        if (strcmp(text, redop_names[i]) == 0) {
            *op_p = (tpu_redop_t)i;
            return TPU_OK;
        }
    }
    return tpu_err_set(err, TPU_ERR_INVALID, "unknown reduction '%s' (known: sum, max, min)", text);
}
