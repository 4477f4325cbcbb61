# The chip model's tests (issue 7): bf16 rounding, HBM (with the OOM loop), the
# VMEM executor, MXU matmul, VPU ops, the roofline table, 'tpuemu model --op'.
tpu_add_unit_test(test_chip_bf16)
tpu_add_unit_test(test_chip_hbm)
target_link_libraries(test_chip_hbm PRIVATE tpu_test_support)
tpu_add_unit_test(test_chip_vmem)
target_link_libraries(test_chip_vmem PRIVATE tpu_test_support)
tpu_add_unit_test(test_chip_matmul)
target_link_libraries(test_chip_matmul PRIVATE tpu_test_support)
tpu_add_unit_test(test_chip_vpu)
target_link_libraries(test_chip_vpu PRIVATE tpu_test_support)
tpu_add_unit_test(test_chip_roofline)
target_compile_definitions(test_chip_roofline PRIVATE TPU_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# The command runs inside the test: launch/cmd_op.c uses only libc and the library.
tpu_add_unit_test(test_chip_cmd_op SOURCES ${PROJECT_SOURCE_DIR}/launch/cmd_op.c)
target_include_directories(test_chip_cmd_op PRIVATE ${PROJECT_SOURCE_DIR}/launch)
