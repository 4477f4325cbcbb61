/*
 * The help of the program and of each command, generated from the command
 * table's rows (commands.def): usage, summary, the command's own flags and the
 * shared ones it takes, with their defaults and accepted values, and two
 * examples.  Private to launch/.
 */
#ifndef APP_HELP_H
#define APP_HELP_H

#include "commands.h"

#include <stdio.h>

/* 'tpuemu --help' and 'tpuemu help': the commands with their summaries. */
void app_help_commands(FILE *out);
/* 'tpuemu CMD --help' and 'tpuemu help CMD'. */
void app_help_command(FILE *out, const app_cmd_t *cmd);

#endif /* APP_HELP_H */
