/*
 * Where this process runs, before MPI_Init: started by mpirun (or another
 * launcher) or alone, and its rank; and the one line an error prints.  Every
 * "am I under mpirun" question of launch/ goes through here.  Private to launch/.
 */
#ifndef APP_JOBENV_H
#define APP_JOBENV_H

#include <stddef.h>

/* 1 when a launcher started this process as one rank of an MPI job (Open MPI,
 * PMIx or PMI environment); 0 alone. */
int app_jobenv_launched(void);
/* The world rank the launcher gave this process, from its environment; -1 unknown
 * (alone). */
int app_job_env_rank(void);
/* This process's rank among the job's ranks on its node (0: the node's first), from
 * the launcher's environment; -1 unknown. */
int app_jobenv_local_rank(void);
/* How many ranks of the job run on this node, from the launcher's environment; -1
 * unknown. */
int app_jobenv_local_size(void);
/*
 * The files of this node's ranks during start-up, "/tmp/tpuemu-start-JOB" with
 * JOB the launcher's job id, into 'buf'; 0, or -1 with no job id.  Local rank L
 * writes "PREFIX.L" (its pid and world rank) before MPI_Init, and
 * "PREFIX.L.term" when the runtime ends it; the monitor reads them
 * (watch_monitor.c).
 */
int app_jobenv_start_prefix(char *buf, size_t len);
/* 1 on the process that prints before MPI_Init: rank 0, or a process alone. */
int app_jobenv_root(void);
/* Print "tpuemu: msg" on stderr. */
void app_die_msg(const char *msg);

#endif /* APP_JOBENV_H */
