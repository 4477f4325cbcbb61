# The YAML pod description (libyaml), included by launch/CMakeLists.txt.
set(TPU_LAUNCH_CONFIG_SOURCES config_yaml.c)
