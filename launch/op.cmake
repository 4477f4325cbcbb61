# 'tpuemu model --op ...' (launch/cmd_op.c): the chip model's roofline and
# pipelined time of one op.  Included by launch/CMakeLists.txt.
set(TPU_LAUNCH_OP_SOURCES cmd_op.c)
