/* Where this process runs, before MPI_Init (see jobenv.h). */
#include "jobenv.h"

#include <stdio.h>
#include <stdlib.h>

int app_jobenv_launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMI_SIZE") != NULL ||
           getenv("PMIX_RANK") != NULL;
}

/* The world rank the launcher gave this process, from its environment; -1 unknown. */
int app_job_env_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    size_t i;

    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);

        if (v != NULL && *v != '\0') {
            return atoi(v);
        }
    }
    return -1;
}

int app_jobenv_root(void)
{
    return app_job_env_rank() <= 0;
}

void app_die_msg(const char *msg)
{
    fprintf(stderr, "tpuemu: %s\n", msg);
}
