/*
 * tpuemu: a TPU pod on an MPI cluster.  The entry point dispatches to the
 * subcommands; only launch/ prints and picks exit codes.
 */
#include "cmd_op.h"
#include "launch.h"

#include <string.h>

/* Is this 'tpuemu model --op ...' (the chip model's roofline)? */
static int is_model_op(int argc, char **argv)
{
    int i;

    if (argc < 2 || strcmp(argv[1], "model") != 0) {
        return 0;
    }
    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--op") == 0 || strncmp(argv[i], "--op=", 5) == 0) {
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    tpu_opts_t opts;
    tpu_err_t err = {0};

    if (argc >= 2 && strcmp(argv[1], "replay") == 0) {
        return tpu_cmd_replay(argc - 2, argv + 2);
    }
    if (is_model_op(argc, argv)) {
        return tpu__cmd_model_op(argc - 2, argv + 2);
    }
    if (tpu_opts_parse(argc, argv, &opts, &err) != TPU_OK) {
        tpu_die_msg(err.msg);
        return TPU_EXIT_USAGE;
    }
    if (opts.help) {
        tpu_usage(stdout, opts.cmd);
        return TPU_EXIT_OK;
    }
    if (strcmp(opts.cmd, "info") == 0) {
        return tpu_cmd_info(&opts);
    }
    if (strcmp(opts.cmd, "model") == 0) {
        return tpu_cmd_model(&opts);
    }
    if (strcmp(opts.cmd, "train") == 0) {
        tpu_die_msg("train: the sharded training workloads (SPMD layer) are not built yet");
        return TPU_EXIT_FAIL;
    }
    if (strcmp(opts.cmd, "bench") == 0) {
        return tpu_cmd_bench(&opts, argc, argv);
    }
    return tpu_cmd_run(&opts, argc, argv);
}
