/*
 * The program's start-up, one sequence for every command: find the command in
 * the table (commands.def), parse its flags from its rows, check them, refuse
 * bad input with one line (on every rank of a job), print the help, start the
 * job and have its ranks agree, or build the pod of a command that runs alone,
 * then run the command's function.
 */
#include "cli.h"

#include "commands.h"
#include "help.h"
#include "interrupt.h"
#include "job.h"
#include "jobenv.h"
#include "launch.h"
#include "podsetup.h"
#include "watch_agree.h"

#include <stdlib.h>
#include <string.h>
#include <tpuemu_version.h>

/* The checks every command's flags get without the pod: output targets (none on an input or
 * on another output), --inject, --fault. */
static tpu_status_t check_shared(const app_opts_t *o, tpu_err_t *err)
{
    const app_sink_path_t outs[] = {
        {"json", o->json}, {"csv", o->csv}, {"trace", o->trace}, {"heatmap", o->heatmap}};
    const app_sink_path_t ins[] = {{"--config", o->config},
                                   {"the module", o->module_path},
                                   {"--data", o->data},
                                   {"--labels", o->labels},
                                   {"--compare", o->compare}};
    int i;

    if (app_sink_check_target("json", o->json, err) != TPU_OK ||
        app_sink_check_target("csv", o->csv, err) != TPU_OK ||
        app_sink_check_target("trace", o->trace, err) != TPU_OK ||
        app_sink_check_target("heatmap", o->heatmap, err) != TPU_OK ||
        app_sink_check_paths(outs, 4, ins, 5, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    /* 0 turns these off; between 0 and commands.def's MIN_BW the model's quotients overflow. */
    {
        const char *names[] = {"pcie-bw", "nic-bw", "reduce-bw"};
        const double vals[] = {o->pcie_bw, o->nic_bw, o->reduce_bw};

        for (i = 0; i < 3; i++) {
            if (vals[i] > 0 && vals[i] < 1e3) {
                return tpu_err_set(err, TPU_ERR_INVALID,
                                   "--%s must be 0 (not modeled) or 1e3 to 1e15 bytes/s, got %g",
                                   names[i], vals[i]);
            }
        }
    }
    if (o->inject != NULL) {
        int chip = -1, n = -1;
        long call = -1;
        char ikind[8] = "";

        if (sscanf(o->inject, "%5[a-z]:chip=%d,call=%ld%n", ikind, &chip, &call, &n) != 3 ||
            n != (int)strlen(o->inject) || chip < 0 || call < 0 ||
            (strcmp(ikind, "crash") != 0 && strcmp(ikind, "stop") != 0)) {
            return tpu_err_set(err, TPU_ERR_INVALID,
                               "--inject '%s': expected crash:chip=C,call=N (chip C dies at its "
                               "collective call N, counted from 0) or stop:chip=C,call=N (it "
                               "stops there, as with SIGSTOP)",
                               o->inject);
        }
    }
    for (i = 0; i < o->nfault; i++) {
        tpu_fault_t f;
        tpu_err_t e = {0};

        if (tpu_fault_parse(o->fault[i], &f, &e) != TPU_OK) {
            return tpu_err_set(err, TPU_ERR_INVALID, "--%s", e.msg);
        }
    }
    return TPU_OK;
}

/* "unknown command", with the nearest command when one is near. */
static tpu_status_t unknown_command(const char *name, tpu_err_t *err)
{
    const char *words[32];
    char list[256];
    size_t used = 0;
    int i, n = 0;

    list[0] = '\0';
    for (i = 0; i < app_ncommands && n < 32; i++) {
        if (strchr(app_commands[i].name, ' ') == NULL) {
            words[n++] = app_commands[i].name;
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", n > 1 ? ", " : "",
                                     app_commands[i].name);
        }
    }
    if (app_opt_nearest(name, words, n) != NULL) {
        return tpu_err_set(err, TPU_ERR_INVALID,
                           "unknown command '%s' (commands: %s); did you mean '%s'?", name, list,
                           app_opt_nearest(name, words, n));
    }
    return tpu_err_set(err, TPU_ERR_INVALID, "unknown command '%s' (commands: %s)", name, list);
}

/* The mode 'cmd' becomes when argv[from..] holds a flag only the mode's row takes. */
static const app_cmd_t *pick_mode(const app_cmd_t *cmd, int argc, char **argv, int from)
{
    const app_cmd_t *mode = cmd->mode != NULL ? app_commands_find(cmd->mode) : NULL;
    app_opt_set_t sets[APP_G_COUNT + 1];
    int nsets, i, k, s, j;

    if (mode == NULL) {
        return cmd;
    }
    nsets = app_commands_sets(cmd, sets);
    for (k = 0; k < mode->own.n; k++) {
        const char *name = mode->own.rows[k].name;
        size_t len = strlen(name);
        int theirs = 0;

        for (s = 0; s < nsets && !theirs; s++) {
            for (j = 0; j < sets[s].n; j++) {
                theirs |= strcmp(sets[s].rows[j].name, name) == 0;
            }
        }
        for (i = from; i < argc && !theirs; i++) {
            if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, len) == 0 &&
                (argv[i][2 + len] == '\0' || argv[i][2 + len] == '=')) {
                return mode;
            }
        }
    }
    return cmd;
}

/* Does argv hold '--flag' (the row's 'solo' flag)? */
static int has_flag(int argc, char **argv, const char *flag)
{
    int i;

    for (i = 1; i < argc && flag != NULL; i++) {
        if (strncmp(argv[i], "--", 2) == 0 && strcmp(argv[i] + 2, flag) == 0) {
            return 1;
        }
    }
    return 0;
}

/*
 * Halves of an MPI job started with different values of the command's own flags
 * would make different calls and wait for each other forever: compare the rows
 * flagged APP_OPT_AGREE (and the operand).  0 when they agree; else the rank that
 * prints has printed.
 */
static int agree_own(const app_cmd_t *cmd, const app_opts_t *o)
{
    const char *names[64], *vals[64];
    char bufs[64][128], *joined[64] = {NULL}, msg[TPU_ERR_MSG_LEN];
    char flag[64][40];
    int n = 0, k, who;

    if (cmd->operand.arg != NULL) {
        snprintf(flag[n], sizeof(flag[n]), "the %s", cmd->operand.what);
        names[n] = flag[n];
        vals[n] = *(const char *const *)(const void *)((const char *)o + cmd->operand.off);
        n++;
    }
    for (k = 0; k < cmd->own.n && n < 64; k++) {
        const app_opt_t *r = &cmd->own.rows[k];

        if ((r->flags & APP_OPT_AGREE) == 0) {
            continue;
        }
        snprintf(flag[n], sizeof(flag[n]), "--%s", r->name);
        names[n] = flag[n];
        if (r->type == APP_OPT_LIST || r->type == APP_OPT_KV) {
            joined[n] = malloc(8192);
            vals[n] = joined[n] != NULL ? app_opt_value(r, o, joined[n], 8192) : "";
        } else {
            vals[n] = app_opt_value(r, o, bufs[n], sizeof(bufs[n]));
        }
        n++;
    }
    who = app_job_agree_values(n, names, vals, msg, sizeof(msg));
    if (who == 1) {
        app_die_msg(msg);
    }
    for (k = 0; k < n; k++) {
        free(joined[k]);
    }
    return who;
}

/* Bad input: one line, exit 2; under a job, from one rank and on every rank. */
static int refuse(const app_cmd_t *cmd, const char *msg, int *argc, char ***argv)
{
    if (app_jobenv_launched()) {
        if (cmd == NULL || cmd->job == APP_JOB_ALWAYS ||
            (cmd->job == APP_JOB_LAUNCHED && !has_flag(*argc, *argv, cmd->solo))) {
            /* Meet the ranks that parsed theirs (app_job_start) and end with them. */
            return app_job_refuse(msg, argc, argv);
        }
        if (!app_jobenv_root()) {
            return APP_EXIT_USAGE;
        }
    }
    app_die_msg(msg);
    return APP_EXIT_USAGE;
}

/* Free the options (what the rows' values own, then the struct). */
static void free_opts(const app_cmd_t *cmd, app_opts_t *o)
{
    app_opt_set_t sets[APP_G_COUNT + 1];

    app_opt_free(sets, app_commands_sets(cmd, sets), o);
    free(o);
}

/* Parse and check the flags of 'cmd' into 'o'. */
static tpu_status_t parse(const app_cmd_t *cmd, const app_cmd_t *base, int argc, char **argv,
                          int from, app_opts_t *o, tpu_err_t *err)
{
    app_opt_set_t sets[APP_G_COUNT + 1], shared;
    int nsets = app_commands_sets(cmd, sets), g;
    char hint[64];

    memset(o, 0, sizeof(*o));
    o->cmd = base->name;
    o->op_mode = cmd != base;
    /* Every shared number not given reads "not given" (-1), also for a command that does
     * not take it (the pod setup reads them all); then the command's defaults. */
    for (g = 0; g < APP_G_COUNT; g++) {
        shared = app_commands_shared(1u << g);
        app_opt_defaults(&shared, 1, o);
    }
    app_opt_defaults(sets, nsets, o);
    snprintf(hint, sizeof(hint), "%s%s", cmd->name, cmd != base ? " matmul" : "");
    if (app_opt_parse(argc, argv, from, sets, nsets, &cmd->operand, cmd->name, hint, o, err) !=
        TPU_OK) {
        return TPU_ERR_INVALID;
    }
    if (o->help) {
        return TPU_OK;
    }
    if (check_shared(o, err) != TPU_OK) {
        return TPU_ERR_INVALID;
    }
    return cmd->check != NULL ? cmd->check(o, err) : TPU_OK;
}

int app_main(int argc, char **argv)
{
    const app_cmd_t *base, *cmd;
    app_opts_t *o;
    tpu_err_t err = {0};
    app_job_t job;
    app_ctx_t ctx;
    tpu_pod_t *pod = NULL;
    int from = 1, code;

    app_interrupt_install();
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("tpuemu %s\n", TPUEMU_VERSION);
        return APP_EXIT_OK;
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        app_help_commands(stdout);
        return APP_EXIT_OK;
    }
    base = app_commands_find("run"); /* the default command */
    if (argc > 1 && argv[1][0] != '-') {
        base = app_commands_find(argv[1]);
        if (base == NULL) {
            unknown_command(argv[1], &err);
            return refuse(NULL, err.msg, &argc, &argv);
        }
        from = 2;
    }
    cmd = pick_mode(base, argc, argv, from);
    o = calloc(1, sizeof(*o));
    if (o == NULL) {
        return refuse(cmd, "out of host memory for the command line", &argc, &argv);
    }
    if (parse(cmd, base, argc, argv, from, o, &err) != TPU_OK) {
        free_opts(cmd, o);
        return refuse(cmd, err.msg, &argc, &argv);
    }
    if (o->help || cmd->run == NULL) {
        /* --help, or 'tpuemu help [COMMAND]'. */
        const app_cmd_t *topic = o->topic != NULL ? app_commands_find(o->topic) : cmd;

        if (topic == NULL) {
            unknown_command(o->topic, &err);
            free_opts(cmd, o);
            return refuse(cmd, err.msg, &argc, &argv);
        }
        if (topic->run == NULL && o->topic == NULL && !o->help) {
            app_help_commands(stdout);
        } else {
            app_help_command(stdout, topic);
        }
        free_opts(cmd, o);
        return APP_EXIT_OK;
    }
    memset(&ctx, 0, sizeof(ctx));
    ctx.o = o;
    ctx.argc = &argc;
    ctx.argv = &argv;
    if (cmd->job == APP_JOB_ALWAYS || (cmd->job == APP_JOB_LAUNCHED && app_jobenv_launched() &&
                                       !has_flag(argc, argv, cmd->solo))) {
        /* MPI_Init, the ranks agree on the shared options, the pod, the chip of this rank. */
        code = app_job_start(o, &argc, &argv, &job);
        if (code >= 0) {
            free_opts(cmd, o);
            return code;
        }
        if (cmd->agree == APP_AGREE_OWN_TOO && agree_own(cmd, o) != 0) {
            free_opts(cmd, o);
            return app_job_end(&job, APP_EXIT_USAGE);
        }
        ctx.job = &job;
        ctx.pod = job.pod;
    } else if (cmd->pod == APP_POD_START) {
        if (app_pod_setup(o, &pod, &err) != TPU_OK) {
            free_opts(cmd, o);
            if (app_jobenv_root()) {
                app_die_msg(err.msg);
            }
            return APP_EXIT_USAGE;
        }
        ctx.pod = pod;
    }
    code = cmd->run(&ctx);
    tpu_pod_destroy(pod);
    free_opts(cmd, o);
    return code;
}
