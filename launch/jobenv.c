/* Where this process runs, before MPI_Init (see jobenv.h). */
#include "jobenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int app_jobenv_local_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                       "PMI_LOCAL_SIZE"};

    return env_int(vars, sizeof(vars) / sizeof(vars[0]));
}

int app_jobenv_start_prefix(char *buf, size_t len)
{
    static const char *const vars[] = {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"};
    const char *id = NULL, *dir;
    size_t i;

    for (i = 0; i < sizeof(vars) / sizeof(vars[0]) && id == NULL; i++) {
        id = getenv(vars[i]);
    }
    /* (a job id that is not a plain word is not used in a path) */
    if (id == NULL || *id == '\0' || strlen(id) > 64 || strpbrk(id, "/ .") != NULL) {
        return -1;
    }
    /* TMPDIR as the job's ranks and monitor see it (one node shares it), else /tmp. */
    dir = getenv("TMPDIR");
    if (dir == NULL || dir[0] != '/' || strlen(dir) > 100) {
        dir = "/tmp";
    }
    snprintf(buf, len, "%s/tpuemu-start-%s", dir, id);
    return 0;
}

int app_jobenv_root(void)
{
    return app_job_env_rank() <= 0;
}

void app_die_msg(const char *msg)
{
    fprintf(stderr, "tpuemu: %s\n", msg);
}
