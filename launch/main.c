/* tpuemu: a TPU pod on an MPI cluster.  The program is tpu_main() (cli.c). */
#include "launch.h"

int main(int argc, char **argv)
{
    return tpu_main(argc, argv);
}
