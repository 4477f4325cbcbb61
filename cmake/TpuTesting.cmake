# Test helpers (STYLE.md R15).  Every test has its own ctest entry and a TIMEOUT.
set(TPU_MPIEXEC_PREFLAGS "--oversubscribe;--mca;mpi_yield_when_idle;1" CACHE STRING
  "Extra mpiexec flags (Open MPI): oversubscribe small machines, and yield when idle")

# tpu_add_unit_test(NAME [SOURCES ...] [LIBS ...] [INCLUDES dir...]): a CMocka test
# from NAME.c (and more sources).  A test sees the public headers and
# tests/support, and links tpu_test_support (its main() calls tpu_test_main());
# INCLUDES adds the private folder of what it tests.
function(tpu_add_unit_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;INCLUDES" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  add_executable(${name} ${name}.c ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support ${T_INCLUDES})
  target_link_libraries(${name} PRIVATE tpuemu_static tpu_warnings PkgConfig::CMOCKA
    tpu_test_support ${T_LIBS})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS unit TIMEOUT ${T_TIMEOUT})
endfunction()

# tpu_mpirun_command(OUT NP ARGS...): the mpiexec command line for NP ranks.
function(tpu_mpirun_command out np)
  set(${out} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS}
    ${TPU_MPIEXEC_PREFLAGS} ${ARGN} PARENT_SCOPE)
endfunction()

# tpu_add_mpi_test(NAME NP n... ARGS ...): an MPI program NAME.c run at each NP.
function(tpu_add_mpi_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "NP;ARGS;INCLUDES" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  add_executable(${name} ${name}.c)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support ${T_INCLUDES})
  target_link_libraries(${name} PRIVATE tpuemu_static tpu_warnings MPI::MPI_C)
  foreach(np IN LISTS T_NP)
    tpu_mpirun_command(cmd ${np} $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS} ${T_ARGS})
    add_test(NAME ${name}_np${np} COMMAND ${cmd})
    set_tests_properties(${name}_np${np} PROPERTIES LABELS mpi TIMEOUT ${T_TIMEOUT}
      PROCESSORS 2)
  endforeach()
endfunction()
