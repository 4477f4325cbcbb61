/*
 * The program's entry (cli.c): find the command in the table, parse its options,
 * start it (one process or a job), run it.  main.c calls it; tests call it in
 * process.  Private to launch/.
 */
#ifndef APP_CLI_H
#define APP_CLI_H

/* The program: find the command, parse, start, run it; returns the exit code. */
int app_main(int argc, char **argv);

#endif /* APP_CLI_H */
