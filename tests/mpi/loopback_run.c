/* The MPI tests' reference run: a plan on the loopback transport, every chip here. */
#include "loopback_run.h"

#include <stdio.h>
#include <stdlib.h>

int tpu_test_loopback_run(const tpu_topo_t *topo, const tpu_coll_plan_t *plan,
                          tpu_coll_fill_fn_t fill, void *arg, void ***out_p, double *us_p)
{
    tpu_err_t err = {0};
    tpu_xport_t *x = NULL;
    tpu_coll_exec_t *exec = NULL;
    uint64_t inb, outb;
    void **in = calloc((size_t)topo->nchips, sizeof(void *));
    void **out = calloc((size_t)topo->nchips, sizeof(void *));
    int c, bad = 0;

    tpu_coll_plan_sizes(plan, &inb, &outb);
    for (c = 0; c < topo->nchips; c++) {
        in[c] = malloc(inb);
        out[c] = calloc(1, outb);
        fill(c, in[c], inb, arg);
    }
    if (tpu_xport_loopback_create(topo->nchips, &x, &err) != TPU_OK ||
        tpu_coll_exec_create(plan, x, &exec, &err) != TPU_OK ||
        tpu_coll_exec_run(exec, NULL, in, out, us_p, &err) != TPU_OK) {
        fprintf(stderr, "loopback: %s\n", err.msg);
        bad = 1;
    }
    tpu_test_loopback_free(in, topo->nchips);
    tpu_coll_exec_destroy(exec);
    tpu_xport_destroy(x);
    if (bad) {
        tpu_test_loopback_free(out, topo->nchips);
        out = NULL;
    }
    *out_p = out;
    return bad;
}

void tpu_test_loopback_free(void **out, int nchips)
{
    int c;

    for (c = 0; out != NULL && c < nchips; c++) {
        free(out[c]);
    }
    free(out);
}
