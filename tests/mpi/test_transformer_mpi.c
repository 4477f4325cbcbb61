/*
 * The transformer's collectives (emulator/workloads/transformer_comm.c) under
 * mpirun: one chip per rank, its shard view trained three SGD steps with the
 * MPI transport.  Every rank checks its losses and its pieces of the final
 * weights against the same run on one chip (within 1e-5 relative, weights
 * relative to each parameter's largest entry); data-parallel replicas hold
 * bit-identical weights (hashes compared over the job); and rank 0 runs the
 * same layout over the loopback transport (every chip in its process) and
 * checks that the two logs list the same collectives with the same modeled
 * times, bit for bit.  The outcomes are OR-reduced; every rank exits non-zero
 * on failure.
 *
 * usage: mpirun -n N test_transformer_mpi SHAPE MESH
 */
#include "tpu/chip.h"
#include "tpu/mpi.h"
#include "tpu/topo.h"
#include "tpu/transformer.h"

#include "test_xfmr.h"
#include "transformer_comm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 3
#define ROWS  TPU_TEST_XFMR_ROWS
#define BATCH TPU_TEST_XFMR_BATCH
#define SEQ   TPU_TEST_XFMR_SEQ
#define VOCAB TPU_TEST_XFMR_VOCAB
#define LR    0.2
#define MAXC  64

typedef struct run {
    double loss[STEPS];
    tpu_xport_t *x;
    xfmr_comm_t c;
    tpu_xfmr_t *xf[MAXC];
    int n;
    xfmr_comm_entry_t *log; /* every step's log, one after the other */
    int64_t nlog;
} run_t;

static int32_t toks_x[ROWS * SEQ], toks_y[ROWS * SEQ];

static void run_free(run_t *r)
{
    int i;

    for (i = 0; i < r->n; i++) {
        tpu_xfmr_destroy(r->xf[i]);
    }
    tpu__xfmr_comm_fini(&r->c);
    tpu_xport_destroy(r->x);
    free(r->log);
}

/* STEPS steps of 'mesh' over r->x (set); the log kept.  0 or 1 (failed, printed). */
static int run_mesh(run_t *r, const tpu_topo_t *topo, const tpu_chip_spec_t *chip,
                    const tpu_link_model_t *link, const char *mesh, const char *what)
{
    tpu_xfmr_report_t reps[MAXC];
    tpu_xfmr_config_t cfg;
    tpu_err_t err = {0};
    int i, t;

    tpu_test_xfmr_config(&cfg);
    if (tpu__xfmr_comm_init(&r->c, topo, link, chip, r->x, mesh, &cfg, NULL, &err) != TPU_OK) {
        fprintf(stderr, "%s: %s\n", what, err.msg);
        return 1;
    }
    for (i = 0; i < r->c.nlocal && i < MAXC; i++) {
        if (tpu_xfmr_create(tpu__xfmr_comm_config(&r->c, i), chip, &r->xf[i], &err) != TPU_OK) {
            fprintf(stderr, "%s: %s\n", what, err.msg);
            return 1;
        }
        r->n++;
        tpu_test_xfmr_init(r->xf[i], 3);
    }
    for (t = 0; t < STEPS; t++) {
        int64_t row = tpu_xfmr_batch_row(ROWS, BATCH, t), k, n;
        xfmr_comm_entry_t *log;

        tpu__xfmr_comm_log_clear(&r->c);
        if (tpu__xfmr_comm_step(&r->c, r->xf, toks_x + row * SEQ, toks_y + row * SEQ, LR, reps,
                                &err) != TPU_OK) {
            fprintf(stderr, "%s: step %d: %s\n", what, t, err.msg);
            return 1;
        }
        r->loss[t] = reps[0].loss;
        n = tpu__xfmr_comm_log_count(&r->c);
        log = realloc(r->log, (size_t)(r->nlog + n) * sizeof(*log));
        if (log == NULL) {
            return 1;
        }
        r->log = log;
        for (k = 0; k < n; k++) {
            r->log[r->nlog++] = *tpu__xfmr_comm_log_at(&r->c, k);
        }
    }
    return 0;
}

/* FNV-1a of every parameter piece of 'xf'. */
static uint64_t param_hash(tpu_xfmr_t *xf)
{
    uint64_t h = 1469598103934665603ull;
    int p, np = tpu_xfmr_param_count(tpu_xfmr_config(xf));

    for (p = 0; p < np; p++) {
        int64_t shape[2];
        const unsigned char *b = (const unsigned char *)tpu_xfmr_param(xf, p, shape);
        size_t k, len = (size_t)(shape[0] * shape[1]) * sizeof(float);

        for (k = 0; k < len; k++) {
            h = (h ^ b[k]) * 1099511628211ull;
        }
    }
    return h;
}

/* The largest difference of 'xf''s pieces from one chip's 'ref' (relative to each
 * parameter's largest entry). */
static double weights_diff(tpu_xfmr_t *xf, tpu_xfmr_t *ref)
{
    int p, np = tpu_xfmr_param_count(tpu_xfmr_config(ref));
    double worst = 0;

    for (p = 0; p < np; p++) {
        int64_t rs[2], s[2], org[2], k, c;
        const float *w0 = tpu_xfmr_param(ref, p, rs), *w = tpu_xfmr_param(xf, p, s);
        double den = 0;

        tpu_xfmr_param_origin(xf, p, org);
        for (k = 0; k < rs[0] * rs[1]; k++) {
            den = fabs(w0[k]) > den ? fabs(w0[k]) : den;
        }
        for (k = 0; k < s[0]; k++) {
            for (c = 0; c < s[1]; c++) {
                double d =
                    fabs((double)w[k * s[1] + c] - w0[(org[0] + k) * rs[1] + org[1] + c]) / den;

                worst = d > worst ? d : worst;
            }
        }
    }
    return worst;
}

/* One chip, no comm layer: the reference. */
static int run_one_chip(const tpu_chip_spec_t *chip, tpu_xfmr_t **xf_p, double *loss)
{
    tpu_xfmr_config_t cfg;
    tpu_err_t err = {0};
    int t;

    tpu_test_xfmr_config(&cfg);
    if (tpu_xfmr_create(&cfg, chip, xf_p, &err) != TPU_OK) {
        fprintf(stderr, "one chip: %s\n", err.msg);
        return 1;
    }
    tpu_test_xfmr_init(*xf_p, 3);
    for (t = 0; t < STEPS; t++) {
        int64_t row = tpu_xfmr_batch_row(ROWS, BATCH, t);
        tpu_xfmr_report_t rep;

        if (tpu_xfmr_step(*xf_p, toks_x + row * SEQ, toks_y + row * SEQ, LR, &rep, &err) !=
            TPU_OK) {
            fprintf(stderr, "one chip: %s\n", err.msg);
            return 1;
        }
        loss[t] = rep.loss;
    }
    return 0;
}

/* Rank 0: the MPI run's log equals the loopback run's, collective by collective. */
static int same_logs(const run_t *m, const run_t *l)
{
    int64_t k;

    if (m->nlog != l->nlog) {
        fprintf(stderr, "%lld collectives over mpi, %lld over loopback\n", (long long)m->nlog,
                (long long)l->nlog);
        return 1;
    }
    for (k = 0; k < m->nlog; k++) {
        const xfmr_comm_entry_t *a = &m->log[k], *b = &l->log[k];

        if (a->hook != b->hook || a->axes != b->axes || a->bytes != b->bytes ||
            a->modeled_us != b->modeled_us || strcmp(a->algorithm, b->algorithm) != 0 ||
            !(a->modeled_us > 0)) {
            fprintf(stderr,
                    "collective %lld: %s over %s, %llu B, %.17g us (%s) over mpi; %s over %s, "
                    "%llu B, %.17g us (%s) over loopback\n",
                    (long long)k, tpu_xfmr_hook_name(a->hook), a->axes_name,
                    (unsigned long long)a->bytes, a->modeled_us, a->algorithm,
                    tpu_xfmr_hook_name(b->hook), b->axes_name, (unsigned long long)b->bytes,
                    b->modeled_us, b->algorithm);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    tpu_err_t err = {0};
    tpu_topo_t topo;
    tpu_chip_spec_t chip;
    tpu_link_model_t link;
    tpu_xfmr_t *one = NULL;
    double one_loss[STEPS], worst = 0, all_worst = 0;
    int dims[TPU_MAX_AXES], wrap[TPU_MAX_AXES] = {1, 1, 1}, naxes, rank, size, bad = 0, any = 0;
    int i, t;
    run_t m, l;
    uint64_t mine[3], *all = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || tpu_topo_parse_shape(argv[1], dims, &naxes, &err) != TPU_OK ||
        tpu_topo_init(&topo, naxes, dims, wrap, 1, &err) != TPU_OK ||
        tpu_chip_preset("v5e", &chip, &err) != TPU_OK) {
        fprintf(stderr, "usage: test_transformer_mpi SHAPE MESH: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    tpu_chip_link_model(&chip, &link);
    tpu_test_xfmr_tokens(toks_x, toks_y);
    memset(&m, 0, sizeof(m));
    memset(&l, 0, sizeof(l));
    bad = run_one_chip(&chip, &one, one_loss);
    if (!bad && tpu_xport_mpi_create(MPI_COMM_WORLD, &m.x, &err) != TPU_OK) {
        fprintf(stderr, "rank %d: transport: %s\n", rank, err.msg);
        bad = 1;
    }
    bad = bad ? bad : run_mesh(&m, &topo, &chip, &link, argv[2], "mpi");
    if (!bad) {
        for (t = 0; t < STEPS; t++) {
            double e = fabs(m.loss[t] - one_loss[t]) / one_loss[t];

            worst = e > worst ? e : worst;
        }
        worst = fmax(worst, weights_diff(m.xf[0], one));
        if (!(worst <= 1e-5)) {
            fprintf(stderr, "rank %d: %s: %.3g from one chip (tolerance 1e-5)\n", rank, argv[2],
                    worst);
            bad = 1;
        }
    }
    /* Data replicas: equal (fsdp, sequence, tensor) coordinates, equal hashes. */
    all = calloc((size_t)size * 3, sizeof(*all));
    mine[0] = bad ? 0 : (uint64_t)m.c.chips[0].coord[XFMR_AXIS_SEQUENCE];
    mine[1] =
        bad ? 0
            : (uint64_t)m.c.chips[0].coord[XFMR_AXIS_FSDP] * (uint64_t)m.c.size[XFMR_AXIS_TENSOR] +
                  (uint64_t)m.c.chips[0].coord[XFMR_AXIS_TENSOR];
    mine[2] = bad ? 0 : param_hash(m.xf[0]);
    MPI_Allgather(mine, 3, MPI_UINT64_T, all, 3, MPI_UINT64_T, MPI_COMM_WORLD);
    for (i = 0; i < size && !bad; i++) {
        if (all[3 * i] == mine[0] && all[3 * i + 1] == mine[1] && all[3 * i + 2] != mine[2]) {
            fprintf(stderr, "rank %d: weights differ from data replica rank %d\n", rank, i);
            bad = 1;
        }
    }
    if (rank == 0 && !bad) {
        if (tpu_xport_loopback_create(topo.nchips, &l.x, &err) != TPU_OK) {
            fprintf(stderr, "loopback: %s\n", err.msg);
            bad = 1;
        }
        bad = bad ? bad : run_mesh(&l, &topo, &chip, &link, argv[2], "loopback");
        bad = bad ? bad : same_logs(&m, &l);
    }
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Reduce(&worst, &all_worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s on %s, %d ranks: losses %.6f %.6f %.6f, largest relative difference from "
               "one chip %.3g, %lld collectives a step\n",
               argv[2], argv[1], size, m.loss[0], m.loss[1], m.loss[2], all_worst,
               (long long)(m.nlog / STEPS));
        printf("%s\n", any ? "FAILED" : "all transformer checks passed");
    }
    free(all);
    run_free(&m);
    run_free(&l);
    tpu_xfmr_destroy(one);
    MPI_Finalize();
    return any ? 1 : 0;
}
