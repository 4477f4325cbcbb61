/* Where this process runs, before MPI_Init (see jobenv.h). */
#include "jobenv.h"

#include <stdio.h>
#include <stdlib.h>

int app_jobenv_launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_SIZE") != NULL ||
           getenv("PMIX_RANK") != NULL;
}

/* The first of the 'n' variables 'vars' that is set, as an integer; -1 none. */
static int env_int(const char *const *vars, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        const char *v = getenv(vars[i]);

        if (v != NULL && *v != '\0') {
            return atoi(v);
        }
    }
    return -1;
}

/* The world rank the launcher gave this process, from its environment; -1 unknown. */
int app_job_env_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};

    return env_int(vars, sizeof(vars) / sizeof(vars[0]));
}

int app_jobenv_local_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                       "PMI_LOCAL_RANK"};

    return env_int(vars, sizeof(vars) / sizeof(vars[0]));
}

int app_jobenv_root(void)
{
    return app_job_env_rank() <= 0;
}

void app_die_msg(const char *msg)
{
    fprintf(stderr, "tpuemu: %s\n", msg);
}
