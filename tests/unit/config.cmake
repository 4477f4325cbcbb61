# The YAML pod description (launch/config_yaml.c): the schema, every error with
# its position, the example configs and bad fixtures, tpu_parse_size(), and a
# fuzz-style robustness run over mutations of the examples.
foreach(t test_config_yaml test_config_fuzz)
  tpu_add_unit_test(${t} SOURCES ${PROJECT_SOURCE_DIR}/launch/config_yaml.c LIBS PkgConfig::YAML)
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/launch)
  target_compile_definitions(${t} PRIVATE TPU_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endforeach()
