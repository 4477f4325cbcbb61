/*
 * "tpuemu model --op ...": the roofline and pipelined time of one chip op.
 * Private to launch/.
 */
#ifndef TPU_LAUNCH_CMD_OP_H
#define TPU_LAUNCH_CMD_OP_H

/*
 * Run "tpuemu model --op OP ..." on the arguments after "tpuemu model"
 * ('argv[0]' is the first of them, e.g. "--op"; a leading "model" is skipped).
 * Prints a table (or, with --json FILE|-, one JSON object) on stdout; on bad
 * input prints one line "tpuemu: ..." on stderr.
 * @return 0 on success, 2 on bad input, 1 on any other failure.
 */
int tpu__cmd_model_op(int argc, char **argv);

#endif /* TPU_LAUNCH_CMD_OP_H */
