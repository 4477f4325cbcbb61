/*
 * tpuemu bench: sweep sizes with real data; nccl-tests style rows with the
 * modeled and the measured time side by side, and optionally the host MPI
 * library's own collective on the same bytes, measured in the same run.  The
 * row reads as nccl-tests' out-of-place columns (size, count and type as
 * nccl-tests defines them: the count per rank for all-gather, reduce-scatter and
 * all-to-all; float, bfloat16, int32), then the modeled ones; the sweep ends
 * with nccl-tests' "# Out of bounds values" and "# Avg bus bandwidth" lines.
 */
#include "bench.h"

#include "tpu/dtype.h"

#include "alloc.h"
#include "bench_mpi.h"
#include "clock.h"
#include "csv.h"
#include "desc.h"
#include "faults.h"
#include "job.h"
#include "jobenv.h"
#include "json.h"
#include "progress.h"
#include "report.h"
#include "table.h"
#include "units.h"
#include "watch.h"
#include "watch_guard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_row {
    uint64_t bytes, count;
    double modeled_us, ideal_us;
    double avg_us, min_us, max_us;
    double ip_us; /* the in-place calls' mean time (the ranks' mean) */
    double mpi_us;
    long wrong, ip_wrong;
    char algo[64];
    const char *host; /* the host path: "shm", "messages" or "mixed" (ranks differ) */
} bench_row_t;

/* nccl-tests' bus bandwidth factor. */
static double bus_factor(tpu_coll_kind_t kind, int n)
{
    switch (kind) {
    case TPU_COLL_PSUM:
        return 2.0 * (n - 1) / n;
    case TPU_COLL_ALL_GATHER:
    case TPU_COLL_REDUCE_SCATTER:
    case TPU_COLL_ALL_TO_ALL:
        return (double)(n - 1) / n;
    default:
        return 1;
    }
}

/* Bytes at or above 'want' that the collective accepts (whole blocks of elements). */
static uint64_t valid_bytes(const tpu_pod_t *pod, const tpu_coll_desc_t *d, uint64_t want)
{
    uint64_t unit = (uint64_t)tpu_dtype_size(d->dtype);

    if (d->kind == TPU_COLL_ALL_GATHER || d->kind == TPU_COLL_REDUCE_SCATTER ||
        d->kind == TPU_COLL_ALL_TO_ALL) {
        unit *= (uint64_t)tpu_topo_group_size(tpu_pod_topo(pod), d->axes);
    }
    return (want + unit - 1) / unit * unit;
}

/*
 * The nccl-tests style table: nccl-tests' columns, in nccl-tests' widths, up to
 * the in-place #wrong (measured on this host), then the modeled time, its bus
 * bandwidth and the algorithm: 156 characters at most.  --wide adds the modeled
 * algbw, the formula's share, the host path and the fastest and slowest rank's
 * time; --compare-mpi adds those and the host MPI's time and the ratio.
 */
enum {
    BENCH_COLS = 16,
    BENCH_WIDE = 21,
    BENCH_ALL = 23
};
static const app_col_t bench_cols[] = {
    {"size", "(B)", 10, 0, 0},    {"count", "(elements)", 12, 0, 2},
    {"type", "", 8, 0, 2},        {"redop", "", 6, 0, 2},
    {"root", "", 6, 0, 2},        {"time", "(us)", 7, 0, 2},
    {"algbw", "(GB/s)", 6, 0, 2}, {"busbw", "(GB/s)", 6, 0, 2},
    {"#wrong", "", 6, 0, 1},      {"time", "(us)", 7, 0, 2},
    {"algbw", "(GB/s)", 6, 0, 2}, {"busbw", "(GB/s)", 6, 0, 2},
    {"#wrong", "", 6, 0, 1},      {"model", "(us)", 9, 0, 3},
    {"busbw", "(GB/s)", 6, 0, 2}, {"algorithm", "", 18, 1, 2},
    {"algbw", "(GB/s)", 7, 0, 2}, {"formula", "(%)", 7, 0, 2},
    {"host", "(path)", 8, 0, 2},  {"min", "(us)", 9, 0, 2},
    {"max", "(us)", 9, 0, 2},     {"mpi", "(us)", 9, 0, 2},
    {"ratio", "(x)", 6, 0, 2}};

static const char *const csv_cols[] = {"collective",
                                       "axes",
                                       "bytes",
                                       "count",
                                       "dtype",
                                       "redop",
                                       "algorithm",
                                       "modeled_us",
                                       "formula_us",
                                       "measured_us",
                                       "measured_min_us",
                                       "measured_max_us",
                                       "algbw_GBps",
                                       "busbw_GBps",
                                       "modeled_algbw_GBps",
                                       "modeled_busbw_GBps",
                                       "wrong",
                                       "inplace_measured_us",
                                       "inplace_algbw_GBps",
                                       "inplace_busbw_GBps",
                                       "inplace_wrong",
                                       "mpi_us",
                                       "host_path"};

/* The columns a run prints ('*n_p' of them, into 'cols'): the algorithm, when it is the
 * last, without the padding after it. */
static void table_cols(const app_opts_t *o, app_col_t *cols, int *n_p)
{
    memcpy(cols, bench_cols, sizeof(bench_cols));
    *n_p = o->compare_mpi ? BENCH_ALL : o->wide ? BENCH_WIDE : BENCH_COLS;
    if (*n_p == BENCH_COLS) {
        cols[BENCH_COLS - 1].width = 0;
    }
}

/* nccl-tests' name of a type (float, bfloat16, int32, int8). */
static const char *nccl_type(tpu_dtype_t d)
{
    return d == TPU_DTYPE_F32    ? "float"
           : d == TPU_DTYPE_BF16 ? "bfloat16"
           : d == TPU_DTYPE_I32  ? "int32"
                                 : tpu_dtype_name(d);
}

/* A time as nccl-tests prints it: two decimals, one from 100 us, none from 10 ms. */
static void nccl_time(char *cell, double us)
{
    snprintf(cell, 64, us >= 1e4 ? "%.0f" : us >= 100 ? "%.1f" : "%.2f", us);
}

/* nccl-tests' count: elements per rank for all-gather (sent), reduce-scatter (received)
 * and all-to-all (per peer times... as nccl-tests: the buffer / ranks); else the buffer's. */
static uint64_t nccl_count(const tpu_coll_desc_t *d, uint64_t bytes, int group)
{
    uint64_t n = bytes / (uint64_t)tpu_dtype_size(d->dtype);

    if (d->kind == TPU_COLL_ALL_GATHER || d->kind == TPU_COLL_REDUCE_SCATTER ||
        d->kind == TPU_COLL_ALL_TO_ALL) {
        n /= (uint64_t)(group > 0 ? group : 1);
    }
    return n;
}

/* The next size of the sweep: -i SIZE more, or --factor times. */
static double next_size(double b, double factor, unsigned long long step)
{
    return step > 0 ? b + (double)step : b * factor;
}

/* The reduction of a row: only psum and reduce-scatter reduce. */
static const char *row_redop(const tpu_coll_desc_t *d)
{
    return d->kind == TPU_COLL_PSUM || d->kind == TPU_COLL_REDUCE_SCATTER ? tpu_redop_name(d->op)
                                                                          : "none";
}

/* One finished row, on rank 0: the table line, the JSON object, the CSV line. */
static void emit_row(const app_opts_t *o, FILE *txt, app_json_t *j, app_csv_t *csv,
                     const tpu_pod_t *job_pod, const tpu_coll_desc_t *desc, const char *axes,
                     const bench_row_t *row, int group)
{
    double bf = bus_factor(desc->kind, group);
    double malg = row->bytes / (row->modeled_us * 1e3), halg = row->bytes / (row->avg_us * 1e3);
    double ialg = row->bytes / (row->ip_us * 1e3);
    char cell[BENCH_ALL][64];
    const char *cells[BENCH_ALL];
    app_col_t cols[BENCH_ALL];
    int i, ncols;

    snprintf(cell[0], 64, "%llu", (unsigned long long)row->bytes);
    snprintf(cell[1], 64, "%llu", (unsigned long long)row->count);
    snprintf(cell[2], 64, "%s", nccl_type(desc->dtype));
    snprintf(cell[3], 64, "%s", row_redop(desc));
    snprintf(cell[4], 64, "%d", desc->kind == TPU_COLL_P2P ? desc->src : -1);
    nccl_time(cell[5], row->avg_us);
    snprintf(cell[6], 64, "%.2f", halg);
    snprintf(cell[7], 64, "%.2f", halg * bf);
    snprintf(cell[8], 64, row->wrong < 0 ? "N/A" : "%ld", row->wrong);
    nccl_time(cell[9], row->ip_us);
    snprintf(cell[10], 64, "%.2f", ialg);
    snprintf(cell[11], 64, "%.2f", ialg * bf);
    snprintf(cell[12], 64, row->ip_wrong < 0 ? "N/A" : "%ld", row->ip_wrong);
    snprintf(cell[13], 64, "%.3f", row->modeled_us);
    snprintf(cell[14], 64, "%.2f", malg * bf);
    snprintf(cell[15], 64, "%s", row->algo);
    snprintf(cell[16], 64, "%.2f", malg);
    snprintf(cell[17], 64, "%.1f", 100 * row->ideal_us / row->modeled_us);
    snprintf(cell[18], 64, "%s", row->host);
    snprintf(cell[19], 64, "%.2f", row->min_us);
    snprintf(cell[20], 64, "%.2f", row->max_us);
    snprintf(cell[21], 64, row->mpi_us > 0 ? "%.2f" : "-", row->mpi_us);
    snprintf(cell[22], 64, row->mpi_us > 0 ? "%.2f" : "-", row->avg_us / row->mpi_us);
    for (i = 0; i < BENCH_ALL; i++) {
        cells[i] = cell[i];
    }
    table_cols(o, cols, &ncols);
    app_table_row(txt, "  ", cols, ncols, cells);
    if (j != NULL) {
        app_json_object(j);
        app_json_kstr(j, "collective", tpu_coll_name(desc->kind));
        app_json_kstr(j, "axes", axes);
        app_json_kuint(j, "bytes", (unsigned long long)row->bytes);
        app_json_kuint(j, "count", (unsigned long long)row->count);
        app_json_kstr(j, "dtype", tpu_dtype_name(desc->dtype));
        app_json_kstr(j, "redop", row_redop(desc));
        app_json_kstr(j, "algorithm", row->algo);
        app_json_kfixed(j, "modeled_us", row->modeled_us, 6);
        app_json_kfixed(j, "formula_us", row->ideal_us, 6);
        app_json_kfixed(j, "measured_us", row->avg_us, 3);
        app_json_kfixed(j, "measured_min_us", row->min_us, 3);
        app_json_kfixed(j, "measured_max_us", row->max_us, 3);
        app_json_kfixed(j, "algbw_GBps", halg, 4);
        app_json_kfixed(j, "busbw_GBps", halg * bf, 4);
        app_json_kfixed(j, "modeled_algbw_GBps", malg, 4);
        app_json_kfixed(j, "modeled_busbw_GBps", malg * bf, 4);
        app_json_kint(j, "wrong", row->wrong); /* -1: not checked (-c 0) */
        app_json_kfixed(j, "inplace_measured_us", row->ip_us, 3);
        app_json_kfixed(j, "inplace_algbw_GBps", ialg, 4);
        app_json_kfixed(j, "inplace_busbw_GBps", ialg * bf, 4);
        app_json_kint(j, "inplace_wrong", row->ip_wrong);
        app_json_kstr(j, "host_path", row->host);
        if (o->compare_mpi && row->mpi_us > 0) {
            app_json_kfixed(j, "mpi_us", row->mpi_us, 3);
            app_json_kfixed(j, "mpi_ratio", row->avg_us / row->mpi_us, 4);
        }
        app_json_object_end(j);
    }
    if (csv != NULL) {
        app_csv_pod(csv, job_pod);
        app_csv_str(csv, tpu_coll_name(desc->kind));
        app_csv_str(csv, axes);
        app_csv_uint(csv, (unsigned long long)row->bytes);
        app_csv_uint(csv, (unsigned long long)row->count);
        app_csv_str(csv, tpu_dtype_name(desc->dtype));
        app_csv_str(csv, row_redop(desc));
        app_csv_str(csv, row->algo);
        app_csv_fixed(csv, row->modeled_us, 6);
        app_csv_fixed(csv, row->ideal_us, 6);
        app_csv_fixed(csv, row->avg_us, 3);
        app_csv_fixed(csv, row->min_us, 3);
        app_csv_fixed(csv, row->max_us, 3);
        app_csv_fixed(csv, halg, 4);
        app_csv_fixed(csv, halg * bf, 4);
        app_csv_fixed(csv, malg, 4);
        app_csv_fixed(csv, malg * bf, 4);
        app_csv_int(csv, row->wrong);
        app_csv_fixed(csv, row->ip_us, 3);
        app_csv_fixed(csv, ialg, 4);
        app_csv_fixed(csv, ialg * bf, 4);
        app_csv_int(csv, row->ip_wrong);
        if (row->mpi_us > 0) {
            app_csv_fixed(csv, row->mpi_us, 3);
        } else {
            app_csv_empty(csv);
        }
        app_csv_str(csv, row->host);
        app_csv_end_row(csv);
    }
}

/*
 * The in-place calls of a row, after the out-of-place ones, as nccl-tests makes
 * them: the input inside the output buffer (tpu_coll_in_place_offsets), one
 * untimed call first when the row has a warm-up, then 'iters' timed calls, each
 * checked against the same reference.  '*sum_s_p': this rank's wall time of the
 * timed calls; '*wrong_p': the elements that differed.
 */
static void in_place_calls(const app_case_t *c, app_job_t *job, const app_opts_t *o, int iters,
                           int warm, double timeout, uint64_t *call, double *sum_s_p, long *wrong_p)

{
    tpu_err_t err = {0};
    uint64_t ioff, ooff, size;
    app_case_t ip = *c;
    unsigned char *buf;
    const char *corrupt = getenv("TPUEMU_TEST_CORRUPT"); /* tests only: flip a byte */
    double modeled, wall;
    int it;

    *sum_s_p = 0;
    *wrong_p = 0;
    if (tpu_coll_in_place_offsets(c->plan, job->chip, &ioff, &ooff, &size, &err) != TPU_OK) {
        app_job_fail(job, &err);
    }
    buf = tpu__malloc(size > 0 ? size : 1);
    if (buf == NULL) {
        app_job_abort(job, "out of memory for the in-place buffer of a bench row");
    }
    ip.in = buf + ioff;
    ip.out = buf + ooff;
    for (it = 0; it < warm + iters; it++) {
        memset(buf, 0, size);
        memcpy(ip.in, c->in, c->in_bytes);
        app_job_barrier(job, "the barrier around a bench row");
        if (app_case_run(&ip, job, (*call)++, 0, timeout, &modeled, &wall, &err) != TPU_OK) {
            app_job_fail(job, &err);
        }
        if (corrupt != NULL && corrupt[0] == '2' && job->chip == 0 && it == warm &&
            c->out_bytes > 0) {
            ip.out[c->out_bytes / 2] ^= 0x40; /* the test of the in-place #wrong */
        }
        app_job_barrier(job, "the barrier around a bench row");
        if (it >= warm) {
            *sum_s_p += wall;
        }
        if (o->check) {
            *wrong_p += app_case_wrong(&ip, job->chip);
        }
    }
    tpu__free(buf);
}

int app_cmd_bench(app_ctx_t *ctx)
{
    const app_opts_t *o = ctx->o;
    app_job_t *job = ctx->job;
    tpu_err_t err = {0};
    tpu_coll_kind_t kinds[TPU_COLL_COUNT];
    int nkinds = 0, k, iters = o->iters >= 0 ? o->iters : 5,
        warmup = o->warmup >= 0 ? o->warmup : 5;
    int code, failed = 0, rows_total = 0;
    unsigned long long lo = 1024, hi = 1u << 20, step = 0;
    double timeout = o->timeout > 0 ? o->timeout : 60;
    uint64_t call = 0;
    app_sink_t json_sink = {NULL, NULL}, csv_sink = {NULL, NULL};
    app_json_t json, *j = NULL;
    app_csv_t csv_w, *csv = NULL;
    FILE *txt = app_sink_text(o->json, o->csv);
    app_report_t rep;
    app_progress_t progress;
    double t_job = 0, *walls = NULL;
    char host_what[96];
    const char *corrupt = getenv("TPUEMU_TEST_CORRUPT"); /* tests only: flip a byte */
    long nrows_all = 0, sec_wrong = 0;
    double sec_busbw = 0;
    int sec_rows = 0;

    if ((o->min_bytes && app_parse_size(o->min_bytes, &lo, &err) != TPU_OK) ||
        (o->max_bytes && app_parse_size(o->max_bytes, &hi, &err) != TPU_OK) ||
        (o->step_bytes && app_parse_size(o->step_bytes, &step, &err) != TPU_OK) ||
        (o->collective && tpu_coll_parse(o->collective, &kinds[0], &err) != TPU_OK)) {
        if (job->chip == 0) {
            app_die_msg(err.msg);
        }
        return app_job_end(job, APP_EXIT_USAGE);
    }
    if (lo == 0 || hi < lo || !(o->factor > 1) || iters < 1 || warmup < 0) {
        if (job->chip == 0) {
            app_die_msg("bench needs 0 < --min-bytes <= --max-bytes, --factor > 1, --iters >= 1, "
                        "--warmup >= 0");
        }
        return app_job_end(job, APP_EXIT_USAGE);
    }
    if (o->collective) {
        nkinds = 1;
    } else {
        for (k = 0; k < TPU_COLL_COUNT; k++) {
            /* The sweep over several named axes leaves out ppermute, which moves
             * along one axis (named alone, it is refused: --collective ppermute). */
            if (k == TPU_COLL_PPERMUTE && o->axes != NULL && strchr(o->axes, ',') != NULL) {
                continue;
            }
            kinds[nkinds++] = (tpu_coll_kind_t)k;
        }
    }
    code = app_job_outputs_open(job, o, "bench", &rep, &json_sink, &csv_sink);
    if (code >= 0) {
        return code;
    }
    if (json_sink.f != NULL) {
        app_json_init(&json, json_sink.f);
        j = &json;
        app_json_document(j, "bench");
        app_pod_json_header(j, job->pod);
        app_json_kint(j, "ranks", job->nranks);
        app_json_kint(j, "iters", iters);
        app_json_kint(j, "warmup", warmup);
        app_json_kbool(j, "check", o->check != 0);
        app_json_karray(j, "rows");
    }
    if (csv_sink.f != NULL) {
        app_csv_init(&csv_w, csv_sink.f);
        csv = &csv_w;
        app_csv_pod_header(csv, csv_cols, (int)(sizeof(csv_cols) / sizeof(csv_cols[0])));
    }
    app_progress_init(&progress, 0, 0, txt);
    app_job_barrier(job, "the start of the benchmark");
    t_job = tpu__now_s();
    for (k = 0; k < nkinds; k++) {
        tpu_coll_desc_t desc;
        char axes[32];
        uint64_t prev = 0;
        double b;
        int first_row = 1;

        {
            app_opts_t ko = *o;

            ko.collective = tpu_coll_name(kinds[k]);
            if (app_desc_setup(&ko, job->pod, NULL, &desc, &err) != TPU_OK) {
                if (job->chip == 0) {
                    app_die_msg(err.msg);
                }
                return app_job_end(job, APP_EXIT_USAGE);
            }
        }
        tpu_topo_axes_str(desc.kind == TPU_COLL_P2P ? 0 : desc.axes, axes, sizeof(axes));
        if (k == 0) {
            /* The rows of the sweep, for the progress bar (every collective alike). */
            uint64_t p = 0;

            for (b = (double)lo; b <= (double)hi * 1.0000001; b = next_size(b, o->factor, step)) {
                uint64_t v = valid_bytes(job->pod, &desc, (uint64_t)llround(b));

                nrows_all += v != p && v <= hi;
                p = v;
            }
            app_progress_init(&progress, job->chip == 0 && !o->quiet, nrows_all * nkinds, txt);
        }
        if (job->chip == 0) {
            app_col_t hcols[BENCH_ALL];
            int nhcols;

            table_cols(o, hcols, &nhcols);
            app_progress_end(&progress);
            fprintf(txt,
                    "# %s over %s on %s %s (wrap %s), %d ranks, %d iterations after %d warm-up\n",
                    tpu_coll_name(desc.kind), axes[0] ? axes : "-", tpu_pod_chip(job->pod)->name,
                    tpu_pod_shape(job->pod), tpu_pod_wrap(job->pod), job->nranks, iters, warmup);
            app_faults_print(txt, job->pod, "# fault: ");
            fprintf(txt, "#\n");
            fprintf(txt, "#%53s%-32s%-32s%s\n", "", "out-of-place (this host)",
                    "in-place (this host)", "modeled (TPU pod)");
            app_table_header(txt, "# ", hcols, nhcols);
        }
        for (b = (double)lo; b <= (double)hi * 1.0000001; b = next_size(b, o->factor, step)) {
            bench_row_t row;
            app_case_t c;
            double modeled = 0, wall, sum = 0, mpi_sum = 0, ip_sum = 0, vals[3];
            int it, group, compare, nshm;
            MPI_Comm gcomm = MPI_COMM_NULL;

            memset(&row, 0, sizeof(row));
            desc.bytes = valid_bytes(job->pod, &desc, (uint64_t)llround(b));
            if (desc.bytes == prev || desc.bytes > hi) {
                continue;
            }
            prev = desc.bytes;
            if (app_case_init(&c, job, &desc, &err) != TPU_OK) {
                if (job->chip == 0) {
                    app_die_msg(err.msg);
                }
                return app_job_end(job, APP_EXIT_USAGE);
            }
            {
                char item[96], size[32];

                /* Every rank: an interrupt's line names the row (the bar is chip 0's). */
                app_report_size((unsigned long long)desc.bytes, size, sizeof(size));
                snprintf(item, sizeof(item), "%s %s", tpu_coll_name(desc.kind), size);
                app_progress_update(&progress, rows_total, item);
            }
            if (o->trace_measured) {
                tpu__free(walls);
                walls = tpu__calloc((size_t)(2 * (warmup + iters)) * (size_t)job->nranks,
                                    sizeof(double));
                if (walls == NULL) {
                    app_job_abort(job, "out of memory for the measured trace");
                }
            }
            group = desc.kind == TPU_COLL_P2P ? 2 : tpu_coll_plan_group_size(c.plan);
            compare = o->compare_mpi;
            if (compare) {
                /* MPI_Comm_split and the host's own collectives block: guarded, so that
                 * a stopped chip does not leave its group in them forever. */
                snprintf(host_what, sizeof(host_what), "the host MPI's own %s (--compare-mpi)",
                         tpu_coll_name(c.desc.kind));
                app_job_guard_arm(job, timeout, "the groups of the host MPI's collectives");
                gcomm = app_bench_group_comm(job, &c.desc);
                app_job_guard_disarm(job);
            }
            /* Ours and the host MPI's alternate call by call, so that both see the
             * same machine (the load of 16 ranks on 2 cores drifts within a run). */
            for (it = 0; it < warmup + iters; it++) {
                memset(c.out, 0, c.out_bytes);
                app_job_barrier(job, "the barrier around a bench row");
                if (walls != NULL) {
                    walls[2 * it] = (tpu__now_s() - t_job) * 1e6;
                }
                if (app_case_run(&c, job, call++, it == 0, timeout, &modeled, &wall, &err) !=
                    TPU_OK) {
                    app_job_fail(job, &err);
                }
                if (walls != NULL) {
                    walls[2 * it + 1] = wall * 1e6;
                }
                if (corrupt != NULL && corrupt[0] == '1' && job->chip == 0 && it == warmup &&
                    c.out_bytes > 0) {
                    c.out[c.out_bytes / 2] ^= 0x40; /* the test of #wrong: one byte flipped */
                }
                /* Verify only when every rank is out of the timed call: checking
                 * takes CPU that ranks still inside it would otherwise get. */
                app_job_barrier(job, "the barrier around a bench row");
                if (it >= warmup) {
                    sum += wall;
                }
                if (o->check) {
                    row.wrong += app_case_wrong(&c, job->chip);
                }
                if (compare) {
                    double m;

                    app_job_barrier(job, "the barrier around a bench row");
                    /* Armed and disarmed outside the timed call (mpi_once times itself). */
                    app_job_guard_arm(job, timeout, host_what);
                    m = app_bench_mpi_once(
                        &c, gcomm,
                        tpu_topo_group_index(tpu_pod_topo(job->pod), c.desc.axes, job->chip));
                    app_job_guard_disarm(job);
                    if (it >= warmup) {
                        mpi_sum += m;
                    }
                }
            }
            in_place_calls(&c, job, o, iters, warmup > 0, timeout, &call, &ip_sum, &row.ip_wrong);
            if (compare) {
                if (gcomm != MPI_COMM_NULL) {
                    MPI_Comm_free(&gcomm);
                }
                mpi_sum /= iters;
                app_job_allreduce(job, MPI_IN_PLACE, &mpi_sum, 1, MPI_DOUBLE, MPI_SUM,
                                  "the results of a bench row");
                row.mpi_us = mpi_sum / job->nranks * 1e6;
            } else {
                row.mpi_us = -1;
            }
            sum /= iters;
            ip_sum /= iters;
            app_job_allreduce(job, MPI_IN_PLACE, &row.wrong, 1, MPI_LONG, MPI_SUM,
                              "the results of a bench row");
            app_job_allreduce(job, MPI_IN_PLACE, &row.ip_wrong, 1, MPI_LONG, MPI_SUM,
                              "the results of a bench row");
            app_job_allreduce(job, MPI_IN_PLACE, &ip_sum, 1, MPI_DOUBLE, MPI_SUM,
                              "the results of a bench row");
            row.ip_us = ip_sum / job->nranks * 1e6;
            app_job_allreduce(job, &modeled, &row.modeled_us, 1, MPI_DOUBLE, MPI_MAX,
                              "the results of a bench row");
            app_job_allreduce(job, &sum, &vals[0], 1, MPI_DOUBLE, MPI_MIN,
                              "the results of a bench row");
            app_job_allreduce(job, &sum, &vals[1], 1, MPI_DOUBLE, MPI_SUM,
                              "the results of a bench row");
            app_job_allreduce(job, &sum, &vals[2], 1, MPI_DOUBLE, MPI_MAX,
                              "the results of a bench row");
            row.min_us = vals[0] * 1e6;
            row.avg_us = vals[1] / job->nranks * 1e6;
            row.max_us = vals[2] * 1e6;
            row.bytes = desc.bytes;
            row.count = nccl_count(&desc, desc.bytes, group);
            row.ideal_us = tpu_coll_ideal_us(tpu_pod_topo(job->pod), tpu_pod_link(job->pod),
                                             tpu_coll_plan_desc(c.plan));
            snprintf(row.algo, sizeof(row.algo), "%s", tpu_coll_plan_algo(c.plan));
            /* The host path of the last call, over every rank. */
            nshm = strcmp(tpu_coll_exec_host_path(c.exec), "shm") == 0;
            app_job_allreduce(job, MPI_IN_PLACE, &nshm, 1, MPI_INT, MPI_SUM,
                              "the results of a bench row");
            row.host = nshm == job->nranks ? "shm" : nshm == 0 ? "messages" : "mixed";
            failed |= row.wrong != 0 || row.ip_wrong != 0;
            if (walls != NULL) {
                /* Every rank's wall-clock calls, to rank 0, for --trace-measured (with the
                 * watchdog: a rank that never comes ends the job, naming it). */
                int n = 2 * (warmup + iters);

                app_job_gather(job, job->chip == 0 ? MPI_IN_PLACE : walls, n * (int)sizeof(double),
                               walls, 0, "the gather of the measured calls");
            }
            if (job->chip == 0) {
                app_progress_end(&progress);
                if (!o->check) {
                    row.wrong = row.ip_wrong = -1;
                }
                emit_row(o, txt, j, csv, job->pod, &desc, axes, &row, group);
                /* nccl-tests' average: over the out-of-place and the in-place calls */
                sec_busbw += (row.bytes / (row.avg_us * 1e3) + row.bytes / (row.ip_us * 1e3)) *
                             bus_factor(desc.kind, group);
                sec_wrong +=
                    (row.wrong > 0 ? row.wrong : 0) + (row.ip_wrong > 0 ? row.ip_wrong : 0);
                sec_rows += 2;
                fflush(txt);
                if (app_report_active(&rep)) {
                    char size[32], name[96];
                    int r, n = warmup + iters;

                    app_report_size((unsigned long long)desc.bytes, size, sizeof(size));
                    snprintf(name, sizeof(name), "%s %s", tpu_coll_name(desc.kind), size);
                    if (app_report_model(&rep, c.plan, name, row.modeled_us, &err) != TPU_OK) {
                        app_job_abort(job, err.msg);
                    }
                    for (r = 0; walls != NULL && r < job->nranks; r++) {
                        for (it = 0; it < n; it++) {
                            app_report_measured(&rep, r, name, walls[(size_t)r * 2 * n + 2 * it],
                                                walls[(size_t)r * 2 * n + 2 * it + 1]);
                        }
                    }
                }
            }
            rows_total++;
            first_row = 0;
            app_case_fini(&c);
        }
        (void)first_row;
        if (job->chip == 0) {
            /* nccl-tests' closing lines, for the collective's rows */
            app_progress_end(&progress);
            fprintf(txt, "# Out of bounds values : %ld %s\n", sec_wrong,
                    !o->check   ? "(not checked)"
                    : sec_wrong ? "FAILED"
                                : "OK");
            fprintf(txt, "# Avg bus bandwidth    : %g\n#\n",
                    sec_rows > 0 ? sec_busbw / sec_rows : 0.0);
        }
        sec_busbw = 0;
        sec_wrong = 0;
        sec_rows = 0;
    }
    if (job->chip == 0) {
        fprintf(
            txt,
            "# %s\n# time: this host's wall time per call (the ranks' mean); model: TPU pod time "
            "from the link model\n# --wide: also the modeled algbw, formula (published-formula "
            "time / model), the host path, the fastest and slowest rank\n",
            !o->check ? "results not checked (-c 0)"
            : failed  ? "FAILED (#wrong > 0)"
                      : "all results verified");
        if (j != NULL) {
            app_json_array_end(j);
            app_json_kbool(j, "passed", !failed);
            app_json_object_end(j);
        }
    }
    app_progress_end(&progress);
    tpu__free(walls);
    code = app_job_outputs_close(job, j, &json_sink, &csv_sink, &rep);
    return app_job_end(job, code >= 0 ? code : failed ? APP_EXIT_FAIL : APP_EXIT_OK);
}
