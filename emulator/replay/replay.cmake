# HLO replay (issue 12): the HLO text parser and the cost walk.  Included by
# emulator/CMakeLists.txt; names are relative to emulator/.
set(TPU_REPLAY_SOURCES
  replay/hlo_parse.c
  replay/hlo_cost.c)
