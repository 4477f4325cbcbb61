# Host throughput of the emulated MXU matmul against plain cblas_sgemm.  Prints
# figures; never fails on a timing.  Run: bench_matmul [repeats]
add_executable(bench_matmul bench_matmul.c)
target_link_libraries(bench_matmul PRIVATE tpuemu_static tpu_warnings PkgConfig::OPENBLAS)
