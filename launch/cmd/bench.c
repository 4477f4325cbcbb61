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
    double mpi_us;
    long wrong;
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

static MPI_Datatype mpi_type(tpu_dtype_t d)
{
    return d == TPU_DTYPE_I32 ? MPI_INT : d == TPU_DTYPE_BF16 ? MPI_UINT16_T : MPI_FLOAT;
}

/*
 * bf16 reductions for the MPI baseline: MPI has no bf16 type, so a user reduces
 * 16-bit words with an operation of their own.  Each step widens both operands,
 * combines them in f32 and rounds to bf16 (what a user operation on bf16 words
 * does; tpuemu accumulates in f32 and rounds once, so the two may differ in the
 * last bit: the baseline's result is never checked, only timed).
 */
#define BF16_OP(name, expr)                                                         \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type)           \
    {                                                                               \
        const uint16_t *a = in;                                                     \
        uint16_t *b = inout;                                                        \
        int i;                                                                      \
                                                                                    \
        (void)type;                                                                 \
        for (i = 0; i < *len; i++) {                                                \
            float x = tpu_dtype_bf16_to_f32(a[i]), y = tpu_dtype_bf16_to_f32(b[i]); \
                                                                                    \
            b[i] = tpu_dtype_f32_to_bf16(expr);                                     \
        }                                                                           \
    }
BF16_OP(bf16_sum, x + y)
BF16_OP(bf16_max, x > y ? x : y)
BF16_OP(bf16_min, x < y ? x : y)
#undef BF16_OP

/* The MPI operation of a reduction; a user-defined one for bf16 (free it after). */
static MPI_Op mpi_op(tpu_redop_t op, tpu_dtype_t d)
{
    MPI_Op user = MPI_OP_NULL;

    if (d == TPU_DTYPE_BF16) {
        MPI_Op_create(op == TPU_REDOP_MAX   ? bf16_max
                      : op == TPU_REDOP_MIN ? bf16_min
                                            : bf16_sum,
                      1, &user);
        return user;
    }
    return op == TPU_REDOP_MAX ? MPI_MAX : op == TPU_REDOP_MIN ? MPI_MIN : MPI_SUM;
}

/* A group communicator per collective group, for the host MPI baseline. */
static MPI_Comm group_comm(app_job_t *job, const tpu_coll_desc_t *d)
{
    const tpu_topo_t *t = tpu_pod_topo(job->pod);
    MPI_Comm group;

    if (d->kind == TPU_COLL_P2P) {
        /* The pair, the source first; the other ranks get MPI_COMM_NULL. */
        int in = job->chip == d->src || job->chip == d->dst;

        MPI_Comm_split(job->comm, in ? 0 : MPI_UNDEFINED, job->chip == d->src ? 0 : 1, &group);
        return group;
    }
    MPI_Comm_split(job->comm, tpu_topo_group_member(t, d->axes, job->chip, 0),
                   tpu_topo_group_index(t, d->axes, job->chip), &group);
    return group;
}

/* The largest element count handed to MPI in one piece. */
#define MPI_PIECE ((uint64_t)1 << 30)

/*
 * A datatype of 'bytes' contiguous bytes, also past INT_MAX (1 MiB units and a
 * remainder), for the collectives that move whole blocks (no reduction).
 */
static MPI_Datatype block_type(uint64_t bytes)
{
    MPI_Datatype t, unit, parts[2];
    int lens[2] = {1, 1};
    MPI_Aint disp[2];

    if (bytes <= MPI_PIECE) {
        MPI_Type_contiguous((int)bytes, MPI_BYTE, &t);
    } else {
        MPI_Type_contiguous(1 << 20, MPI_BYTE, &unit);
        MPI_Type_contiguous((int)(bytes >> 20), unit, &parts[0]);
        MPI_Type_contiguous((int)(bytes & ((1u << 20) - 1)), MPI_BYTE, &parts[1]);
        disp[0] = 0;
        disp[1] = (MPI_Aint)(bytes >> 20 << 20);
        MPI_Type_create_struct(2, lens, disp, parts, &t);
        MPI_Type_free(&unit);
        MPI_Type_free(&parts[0]);
        MPI_Type_free(&parts[1]);
    }
    MPI_Type_commit(&t);
    return t;
}

/*
 * One call of the host MPI library's own collective on the same bytes over the
 * same group: this rank's wall time.  Counts never pass INT_MAX: reductions go in
 * pieces of MPI_PIECE elements (a reduce-scatter whose block is larger reduces
 * each block to its owner), whole blocks travel as one derived datatype.  p2p:
 * MPI_Send from the source, MPI_Recv at the destination (group: the pair, source
 * first); the other ranks (group MPI_COMM_NULL) time nothing, as in ours.
 */
static double mpi_once(app_case_t *c, MPI_Comm group, int me)
{
    const tpu_coll_desc_t *d = &c->desc;
    int n, es = tpu_dtype_size(d->dtype);
    MPI_Datatype et = mpi_type(d->dtype), bt = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    uint64_t off, piece;
    double t0;

    if (group == MPI_COMM_NULL) {
        return 0.0;
    }
    MPI_Comm_size(group, &n);
    if (d->kind == TPU_COLL_PSUM || d->kind == TPU_COLL_REDUCE_SCATTER) {
        op = mpi_op(d->op, d->dtype);
    }
    if (d->kind == TPU_COLL_ALL_GATHER || d->kind == TPU_COLL_ALL_TO_ALL) {
        bt = block_type(d->kind == TPU_COLL_ALL_GATHER ? c->in_bytes : d->bytes / (uint64_t)n);
    }
    t0 = tpu__now_s();
    switch (d->kind) {
    case TPU_COLL_PSUM: {
        uint64_t count = d->bytes / (uint64_t)es;

        for (off = 0; off < count; off += piece) {
            piece = count - off < MPI_PIECE ? count - off : MPI_PIECE;
            MPI_Allreduce((char *)c->in + off * es, (char *)c->out + off * es, (int)piece, et, op,
                          group);
        }
        break;
    }
    case TPU_COLL_ALL_GATHER:
        MPI_Allgather(c->in, 1, bt, c->out, 1, bt, group);
        break;
    case TPU_COLL_REDUCE_SCATTER: {
        uint64_t count = c->out_bytes / (uint64_t)es;
        int r;

        if (count <= MPI_PIECE) {
            MPI_Reduce_scatter_block(c->in, c->out, (int)count, et, op, group);
            break;
        }
        for (r = 0; r < n; r++) {
            for (off = 0; off < count; off += piece) {
                piece = count - off < MPI_PIECE ? count - off : MPI_PIECE;
                MPI_Reduce((char *)c->in + ((uint64_t)r * count + off) * es,
                           (char *)c->out + off * es, (int)piece, et, op, r, group);
            }
        }
        break;
    }
    case TPU_COLL_ALL_TO_ALL:
        MPI_Alltoall(c->in, 1, bt, c->out, 1, bt, group);
        break;
    case TPU_COLL_P2P: {
        int r;

        MPI_Comm_rank(group, &r);
        for (off = 0; off < d->bytes; off += piece) {
            piece = d->bytes - off < MPI_PIECE ? d->bytes - off : MPI_PIECE;
            if (r == 0) {
                MPI_Send((char *)c->in + off, (int)piece, MPI_BYTE, 1, 0, group);
            } else {
                MPI_Recv((char *)c->out + off, (int)piece, MPI_BYTE, 0, 0, group,
                         MPI_STATUS_IGNORE);
            }
        }
        break;
    }
    default: {
        int to = ((me + d->shift) % n + n) % n, from = ((me - d->shift) % n + n) % n;

        for (off = 0; off < d->bytes; off += piece) {
            piece = d->bytes - off < MPI_PIECE ? d->bytes - off : MPI_PIECE;
            MPI_Sendrecv((char *)c->in + off, (int)piece, MPI_BYTE, to, 0, (char *)c->out + off,
                         (int)piece, MPI_BYTE, from, 0, group, MPI_STATUS_IGNORE);
        }
        break;
    }
    }
    t0 = tpu__now_s() - t0;
    if (bt != MPI_DATATYPE_NULL) {
        MPI_Type_free(&bt);
    }
    if (d->dtype == TPU_DTYPE_BF16 && op != MPI_OP_NULL) {
        MPI_Op_free(&op);
    }
    return t0;
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
 * The nccl-tests style table: nccl-tests' columns up to #wrong (the out-of-place
 * call, measured on this host), the modeled ones, then with --wide the fastest and
 * slowest rank, and with --compare-mpi the host MPI's time.  Without them a row is
 * 158 characters.
 */
enum {
    BENCH_COLS = 15,
    BENCH_WIDE = 17,
    BENCH_ALL = 19
};
static const app_col_t bench_cols[] = {
    {"size", "(B)", 10, 0, 2},    {"count", "(elements)", 12, 0, 2},
    {"type", "", 8, 0, 2},        {"redop", "", 6, 0, 2},
    {"root", "", 4, 0, 2},        {"time", "(us)", 9, 0, 2},
    {"algbw", "(GB/s)", 7, 0, 2}, {"busbw", "(GB/s)", 7, 0, 2},
    {"#wrong", "", 6, 0, 2},      {"model", "(us)", 9, 0, 3},
    {"algbw", "(GB/s)", 7, 0, 2}, {"busbw", "(GB/s)", 7, 0, 2},
    {"formula", "(%)", 7, 0, 2},  {"algorithm", "", 18, 1, 2},
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
                                       "mpi_us",
                                       "host_path"};

/* nccl-tests' name of a type (float, bfloat16, int32, int8). */
static const char *nccl_type(tpu_dtype_t d)
{
    return d == TPU_DTYPE_F32    ? "float"
           : d == TPU_DTYPE_BF16 ? "bfloat16"
           : d == TPU_DTYPE_I32  ? "int32"
                                 : tpu_dtype_name(d);
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
    char cell[BENCH_ALL][64];
    const char *cells[BENCH_ALL];
    int i, wide = o->wide || o->compare_mpi, ncols = o->compare_mpi ? BENCH_ALL : BENCH_WIDE;

    snprintf(cell[0], 64, "%llu", (unsigned long long)row->bytes);
    snprintf(cell[1], 64, "%llu", (unsigned long long)row->count);
    snprintf(cell[2], 64, "%s", nccl_type(desc->dtype));
    snprintf(cell[3], 64, "%s", row_redop(desc));
    snprintf(cell[4], 64, "%d", desc->kind == TPU_COLL_P2P ? desc->src : -1);
    snprintf(cell[5], 64, "%.2f", row->avg_us);
    snprintf(cell[6], 64, "%.2f", halg);
    snprintf(cell[7], 64, "%.2f", halg * bf);
    snprintf(cell[8], 64, row->wrong < 0 ? "N/A" : "%ld", row->wrong);
    snprintf(cell[9], 64, "%.3f", row->modeled_us);
    snprintf(cell[10], 64, "%.2f", malg);
    snprintf(cell[11], 64, "%.2f", malg * bf);
    snprintf(cell[12], 64, "%.1f", 100 * row->ideal_us / row->modeled_us);
    snprintf(cell[13], 64, "%s", row->algo);
    snprintf(cell[14], 64, "%s", row->host);
    snprintf(cell[15], 64, "%.2f", row->min_us);
    snprintf(cell[16], 64, "%.2f", row->max_us);
    snprintf(cell[17], 64, row->mpi_us > 0 ? "%.2f" : "-", row->mpi_us);
    snprintf(cell[18], 64, row->mpi_us > 0 ? "%.2f" : "-", row->avg_us / row->mpi_us);
    for (i = 0; i < BENCH_ALL; i++) {
        cells[i] = cell[i];
    }
    app_table_row(txt, "  ", bench_cols, wide ? ncols : BENCH_COLS, cells);
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
        if (row->mpi_us > 0) {
            app_csv_fixed(csv, row->mpi_us, 3);
        } else {
            app_csv_empty(csv);
        }
        app_csv_str(csv, row->host);
        app_csv_end_row(csv);
    }
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
            app_progress_end(&progress);
            fprintf(txt,
                    "# %s over %s on %s %s (wrap %s), %d ranks, %d iterations after %d warm-up\n",
                    tpu_coll_name(desc.kind), axes[0] ? axes : "-", tpu_pod_chip(job->pod)->name,
                    tpu_pod_shape(job->pod), tpu_pod_wrap(job->pod), job->nranks, iters, warmup);
            app_faults_print(txt, job->pod, "# fault: ");
            fprintf(txt, "#\n");
            fprintf(txt, "# %50s%-38s%s\n", "", "out-of-place (this host)", "modeled (TPU pod)");
            app_table_header(txt, "# ", bench_cols,
                             o->compare_mpi ? BENCH_ALL
                             : o->wide      ? BENCH_WIDE
                                            : BENCH_COLS);
        }
        for (b = (double)lo; b <= (double)hi * 1.0000001; b = next_size(b, o->factor, step)) {
            bench_row_t row;
            app_case_t c;
            double modeled = 0, wall, sum = 0, mpi_sum = 0, vals[3];
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
                gcomm = group_comm(job, &c.desc);
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
                    m = mpi_once(
                        &c, gcomm,
                        tpu_topo_group_index(tpu_pod_topo(job->pod), c.desc.axes, job->chip));
                    app_job_guard_disarm(job);
                    if (it >= warmup) {
                        mpi_sum += m;
                    }
                }
            }
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
            app_job_allreduce(job, MPI_IN_PLACE, &row.wrong, 1, MPI_LONG, MPI_SUM,
                              "the results of a bench row");
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
            failed |= row.wrong != 0;
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
                    row.wrong = -1;
                }
                emit_row(o, txt, j, csv, job->pod, &desc, axes, &row, group);
                sec_busbw += row.bytes / (row.avg_us * 1e3) * bus_factor(desc.kind, group);
                sec_wrong += row.wrong > 0 ? row.wrong : 0;
                sec_rows++;
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
        fprintf(txt,
                "# %s\n# time: this host's wall time per call (the ranks' mean; --wide: min, "
                "max); model: TPU pod time from the link model; formula: published-formula "
                "time / model\n",
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
