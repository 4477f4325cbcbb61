/*
 * tpuemu bench: sweep sizes with real data; nccl-tests style rows with the
 * modeled and the measured time side by side, and optionally the host MPI
 * library's own collective on the same bytes, measured in the same run.
 */
#include "job.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct bench_row {
    uint64_t bytes, count;
    double modeled_us, ideal_us;
    double avg_us, min_us, max_us;
    double mpi_us;
    long wrong;
    char algo[64];
} bench_row_t;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

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
    return d == TPU_DTYPE_I32 ? MPI_INT : MPI_FLOAT;
}

static MPI_Op mpi_op(tpu_redop_t op)
{
    return op == TPU_REDOP_MAX ? MPI_MAX : op == TPU_REDOP_MIN ? MPI_MIN : MPI_SUM;
}

/* A group communicator per collective group, for the host MPI baseline. */
static MPI_Comm group_comm(tpu_job_t *job, const tpu_coll_desc_t *d)
{
    const tpu_topo_t *t = &job->pod.topo;
    MPI_Comm group;

    MPI_Comm_split(job->comm, tpu_topo_group_member(t, d->axes, job->chip, 0),
                   tpu_topo_group_index(t, d->axes, job->chip), &group);
    return group;
}

/* Does the host MPI library have this collective on these bytes? */
static int mpi_has(const tpu_coll_desc_t *d)
{
    return d->kind != TPU_COLL_P2P &&
           !((d->kind == TPU_COLL_PSUM || d->kind == TPU_COLL_REDUCE_SCATTER) &&
             d->dtype == TPU_DTYPE_BF16);
}

/*
 * One call of the host MPI library's own collective on the same bytes over the
 * same group: this rank's wall time.
 */
static double mpi_once(tpu_case_t *c, MPI_Comm group, int me)
{
    const tpu_coll_desc_t *d = &c->desc;
    int n, es = tpu_dtype_size(d->dtype);
    double t0 = now_s();

    MPI_Comm_size(group, &n);
    switch (d->kind) {
    case TPU_COLL_PSUM:
        MPI_Allreduce(c->in, c->out, (int)(d->bytes / (uint64_t)es), mpi_type(d->dtype),
                      mpi_op(d->op), group);
        break;
    case TPU_COLL_ALL_GATHER:
        MPI_Allgather(c->in, (int)c->in_bytes, MPI_BYTE, c->out, (int)c->in_bytes, MPI_BYTE, group);
        break;
    case TPU_COLL_REDUCE_SCATTER:
        MPI_Reduce_scatter_block(c->in, c->out, (int)(c->out_bytes / (uint64_t)es),
                                 mpi_type(d->dtype), mpi_op(d->op), group);
        break;
    case TPU_COLL_ALL_TO_ALL:
        MPI_Alltoall(c->in, (int)(d->bytes / (uint64_t)n), MPI_BYTE, c->out,
                     (int)(d->bytes / (uint64_t)n), MPI_BYTE, group);
        break;
    default: {
        int to = ((me + d->shift) % n + n) % n, from = ((me - d->shift) % n + n) % n;

        MPI_Sendrecv(c->in, (int)d->bytes, MPI_BYTE, to, 0, c->out, (int)d->bytes, MPI_BYTE, from,
                     0, group, MPI_STATUS_IGNORE);
        break;
    }
    }
    return now_s() - t0;
}

/* Bytes at or above 'want' that the collective accepts (whole blocks of elements). */
static uint64_t valid_bytes(const tpu_pod_t *pod, const tpu_coll_desc_t *d, uint64_t want)
{
    uint64_t unit = (uint64_t)tpu_dtype_size(d->dtype);

    if (d->kind == TPU_COLL_ALL_GATHER || d->kind == TPU_COLL_REDUCE_SCATTER ||
        d->kind == TPU_COLL_ALL_TO_ALL) {
        unit *= (uint64_t)tpu_topo_group_size(&pod->topo, d->axes);
    }
    return (want + unit - 1) / unit * unit;
}

static void print_header(int compare)
{
    printf("#\n# %10s %10s %5s %6s  %-18s %10s %8s %8s %7s  %10s %10s %10s %8s %8s %7s", "size",
           "count", "type", "redop", "algorithm", "model_us", "algbw", "busbw", "formula",
           "meas_us", "min_us", "max_us", "algbw", "busbw", "#wrong");
    if (compare) {
        printf("  %10s %7s", "mpi_us", "ratio");
    }
    printf("\n# %10s %10s %5s %6s  %-18s %10s %8s %8s %7s  %10s %10s %10s %8s %8s %7s", "(B)",
           "(elems)", "", "", "", "(TPU)", "(GB/s)", "(GB/s)", "(%)", "(host)", "", "", "(GB/s)",
           "(GB/s)", "");
    if (compare) {
        printf("  %10s %7s", "(host)", "(x)");
    }
    printf("\n");
}

int tpu_cmd_bench(const tpu_opts_t *o, int argc, char **argv)
{
    tpu_job_t job;
    tpu_err_t err = {0};
    tpu_coll_kind_t kinds[TPU_COLL_COUNT];
    int nkinds = 0, k, iters = o->iters >= 0 ? o->iters : 5,
        warmup = o->warmup >= 0 ? o->warmup : 1;
    int code = tpu_job_start(o, &argc, &argv, &job), failed = 0, rows_total = 0;
    unsigned long long lo = 1024, hi = 1u << 20;
    double timeout = o->timeout > 0 ? o->timeout : 60;
    FILE *json = NULL, *csv = NULL;
    int close_json = 0, close_csv = 0;
    uint64_t call = 0;

    if (code >= 0) {
        return code;
    }
    if ((o->min_bytes && tpu_parse_size(o->min_bytes, &lo, &err) != TPU_OK) ||
        (o->max_bytes && tpu_parse_size(o->max_bytes, &hi, &err) != TPU_OK) ||
        (o->collective && tpu_coll_parse(o->collective, &kinds[0], &err) != TPU_OK)) {
        if (job.chip == 0) {
            tpu_die_msg(err.msg);
        }
        return tpu_job_end(&job, TPU_EXIT_USAGE);
    }
    if (lo == 0 || hi < lo || !(o->factor > 1) || iters < 1 || warmup < 0) {
        if (job.chip == 0) {
            tpu_die_msg("bench needs 0 < --min-bytes <= --max-bytes, --factor > 1, --iters >= 1, "
                        "--warmup >= 0");
        }
        return tpu_job_end(&job, TPU_EXIT_USAGE);
    }
    if (o->collective) {
        nkinds = 1;
    } else {
        for (k = 0; k < TPU_COLL_COUNT; k++) {
            kinds[nkinds++] = (tpu_coll_kind_t)k;
        }
    }
    if (job.chip == 0) {
        if (o->json) {
            json = tpu_open_output(o->json, &close_json, &err);
        }
        if (o->csv && err.status == TPU_OK) {
            csv = tpu_open_output(o->csv, &close_csv, &err);
        }
    }
    MPI_Bcast(&err.status, 1, MPI_INT, 0, job.comm);
    if (err.status != TPU_OK) {
        if (job.chip == 0) {
            tpu_die_msg(err.msg);
        }
        return tpu_job_end(&job, TPU_EXIT_USAGE);
    }
    if (json) {
        fprintf(json,
                "{\"chip\": \"%s\", \"topology\": \"%s\", \"wrap\": \"%s\", \"slices\": %d, "
                "\"ranks\": %d, \"iters\": %d, \"results\": [",
                job.pod.chip.name, job.pod.shape, job.pod.wrap, job.pod.topo.slices, job.nranks,
                iters);
    }
    if (csv) {
        fprintf(csv, "collective,axes,bytes,count,dtype,redop,algorithm,modeled_us,formula_us,"
                     "measured_us,measured_min_us,measured_max_us,algbw_GBps,busbw_GBps,wrong,"
                     "mpi_us\n");
    }
    for (k = 0; k < nkinds; k++) {
        tpu_coll_desc_t desc;
        char axes[32];
        uint64_t prev = 0;
        double b;
        int first_row = 1;

        {
            tpu_opts_t ko = *o;

            ko.collective = tpu_coll_name(kinds[k]);
            if (tpu_desc_setup(&ko, &job.pod, NULL, &desc, &err) != TPU_OK) {
                if (job.chip == 0) {
                    tpu_die_msg(err.msg);
                }
                return tpu_job_end(&job, TPU_EXIT_USAGE);
            }
        }
        tpu_topo_axes_str(desc.kind == TPU_COLL_P2P ? 0 : desc.axes, axes, sizeof(axes));
        if (job.chip == 0) {
            printf("# %s over %s on %s %s (wrap %s), %d ranks, %d iterations after %d warm-up\n",
                   tpu_coll_name(desc.kind), axes[0] ? axes : "-", job.pod.chip.name, job.pod.shape,
                   job.pod.wrap, job.nranks, iters, warmup);
            print_header(o->compare_mpi);
        }
        for (b = (double)lo; b <= (double)hi * 1.0000001; b *= o->factor) {
            bench_row_t row;
            tpu_case_t c;
            double modeled = 0, wall, sum = 0, mpi_sum = 0, vals[3];
            int it, group, compare;
            MPI_Comm gcomm = MPI_COMM_NULL;

            memset(&row, 0, sizeof(row));
            desc.bytes = valid_bytes(&job.pod, &desc, (uint64_t)llround(b));
            if (desc.bytes == prev || desc.bytes > hi) {
                continue;
            }
            prev = desc.bytes;
            if (tpu_case_init(&c, &job, &desc, &err) != TPU_OK) {
                if (job.chip == 0) {
                    tpu_die_msg(err.msg);
                }
                return tpu_job_end(&job, TPU_EXIT_USAGE);
            }
            group = desc.kind == TPU_COLL_P2P ? 2 : tpu_coll_plan_group_size(c.plan);
            compare = o->compare_mpi && mpi_has(&c.desc);
            if (compare) {
                gcomm = group_comm(&job, &c.desc);
            }
            /* Ours and the host MPI's alternate call by call, so that both see the
             * same machine (the load of 16 ranks on 2 cores drifts within a run). */
            for (it = 0; it < warmup + iters; it++) {
                memset(c.out, 0, c.out_bytes);
                MPI_Barrier(job.comm);
                if (tpu_case_run(&c, &job, call++, it == 0, timeout, &modeled, &wall, &err) !=
                    TPU_OK) {
                    tpu_job_abort(&job, err.msg);
                }
                /* Verify only when every rank is out of the timed call: checking
                 * takes CPU that ranks still inside it would otherwise get. */
                MPI_Barrier(job.comm);
                if (it >= warmup) {
                    sum += wall;
                }
                row.wrong += tpu_case_wrong(&c, job.chip);
                if (compare) {
                    double m;

                    MPI_Barrier(job.comm);
                    m = mpi_once(&c, gcomm,
                                 tpu_topo_group_index(&job.pod.topo, c.desc.axes, job.chip));
                    if (it >= warmup) {
                        mpi_sum += m;
                    }
                }
            }
            if (compare) {
                MPI_Comm_free(&gcomm);
                mpi_sum /= iters;
                MPI_Allreduce(MPI_IN_PLACE, &mpi_sum, 1, MPI_DOUBLE, MPI_SUM, job.comm);
                row.mpi_us = mpi_sum / job.nranks * 1e6;
            } else {
                row.mpi_us = -1;
            }
            sum /= iters;
            MPI_Allreduce(MPI_IN_PLACE, &row.wrong, 1, MPI_LONG, MPI_SUM, job.comm);
            MPI_Allreduce(&modeled, &row.modeled_us, 1, MPI_DOUBLE, MPI_MAX, job.comm);
            MPI_Allreduce(&sum, &vals[0], 1, MPI_DOUBLE, MPI_MIN, job.comm);
            MPI_Allreduce(&sum, &vals[1], 1, MPI_DOUBLE, MPI_SUM, job.comm);
            MPI_Allreduce(&sum, &vals[2], 1, MPI_DOUBLE, MPI_MAX, job.comm);
            row.min_us = vals[0] * 1e6;
            row.avg_us = vals[1] / job.nranks * 1e6;
            row.max_us = vals[2] * 1e6;
            row.bytes = desc.bytes;
            row.count = desc.bytes / (uint64_t)tpu_dtype_size(desc.dtype);
            row.ideal_us =
                tpu_coll_ideal_us(&job.pod.topo, &job.pod.link, tpu_coll_plan_desc(c.plan));
            snprintf(row.algo, sizeof(row.algo), "%s", tpu_coll_plan_algo(c.plan));
            failed |= row.wrong != 0;
            if (job.chip == 0) {
                double bf = bus_factor(desc.kind, group);
                double malg = row.bytes / (row.modeled_us * 1e3),
                       halg = row.bytes / (row.avg_us * 1e3);

                printf("  %10llu %10llu %5s %6s  %-18s %10.3f %8.2f %8.2f %7.1f  %10.1f %10.1f "
                       "%10.1f %8.3f %8.3f %7ld",
                       (unsigned long long)row.bytes, (unsigned long long)row.count,
                       tpu_dtype_name(desc.dtype),
                       desc.kind == TPU_COLL_PSUM || desc.kind == TPU_COLL_REDUCE_SCATTER
                           ? tpu_redop_name(desc.op)
                           : "none",
                       row.algo, row.modeled_us, malg, malg * bf,
                       100 * row.ideal_us / row.modeled_us, row.avg_us, row.min_us, row.max_us,
                       halg, halg * bf, row.wrong);
                if (o->compare_mpi) {
                    if (row.mpi_us > 0) {
                        printf("  %10.1f %7.2f", row.mpi_us, row.avg_us / row.mpi_us);
                    } else {
                        printf("  %10s %7s", "-", "-");
                    }
                }
                printf("\n");
                if (json) {
                    fprintf(json,
                            "%s\n  {\"collective\": \"%s\", \"axes\": \"%s\", \"bytes\": %llu, "
                            "\"count\": %llu, \"dtype\": \"%s\", \"redop\": \"%s\", "
                            "\"algorithm\": \"%s\", \"modeled_us\": %.6f, \"formula_us\": %.6f, "
                            "\"measured_us\": %.3f, \"measured_min_us\": %.3f, "
                            "\"measured_max_us\": %.3f, \"algbw_GBps\": %.4f, \"busbw_GBps\": "
                            "%.4f, \"modeled_algbw_GBps\": %.4f, \"modeled_busbw_GBps\": %.4f, "
                            "\"wrong\": %ld",
                            rows_total ? "," : "", tpu_coll_name(desc.kind), axes,
                            (unsigned long long)row.bytes, (unsigned long long)row.count,
                            tpu_dtype_name(desc.dtype), tpu_redop_name(desc.op), row.algo,
                            row.modeled_us, row.ideal_us, row.avg_us, row.min_us, row.max_us, halg,
                            halg * bf, malg, malg * bf, row.wrong);
                    if (o->compare_mpi && row.mpi_us > 0) {
                        fprintf(json, ", \"mpi_us\": %.3f, \"mpi_ratio\": %.4f", row.mpi_us,
                                row.avg_us / row.mpi_us);
                    }
                    fprintf(json, "}");
                }
                if (csv) {
                    fprintf(csv, "%s,%s,%llu,%llu,%s,%s,%s,%.6f,%.6f,%.3f,%.3f,%.3f,%.4f,%.4f,%ld,",
                            tpu_coll_name(desc.kind), axes, (unsigned long long)row.bytes,
                            (unsigned long long)row.count, tpu_dtype_name(desc.dtype),
                            tpu_redop_name(desc.op), row.algo, row.modeled_us, row.ideal_us,
                            row.avg_us, row.min_us, row.max_us, halg, halg * bf, row.wrong);
                    if (row.mpi_us > 0) {
                        fprintf(csv, "%.3f", row.mpi_us);
                    }
                    fprintf(csv, "\n");
                }
                fflush(stdout);
            }
            rows_total++;
            first_row = 0;
            tpu_case_fini(&c);
        }
        (void)first_row;
    }
    if (json) {
        fprintf(json, "\n]}\n");
        if (close_json) {
            fclose(json);
        }
    }
    if (csv && close_csv) {
        fclose(csv);
    }
    if (job.chip == 0) {
        printf("# %s: modeled = TPU pod time from the link model; formula = published-formula "
               "time / modeled; meas = this host's wall time per call (avg, min, max over "
               "ranks)\n",
               failed ? "FAILED (#wrong > 0)" : "all results verified");
    }
    return tpu_job_end(&job, failed ? TPU_EXIT_FAIL : TPU_EXIT_OK);
}
