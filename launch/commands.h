/*
 * The command table: one row per command (commands.def), read by the start-up
 * (cli.c) and by the help (help.c).  A row names the command, says what it does
 * in a line, lists its own flags as typed rows and the groups of shared flags it
 * takes, says whether it runs as an MPI job and how the ranks agree, and names
 * the function that runs it.  Private to launch/.
 */
#ifndef APP_COMMANDS_H
#define APP_COMMANDS_H

#include "launch.h"
#include "opt.h"

/* Groups of the shared flags (one row set each, written once in commands.def). */
enum {
    APP_G_HELP = 1u << 0,     /* --help (every command) */
    APP_G_CHIP = 1u << 1,     /* --chip */
    APP_G_POD = 1u << 2,      /* --topology --wrap --slices --config, the link constants */
    APP_G_HOST = 1u << 3,     /* --msg-cost-us --pcie-bw --nic-bw --reduce-bw --calibrated */
    APP_G_FAULT = 1u << 4,    /* --fault */
    APP_G_COLL = 1u << 5,     /* the collective: --collective --axes --algo ... (model, bench) */
    APP_G_JSON = 1u << 6,     /* --json */
    APP_G_CSV = 1u << 7,      /* --csv */
    APP_G_REPORT = 1u << 8,   /* --trace --heatmap */
    APP_G_MEASURED = 1u << 9, /* --trace-measured */
    APP_G_QUIET = 1u << 10,   /* --quiet */
    APP_G_WATCH = 1u << 11,   /* --timeout */
    APP_G_INJECT = 1u << 12,  /* --inject */
    APP_G_COUNT = 13
};

/* Whether a command runs as an MPI job (one chip per rank). */
typedef enum app_job_mode {
    APP_JOB_NONE,    /* one process, under mpirun or not */
    APP_JOB_ALWAYS,  /* always a job (alone: a job of one rank) */
    APP_JOB_LAUNCHED /* a job when a launcher started it (unless the row's 'solo' flag) */
} app_job_mode_t;

/* How the ranks of a job agree on the command line before they run. */
typedef enum app_agree {
    APP_AGREE_NONE,   /* no job: nothing to agree on */
    APP_AGREE_SHARED, /* the job's start compares the options that change the calls */
    APP_AGREE_OWN_TOO /* and the command's own rows flagged APP_OPT_AGREE, and the operand */
} app_agree_t;

/* Who builds the pod of a command that runs alone. */
typedef enum app_pod_mode {
    APP_POD_NONE, /* none, or the command builds it when it needs one (info, replay) */
    APP_POD_START /* the start-up, before the runner */
} app_pod_mode_t;

typedef struct app_cmd {
    const char *name;     /* "model"; "model --op" for model's op mode */
    const char *summary;  /* one line */
    const char *synopsis; /* what follows "tpuemu NAME" on the usage line */
    const char *about;    /* a paragraph for --help */
    app_opt_set_t own;    /* its own flags */
    unsigned shared;      /* the groups of shared flags it takes (APP_G_*) */
    app_operand_t operand;
    app_job_mode_t job;
    const char *solo; /* APP_JOB_LAUNCHED: the flag that keeps a launched process alone */
    app_agree_t agree;
    app_pod_mode_t pod;
    /* Checks of the parsed flags that need no pod (NULL: none). */
    tpu_status_t (*check)(const app_opts_t *o, tpu_err_t *err);
    /* The runner; NULL: the help command (prints the help of its operand). */
    int (*run)(app_ctx_t *ctx);
    const char *examples[2];
    const char *mode; /* the row this command becomes when argv holds one of its flags */
} app_cmd_t;

/* The table, in the order the help lists it. */
extern const app_cmd_t app_commands[];
extern const int app_ncommands;

/* The row named 'name' (argv[1]), or NULL. */
const app_cmd_t *app_commands_find(const char *name);
/* The rows of shared group 'group' (one bit of APP_G_*). */
app_opt_set_t app_commands_shared(unsigned group);
/* The row sets of 'cmd': its own, then each shared group it takes; returns the count. */
int app_commands_sets(const app_cmd_t *cmd, app_opt_set_t sets[APP_G_COUNT + 1]);

#endif /* APP_COMMANDS_H */
