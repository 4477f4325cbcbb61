/* The wall clock (see clock.h): CLOCK_MONOTONIC in seconds. */
#include "clock.h"

#include <time.h>

double tpu__now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
