/*
 * The start-up agreements of an MPI job (the watchdog is watch.c's).
 *
 * Agreements.  A bad input found by some ranks only (a config file missing on
 * one node, halves of a job with different flags) would leave the others in the
 * next collective forever.  app_job_agree() reduces the lowest failing rank,
 * which alone prints; app_job_agree_opts() compares a hash of every option that
 * changes the sequence of calls and names the first that differs with both values.
 */
#include "watch_agree.h"

#include "alloc.h"
#include "commands.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int app_job_agree(MPI_Comm comm, int failed)
{
    int me, lowest;

    MPI_Comm_rank(comm, &me);
    lowest = failed ? me : INT32_MAX;
    MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, comm);
    return lowest == INT32_MAX ? -1 : lowest;
}

/* FNV-1a of a string (NULL hashes as unset). */
static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    if (s == NULL) {
        return 7;
    }
    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

int app_job_agree_values(int n, const char *const *names, const char *const *vals, char *msg,
                         size_t len)
{
    uint64_t *mine = tpu__calloc((size_t)n + 1, sizeof(uint64_t)), *first;
    int i, me, diff = -1, who;
    char theirs[64];

    first = tpu__calloc((size_t)n + 1, sizeof(uint64_t));
    if (mine == NULL || first == NULL) {
        tpu__free(mine);
        tpu__free(first);
        snprintf(msg, len, "out of host memory comparing the options of the ranks");
        return 1;
    }
    for (i = 0; i < n; i++) {
        mine[i] = hash_str(vals[i]);
        first[i] = mine[i];
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Bcast(first, n, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    for (i = 0; i < n && diff < 0; i++) {
        if (first[i] != mine[i]) {
            diff = i;
        }
    }
    tpu__free(mine);
    tpu__free(first);
    who = app_job_agree(MPI_COMM_WORLD, diff >= 0);
    if (who < 0) {
        return 0;
    }
    MPI_Bcast(&diff, 1, MPI_INT, who, MPI_COMM_WORLD);
    snprintf(theirs, sizeof(theirs), "%s", vals[diff] != NULL ? vals[diff] : "(not given)");
    MPI_Bcast(theirs, (int)sizeof(theirs), MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(msg, len,
             "the ranks of this job were started with different options: %s is '%s' on rank 0 "
             "but '%.63s' on rank %d (every rank needs the same command line)",
             names[diff], theirs, vals[diff] != NULL ? vals[diff] : "(not given)", who);
    return who == me ? 1 : 2;
}

/*
 * Then every other row the command takes (its own and the shared groups), by its
 * value as parsed: halves started with different flags are told which flag and
 * both values, not the consequence (another algorithm, another pod).
 */
static void add_rows(const app_opts_t *o, const char *names[], char vals[][64], int *n_p)
{
    const app_cmd_t *cmd = app_commands_find(o->cmd);
    app_opt_set_t sets[APP_G_COUNT + 1];
    static char flags[APP_JOB_NOPTS][40];
    char *buf = tpu__malloc(8192);
    int ns, s, k, j, n = *n_p;

    if (cmd == NULL || buf == NULL) {
        tpu__free(buf);
        return;
    }
    ns = app_commands_sets(cmd, sets);
    for (s = 0; s < ns; s++) {
        for (k = 0; k < sets[s].n && n < APP_JOB_NOPTS; k++) {
            const app_opt_t *r = &sets[s].rows[k];
            const char *v;

            snprintf(flags[n], sizeof(flags[n]), "--%s", r->name);
            for (j = 0; j < n && strcmp(names[j], flags[n]) != 0; j++) {
            }
            if (j < n || strcmp(r->name, "help") == 0) {
                continue;
            }
            v = app_opt_value(r, o, buf, 8192);
            names[n] = flags[n];
            if (v == NULL) {
                v = "(not given)";
            }
            if (strlen(v) < 64) {
                snprintf(vals[n], 64, "%s", v);
            } else {
                snprintf(vals[n], 64, "%.30s... (hash %016llx)", v,
                         (unsigned long long)hash_str(v));
            }
            n++;
        }
    }
    tpu__free(buf);
    *n_p = n;
}

int app_job_agree_opts(const app_opts_t *o, char *msg, size_t len)
{
    /* Every option that changes the sequence of MPI calls or their sizes. */
    char vals[APP_JOB_NOPTS][64];
    const char *names[APP_JOB_NOPTS], *pv[APP_JOB_NOPTS];
    int n = 0, i;

#define OPT_S(name, v) (names[n] = name, snprintf(vals[n++], 64, "%s", (v) ? (v) : "(not given)"))
#define OPT_I(name, v) (names[n] = name, snprintf(vals[n++], 64, "%d", (int)(v)))
#define OPT_D(name, v) (names[n] = name, snprintf(vals[n++], 64, "%.17g", (double)(v)))
    OPT_S("command", o->cmd);
    OPT_I("--iters", o->iters);
    OPT_I("--warmup", o->warmup);
    OPT_I("--compare-mpi", o->compare_mpi);
    OPT_S("--collective", o->collective);
    OPT_S("--axes", o->axes);
    OPT_S("--dtype", o->dtype);
    OPT_S("--min-bytes", o->min_bytes);
    OPT_S("--max-bytes", o->max_bytes);
    OPT_D("--factor", o->factor);
    OPT_S("--chip", o->chip);
    OPT_S("--topology", o->topology);
    OPT_S("--wrap", o->wrap);
    OPT_I("--slices", o->slices);
    OPT_S("--config", o->config);
    OPT_S("--json", o->json);
    OPT_S("--csv", o->csv);
    OPT_D("--timeout", o->timeout);
    OPT_S("--inject", o->inject);
    OPT_S("--mesh", o->mesh);
    OPT_S("--trace", o->trace);
    OPT_S("--heatmap", o->heatmap);
    OPT_I("--trace-measured", o->trace_measured);
    {
        /* Every --fault, in order, as one value (a count and a hash of the texts). */
        uint64_t h = 1469598103934665603ull;
        int k;

        for (k = 0; k < o->nfault; k++) {
            h = h * 31 + hash_str(o->fault[k]);
        }
        names[n] = "--fault";
        snprintf(vals[n++], 64, "%d given (hash %016llx)", o->nfault, (unsigned long long)h);
    }
#undef OPT_S
#undef OPT_I
#undef OPT_D
    add_rows(o, names, vals, &n);
    for (i = 0; i < n; i++) {
        pv[i] = vals[i];
    }
    return app_job_agree_values(n, names, pv, msg, len);
}
