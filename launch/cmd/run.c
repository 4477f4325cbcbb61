/*
 * The default run: print the pod and where each chip runs, prove the wiring with
 * a token over every link, and run every collective at a small and a large size
 * with real data, verified, modeled and measured side by side.
 */
#include "job.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOKEN_BYTES 64

/* Send a token over every link of this chip and check what arrives on each. */
static int wiring_check(tpu_job_t *job, double *wall_us_p, int *links_p)
{
    const tpu_topo_t *t = &job->pod.topo;
    MPI_Request reqs[4 * TPU_MAX_AXES];
    int send[2 * TPU_MAX_AXES][TOKEN_BYTES / 4], recv[2 * TPU_MAX_AXES][TOKEN_BYTES / 4];
    int nreq = 0, bad = 0, a, d, links = 0;
    struct timespec t0, t1;

    MPI_Barrier(job->comm);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (a = 0; a < t->naxes; a++) {
        for (d = 0; d < 2; d++) {
            int dir = d ? -1 : 1, k = 2 * a + d;
            int to = tpu_topo_neighbor(t, job->chip, a, dir);
            int from = tpu_topo_neighbor(t, job->chip, a, -dir);
            int i;

            recv[k][0] = -1;
            if (from >= 0) {
                MPI_Irecv(recv[k], TOKEN_BYTES / 4, MPI_INT, from, k, job->comm, &reqs[nreq++]);
            }
            if (to >= 0) {
                for (i = 0; i < TOKEN_BYTES / 4; i++) {
                    send[k][i] = tpu_topo_link(t, job->chip, a, dir) * 31 + i;
                }
                send[k][0] = job->chip;
                MPI_Isend(send[k], TOKEN_BYTES / 4, MPI_INT, to, k, job->comm, &reqs[nreq++]);
                links++;
            }
        }
    }
    MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (a = 0; a < t->naxes; a++) {
        for (d = 0; d < 2; d++) {
            int dir = d ? -1 : 1, k = 2 * a + d;
            int from = tpu_topo_neighbor(t, job->chip, a, -dir);
            int link = from >= 0 ? tpu_topo_link(t, from, a, dir) : -1, i;

            if (from < 0) {
                continue;
            }
            if (recv[k][0] != from) {
                bad++;
                continue;
            }
            for (i = 1; i < TOKEN_BYTES / 4; i++) {
                if (recv[k][i] != link * 31 + i) {
                    bad++;
                    break;
                }
            }
        }
    }
    *wall_us_p = ((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9) * 1e6;
    *links_p = links;
    return bad;
}

typedef struct row {
    const char *name;
    tpu_coll_kind_t kind;
    unsigned axes;
    int shift;
} row_t;

int tpu_cmd_run(const tpu_opts_t *o, int argc, char **argv)
{
    tpu_job_t job;
    tpu_err_t err = {0};
    const tpu_topo_t *t;
    tpu_place_t *all = NULL;
    double wall_us, max_wall, timeout = o->timeout > 0 ? o->timeout : 60;
    int code = tpu_job_start(o, &argc, &argv, &job), bad, links, total_links, i, s, failed = 0;
    unsigned all_axes;
    uint64_t call = 0;
    row_t rows[8];
    int nrows = 0;

    FILE *json = NULL, *txt = stdout;
    int close_json = 0, nrows_out = 0;

    if (code >= 0) {
        return code;
    }
    t = &job.pod.topo;
    if (o->json != NULL && job.chip == 0) {
        json = tpu_open_output(o->json, &close_json, &err);
        if (json == NULL) {
            tpu_job_abort(&job, err.msg);
        }
        if (json == stdout) {
            txt = stderr; /* the JSON alone on stdout */
        }
    }
    all_axes = (1u << t->naxes) - 1;
    if (t->slices > 1) {
        all_axes |= TPU_AXIS_MASK_DCN;
    }
    /* The pod and the placement. */
    if (job.chip == 0) {
        all = malloc((size_t)t->nchips * sizeof(*all));
    }
    MPI_Gather(&job.place, (int)sizeof(job.place), MPI_BYTE, all, (int)sizeof(job.place), MPI_BYTE,
               0, job.comm);
    if (job.chip == 0) {
        int a, example = 0, split, over = 0;

        fprintf(txt, "tpuemu: %d chips of %s as %s%s, wrap %s (", t->nchips, job.pod.chip.name,
                job.pod.shape, t->slices > 1 ? " slices" : "", job.pod.wrap);
        for (a = 0; a < t->naxes; a++) {
            fprintf(txt, "%s%s %s", a ? ", " : "", tpu_topo_axis_name(a),
                    t->wrap[a] ? "wraps" : "open");
        }
        fprintf(txt, ")");
        if (t->slices > 1) {
            fprintf(txt, ", %d slices over DCN", t->slices);
        }
        fprintf(txt,
                "\nICI %.3g B/s per link, %.2f us per hop; DCN %.4g B/s per chip; %d chips per "
                "host\n",
                job.pod.chip.ici_bw, job.pod.chip.ici_latency * 1e6, job.pod.chip.dcn_bw,
                tpu_chip_per_host(&job.pod.chip));
        if (!o->quiet) {
            fprintf(txt, "\n");
            tpu_place_print(txt, &job.pod, all);
        }
        for (i = 0; i < t->nchips; i++) {
            if (all[i].node_cores > 0 && all[i].node_ranks > all[i].node_cores) {
                over = all[i].node_ranks;
                s = all[i].node_cores;
            }
        }
        if (over) {
            fprintf(txt,
                    "warning: %d ranks share %d cores on a node: measured times are dominated by "
                    "the host\n",
                    over, s);
        }
        split = tpu_place_split_hosts(&job.pod, all, &example);
        if (split) {
            fprintf(txt,
                    "warning: %d emulated TPU hosts span several MPI nodes (host %d first); fill "
                    "nodes with whole hosts of %d ranks\n",
                    split, example, tpu_chip_per_host(&job.pod.chip));
        }
        if (json != NULL) {
            fprintf(json,
                    "{\"chip\": \"%s\", \"topology\": \"%s\", \"wrap\": \"%s\", \"slices\": %d, "
                    "\"chips\": %d, \"chips_per_host\": %d, \"placement\": ",
                    job.pod.chip.name, job.pod.shape, job.pod.wrap, t->slices, t->nchips,
                    tpu_chip_per_host(&job.pod.chip));
            tpu_place_json(json, &job.pod, all);
            fprintf(json, ",\n  \"hosts_split_across_nodes\": %d", split);
        }
        free(all);
    }
    /* The wiring. */
    bad = wiring_check(&job, &wall_us, &links);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, job.comm);
    MPI_Allreduce(&links, &total_links, 1, MPI_INT, MPI_SUM, job.comm);
    MPI_Allreduce(&wall_us, &max_wall, 1, MPI_DOUBLE, MPI_MAX, job.comm);
    if (job.chip == 0) {
        fprintf(txt,
                "\nwiring: %d directed links, a %d-byte token over each: %s; modeled %.3f us per "
                "neighbour transfer, measured %.1f us for all of them\n",
                total_links, TOKEN_BYTES, bad ? "WRONG" : "all correct",
                (job.pod.chip.ici_latency + TOKEN_BYTES / (job.pod.chip.ici_bw / 2)) * 1e6,
                max_wall);
    }
    failed |= bad != 0;
    if (json != NULL) {
        fprintf(json,
                ",\n  \"wiring\": {\"links\": %d, \"wrong\": %d, \"measured_us\": %.1f}, "
                "\"collectives\": [",
                total_links, bad, max_wall);
    }
    /* Every collective at a small and a large size. */
    rows[nrows++] = (row_t){"psum", TPU_COLL_PSUM, all_axes, 0};
    rows[nrows++] = (row_t){"all-gather", TPU_COLL_ALL_GATHER, all_axes, 0};
    rows[nrows++] = (row_t){"reduce-scatter", TPU_COLL_REDUCE_SCATTER, all_axes, 0};
    rows[nrows++] = (row_t){"all-to-all", TPU_COLL_ALL_TO_ALL, all_axes, 0};
    rows[nrows++] = (row_t){"ppermute", TPU_COLL_PPERMUTE, t->dims[0] > 1 ? 1u : all_axes, 1};
    if (t->nchips > 1) {
        rows[nrows++] = (row_t){"p2p", TPU_COLL_P2P, 0, 0};
    }
    if (job.chip == 0) {
        fprintf(txt, "\n%-15s %-7s %10s %-18s %12s %12s %8s\n", "collective", "axes", "bytes",
                "algorithm", "modeled_us", "measured_us", "check");
    }
    for (i = 0; i < nrows; i++) {
        for (s = 0; s < 2; s++) {
            tpu_coll_desc_t desc;
            tpu_case_t c;
            uint64_t group = rows[i].kind == TPU_COLL_P2P || rows[i].kind == TPU_COLL_PPERMUTE
                                 ? 1
                                 : (uint64_t)tpu_topo_group_size(t, rows[i].axes);
            double modeled, wall, max_modeled;
            long wrong;
            char axes[32];

            if (rows[i].kind != TPU_COLL_P2P && tpu_topo_group_size(t, rows[i].axes) < 2) {
                continue; /* a single chip has no one to talk to */
            }
            tpu_coll_desc_init(&desc);
            desc.kind = rows[i].kind;
            desc.axes = rows[i].axes;
            desc.shift = 1;
            desc.bytes = group * (s == 0 ? 256 : 256 * 1024);
            if (rows[i].kind == TPU_COLL_PPERMUTE || rows[i].kind == TPU_COLL_P2P) {
                desc.bytes = s == 0 ? 4096 : 4u << 20;
            }
            if (tpu_case_init(&c, &job, &desc, &err) != TPU_OK) {
                tpu_job_abort(&job, err.msg);
            }
            MPI_Barrier(job.comm);
            if (tpu_case_run(&c, &job, call++, 1, timeout, &modeled, &wall, &err) != TPU_OK) {
                tpu_job_abort(&job, err.msg);
            }
            wrong = tpu_case_wrong(&c, job.chip);
            MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, job.comm);
            MPI_Allreduce(MPI_IN_PLACE, &wall, 1, MPI_DOUBLE, MPI_MAX, job.comm);
            MPI_Allreduce(&modeled, &max_modeled, 1, MPI_DOUBLE, MPI_MAX, job.comm);
            failed |= wrong != 0;
            tpu_topo_axes_str(rows[i].kind == TPU_COLL_P2P ? 0 : rows[i].axes, axes, sizeof(axes));
            if (job.chip == 0) {
                fprintf(txt, "%-15s %-7s %10llu %-18s %12.3f %12.1f %8s\n", rows[i].name,
                        axes[0] ? axes : "-", (unsigned long long)desc.bytes,
                        tpu_coll_plan_algo(c.plan), max_modeled, wall * 1e6,
                        wrong ? "WRONG" : "ok");
                if (wrong) {
                    fprintf(txt, "  %ld elements differ from the reference\n", wrong);
                }
                if (json != NULL) {
                    fprintf(json,
                            "%s\n    {\"collective\": \"%s\", \"axes\": \"%s\", \"bytes\": %llu, "
                            "\"algorithm\": \"%s\", \"modeled_us\": %.6f, \"measured_us\": %.1f, "
                            "\"wrong\": %ld}",
                            nrows_out++ ? "," : "", rows[i].name, axes,
                            (unsigned long long)desc.bytes, tpu_coll_plan_algo(c.plan), max_modeled,
                            wall * 1e6, wrong);
                }
            }
            tpu_case_fini(&c);
        }
    }
    if (job.chip == 0) {
        fprintf(txt,
                "\n%s: modeled = the TPU pod's time from the link model; measured = this "
                "emulation's wall time (max over ranks)\n",
                failed ? "FAILED" : "all checks passed");
        fprintf(txt, "train: the sharded training step is not built yet; skipped\n");
        if (json != NULL) {
            fprintf(json, "],\n  \"passed\": %s}\n", failed ? "false" : "true");
            if (close_json) {
                fclose(json);
            }
        }
        fflush(stdout);
    }
    return tpu_job_end(&job, failed ? TPU_EXIT_FAIL : TPU_EXIT_OK);
}
