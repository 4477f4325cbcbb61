/*
 * The default run: print the pod and where each chip runs, prove the wiring with
 * a token over every link, and run every collective at a small and a large size
 * with real data, verified, modeled and measured side by side.
 */
#include "run.h"

#include "alloc.h"
#include "clock.h"
#include "csv.h"
#include "faults.h"
#include "interrupt.h"
#include "job.h"
#include "json.h"
#include "run_train.h"
#include "sink.h"
#include "table.h"
#include "units.h"
#include "watch.h"

#include <stdlib.h>
#include <string.h>

#define TOKEN_BYTES 64

/* Send a token over every link of this chip and check what arrives on each. */
static int wiring_check(app_job_t *job, double *wall_us_p, int *links_p)
{
    const tpu_topo_t *t = tpu_pod_topo(job->pod);
    MPI_Request reqs[4 * TPU_MAX_AXES];
    int send[2 * TPU_MAX_AXES][TOKEN_BYTES / 4], recv[2 * TPU_MAX_AXES][TOKEN_BYTES / 4];
    int nreq = 0, bad = 0, a, d, links = 0, q;
    double t0;

    app_job_barrier(job, "the wiring check");
    t0 = tpu__now_s();
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
    for (q = 0; q < nreq; q++) {
        app_job_wait(job, &reqs[q], "the wiring check's tokens");
    }
    *wall_us_p = (tpu__now_s() - t0) * 1e6;
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
    *links_p = links;
    return bad;
}

typedef struct row {
    const char *name;
    tpu_coll_kind_t kind;
    unsigned axes;
    int shift;
} row_t;

/* The table of verified collectives. */
/* The columns of 'run --csv' (README, "Output: JSON and CSV"): collectives[] of the JSON. */
static const char *const csv_cols[] = {"collective", "axes",        "bytes", "algorithm",
                                       "modeled_us", "measured_us", "wrong"};

static const app_col_t run_cols[] = {
    {"collective", NULL, 15, 1, 0}, {"axes", NULL, 7, 1, 1},        {"bytes", NULL, 10, 0, 1},
    {"algorithm", NULL, 18, 1, 1},  {"modeled_us", NULL, 12, 0, 1}, {"measured_us", NULL, 12, 0, 1},
    {"check", NULL, 8, 0, 1}};

/* Rank 0: the pod, the placement and its warnings as text, and the start of the JSON. */
static void print_pod(const app_opts_t *o, app_job_t *job, FILE *txt, app_json_t *j,
                      const app_place_t *all)
{
    const tpu_topo_t *t = tpu_pod_topo(job->pod);
    const tpu_chip_spec_t *chip = tpu_pod_chip(job->pod);
    int a, i, example = 0, split, over = 0, cores = 0;

    fprintf(txt, "tpuemu: %d chips of %s as %s%s, wrap %s (", t->nchips, chip->name,
            tpu_pod_shape(job->pod), t->slices > 1 ? " slices" : "", tpu_pod_wrap(job->pod));
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
            chip->ici_bw, chip->ici_latency * 1e6, chip->dcn_bw, tpu_chip_per_host(chip));
    app_faults_print(txt, job->pod, "fault: ");
    if (!o->quiet) {
        fprintf(txt, "\n");
        app_place_print(txt, job->pod, all);
    }
    for (i = 0; i < t->nchips; i++) {
        if (all[i].node_cores > 0 && all[i].node_ranks > all[i].node_cores) {
            over = all[i].node_ranks;
            cores = all[i].node_cores;
        }
    }
    if (over) {
        fprintf(txt,
                "warning: %d ranks share %d cores on a node: measured times are dominated by "
                "the host\n",
                over, cores);
    }
    split = app_place_split_hosts(job->pod, all, &example);
    if (split) {
        /* A host's chips in this pod: its block, cut by a smaller topology (4 of a v5e
         * host's 4x2 on a 2x2). */
        int per_host = 1;

        for (a = 0; a < t->naxes; a++) {
            int h = chip->host_dims[a] > 0 ? chip->host_dims[a] : 1;

            per_host *= h < t->dims[a] ? h : t->dims[a];
        }
        fprintf(txt,
                "warning: %d emulated TPU hosts span several MPI nodes (host %d first); fill "
                "nodes with whole hosts of %d ranks\n",
                split, example, per_host);
    }
    if (j != NULL) {
        app_json_document(j, "run");
        app_pod_json_header(j, job->pod);
        app_json_kint(j, "chips_per_host", tpu_chip_per_host(chip));
        app_json_key(j, "placement");
        app_place_json(j, job->pod, all);
        app_json_kint(j, "hosts_split_across_nodes", split);
    }
}

int app_cmd_run(app_ctx_t *ctx)
{
    const app_opts_t *o = ctx->o;
    app_job_t *job = ctx->job;
    tpu_err_t err = {0};
    const tpu_topo_t *t;
    app_place_t *all = NULL;
    double wall_us, max_wall, timeout = o->timeout > 0 ? o->timeout : 60;
    int code, bad, links, total_links, i, s, failed = 0;
    unsigned all_axes;
    uint64_t call = 0;
    row_t rows[8];
    int nrows = 0;
    app_sink_t sink = {NULL, NULL}, csv_sink = {NULL, NULL};
    app_json_t json, *j = NULL;
    app_csv_t csv_w, *csv = NULL;
    FILE *txt = app_sink_text(o->json, o->csv);
    app_report_t rep;
    double t_job, *walls = NULL;

    code = app_job_outputs_open(job, o, "run", &rep, &sink, &csv_sink);
    if (code >= 0) {
        return code;
    }
    if (sink.f != NULL) {
        app_json_init(&json, sink.f);
        j = &json;
    }
    if (csv_sink.f != NULL) {
        app_csv_init(&csv_w, csv_sink.f);
        csv = &csv_w;
        app_csv_pod_header(csv, csv_cols, (int)(sizeof(csv_cols) / sizeof(csv_cols[0])));
    }
    t = tpu_pod_topo(job->pod);
    if (o->trace_measured) {
        walls = tpu__calloc(2 * (size_t)t->nchips, sizeof(double));
        if (walls == NULL) {
            app_job_abort(job, "out of host memory for the measured trace");
        }
    }
    app_job_barrier(job, "the start of the run");
    t_job = tpu__now_s();
    all_axes = (1u << t->naxes) - 1;
    if (t->slices > 1) {
        all_axes |= TPU_AXIS_MASK_DCN;
    }
    /* The pod and the placement. */
    if (job->chip == 0) {
        all = tpu__malloc((size_t)t->nchips * sizeof(*all));
        if (all == NULL) {
            app_job_abort(job, "out of host memory for the placement table");
        }
    }
    app_job_gather(job, &job->place, (int)sizeof(job->place), all, 0, "the placement table");
    if (job->chip == 0) {
        print_pod(o, job, txt, j, all);
        tpu__free(all);
    }
    /* The wiring. */
    bad = wiring_check(job, &wall_us, &links);
    app_job_allreduce(job, MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, "the wiring check");
    app_job_allreduce(job, &links, &total_links, 1, MPI_INT, MPI_SUM,
                      "the results of a verified collective");
    app_job_allreduce(job, &wall_us, &max_wall, 1, MPI_DOUBLE, MPI_MAX,
                      "the results of a verified collective");
    if (job->chip == 0) {
        fprintf(txt,
                "\nwiring: %d directed links, a %d-byte token over each: %s; modeled %.3f us per "
                "neighbour transfer, measured %.1f us for all of them\n",
                total_links, TOKEN_BYTES, bad ? "WRONG" : "all correct",
                (tpu_pod_chip(job->pod)->ici_latency +
                 TOKEN_BYTES / (tpu_pod_chip(job->pod)->ici_bw / 2)) *
                    1e6,
                max_wall);
    }
    failed |= bad != 0;
    if (j != NULL) {
        app_json_kobject(j, "wiring");
        app_json_kint(j, "links", total_links);
        app_json_kint(j, "wrong", bad);
        app_json_kfixed(j, "measured_us", max_wall, 1);
        app_json_object_end(j);
        app_json_karray(j, "collectives");
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
    if (job->chip == 0) {
        fprintf(txt, "\n");
        app_table_header(txt, "", run_cols, 7);
    }
    for (i = 0; i < nrows; i++) {
        for (s = 0; s < 2; s++) {
            tpu_coll_desc_t desc;
            app_case_t c;
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
            if (app_case_init(&c, job, &desc, &err) != TPU_OK) {
                app_job_abort(job, err.msg);
            }
            {
                char item[64]; /* what an interrupt's line names */

                snprintf(item, sizeof(item), "%s %s", rows[i].name, s == 0 ? "small" : "large");
                app_interrupt_at((long)(2 * i + s), (long)(2 * nrows), item);
            }
            app_job_barrier(job, "the barrier around a verified collective");
            if (walls != NULL) {
                walls[0] = (tpu__now_s() - t_job) * 1e6;
            }
            if (app_case_run(&c, job, call++, 1, timeout, &modeled, &wall, &err) != TPU_OK) {
                app_job_fail(job, &err);
            }
            if (walls != NULL) {
                /* Every rank's wall-clock call, to rank 0, for --trace-measured (with the
                 * watchdog: a rank that never comes ends the job, naming it). */
                double mine[2] = {walls[0], wall * 1e6};

                app_job_gather(job, mine, (int)sizeof(mine), walls, 0,
                               "the gather of the measured calls");
            }
            wrong = app_case_wrong(&c, job->chip);
            app_job_allreduce(job, MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM,
                              "the results of a verified collective");
            app_job_allreduce(job, MPI_IN_PLACE, &wall, 1, MPI_DOUBLE, MPI_MAX,
                              "the results of a verified collective");
            app_job_allreduce(job, &modeled, &max_modeled, 1, MPI_DOUBLE, MPI_MAX,
                              "the results of a verified collective");
            failed |= wrong != 0;
            tpu_topo_axes_str(rows[i].kind == TPU_COLL_P2P ? 0 : rows[i].axes, axes, sizeof(axes));
            if (job->chip == 0) {
                char bytes[24], mod[24], meas[24];
                const char *cells[7];

                snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)desc.bytes);
                snprintf(mod, sizeof(mod), "%.3f", max_modeled);
                snprintf(meas, sizeof(meas), "%.1f", wall * 1e6);
                cells[0] = rows[i].name;
                cells[1] = axes[0] ? axes : "-";
                cells[2] = bytes;
                cells[3] = tpu_coll_plan_algo(c.plan);
                cells[4] = mod;
                cells[5] = meas;
                cells[6] = wrong ? "WRONG" : "ok";
                app_table_row(txt, "", run_cols, 7, cells);
                if (app_report_active(&rep)) {
                    char size[32], name[96];
                    int r;

                    app_report_size((unsigned long long)desc.bytes, size, sizeof(size));
                    snprintf(name, sizeof(name), "%s %s", rows[i].name, size);
                    if (app_report_model(&rep, c.plan, name, max_modeled, &err) != TPU_OK) {
                        app_job_abort(job, err.msg);
                    }
                    for (r = 0; walls != NULL && r < t->nchips; r++) {
                        app_report_measured(&rep, r, name, walls[2 * r], walls[2 * r + 1]);
                    }
                }
                if (wrong) {
                    fprintf(txt, "  %ld elements differ from the reference\n", wrong);
                }
                if (j != NULL) {
                    app_json_object(j);
                    app_json_kstr(j, "collective", rows[i].name);
                    app_json_kstr(j, "axes", axes);
                    app_json_kuint(j, "bytes", (unsigned long long)desc.bytes);
                    app_json_kstr(j, "algorithm", tpu_coll_plan_algo(c.plan));
                    app_json_kfixed(j, "modeled_us", max_modeled, 6);
                    app_json_kfixed(j, "measured_us", wall * 1e6, 1);
                    app_json_kint(j, "wrong", wrong);
                    app_json_object_end(j);
                }
                if (csv != NULL) {
                    app_csv_pod(csv, job->pod);
                    app_csv_str(csv, rows[i].name);
                    app_csv_str(csv, axes);
                    app_csv_uint(csv, (unsigned long long)desc.bytes);
                    app_csv_str(csv, tpu_coll_plan_algo(c.plan));
                    app_csv_fixed(csv, max_modeled, 6);
                    app_csv_fixed(csv, wall * 1e6, 1);
                    app_csv_int(csv, wrong);
                    app_csv_end_row(csv);
                }
            }
            app_case_fini(&c);
        }
    }
    if (j != NULL) {
        app_json_array_end(j);
    }
    /* One training step of the MLP, sharded data x model, checked against one chip. */
    failed |= app_train_default_step(job, txt, j) != 0;
    if (job->chip == 0) {
        fprintf(txt,
                "\n%s: modeled = the TPU pod's time from the link model; measured = this "
                "emulation's wall time (max over ranks)\n",
                failed ? "FAILED" : "all checks passed");
        if (j != NULL) {
            app_json_kbool(j, "passed", !failed);
            app_json_object_end(j);
        }
        fflush(txt);
    }
    tpu__free(walls);
    code = app_job_outputs_close(job, j, &sink, &csv_sink, &rep);
    return app_job_end(job, code >= 0 ? code : failed ? APP_EXIT_FAIL : APP_EXIT_OK);
}
