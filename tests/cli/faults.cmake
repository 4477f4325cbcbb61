# Faults in the model (issue 15 item 4) as users see them.  Figures by hand, W =
# 1e11 B/s (5e10 each way), alpha = 1 us, B = 1 MiB, ring of 4, ppermute by +1 (one
# hop per flow, each flow alone on its link):
#   no fault                  1 + B/5e10    = 21.97152 us
#   link 1 -> 2 at 0.5        1 + B/2.5e10  = 42.94304 us (the bandwidth term doubles)
#   link 1 -> 2 failed        3 + B/5e10    = 23.97152 us (1 -> 0 -> 3 -> 2, 3 hops)
set(RING --topology 4 --wrap all --ici-bw 1e11 --collective ppermute --axes x --bytes 1M)
tpu_cli_test(fault_none 0 "\"modeled_us\": 21\\.9715(2|19999)" ${TPUEMU} model ${RING} --json -)
tpu_cli_test(fault_slow_link 0
  "\"faults\": \\[\\{\"kind\": \"slow-link\", \"chip\": 1, \"slice\": 0, \"coords\": \\[1\\], \"dir\": \"\\+x\", \"both\": false, \"factor\": 0\\.5.*\"modeled_us\": 42\\.943(04|0399999)"
  ${TPUEMU} model ${RING} --fault slow-link:chip=1,dir=+x,factor=0.5 --json -)
tpu_cli_test(fault_link_down 0 "\"modeled_us\": 23\\.9715(2|19999)" ${TPUEMU} model ${RING}
  --fault link-down:chip=1,dir=+x --json -)
# (expect.sh matches line by line: one line per regex.)
tpu_cli_test(fault_text 0 "^fault      link-down chip 1 \\(1\\) \\+x$" ${TPUEMU} model ${RING}
  --fault link-down:chip=1,dir=+x)
tpu_cli_test(fault_text_time 0 "^modeled    23\\.972 us$" ${TPUEMU} model ${RING}
  --fault link-down:chip=1,dir=+x)
tpu_cli_test(fault_coords 0 "fault      slow-link chip 5 \\(1,1\\) \\+y both ways factor 0\\.5"
  ${TPUEMU} model --topology 4x4 --fault "slow-link:chip=(1,1),dir=+y,factor=0.5,both=yes")
tpu_cli_test(fault_no_faults_json 0 "\"faults\": \\[\\]" ${TPUEMU} model ${RING} --json -)
# The YAML file gives the same pod and the same time as the flags.
tpu_cli_test(fault_yaml 0 "^fault      slow-link chip 1 \\(1\\) \\+x factor 0\\.5$"
  ${TPUEMU} model --config ${FIX}/faults-ring4.yaml --collective ppermute --axes x --bytes 1M)
tpu_cli_test(fault_yaml_time 0 "^modeled    42\\.943 us$"
  ${TPUEMU} model --config ${FIX}/faults-ring4.yaml --collective ppermute --axes x --bytes 1M)
# The file's faults and the flags' add up.
tpu_cli_test(fault_yaml_and_flag 0 "^fault      slow-chip chip 2 \\(2\\) factor 0\\.5$"
  ${TPUEMU} model --config ${FIX}/faults-ring4.yaml --fault slow-chip:chip=2,factor=0.5)
# The heatmap marks the failed link and says so in its legend.
tpu_cli_test(fault_heatmap_legend 0 "failed link \\(no traffic, routed around\\)" ${TPUEMU} model
  ${RING} --fault link-down:chip=1,dir=+x --heatmap -)
tpu_cli_test(fault_heatmap 0 "<text class=\"failed\" x="
  ${TPUEMU} model ${RING} --fault link-down:chip=1,dir=+x --heatmap -)
tpu_report_test(fault_heatmap_valid ${SVG_CHECK} --links 8 ${OUT}/fault_heatmap.svg -- ${TPUEMU}
  model ${RING} --fault link-down:chip=1,dir=+x --fault slow-chip:chip=3,factor=0.5
  --heatmap ${OUT}/fault_heatmap.svg)
# A slow chip at 0.5 paces the compute of every step: exactly twice (fault_pace.sh);
# train and replay list the faults.
add_test(NAME cli_fault_train_pace COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fault_pace.sh ${TPUEMU})
set_tests_properties(cli_fault_train_pace PROPERTIES LABELS cli TIMEOUT 120)
tpu_cli_test(fault_train 0 "^fault: link-down chip 5 \\(1,1\\) \\+x$" ${TPUEMU} train
  --model-only --topology 4x4 --mesh data=4,model=4 --steps 1 --fault "link-down:chip=(1,1),dir=+x")
tpu_cli_test(fault_replay 0 "^fault      link-down chip 0 \\(0,0\\) \\+x$" ${TPUEMU} replay
  ${FIX}/hlo/coll_4x4.hlo --topology 4x4 --fault link-down:chip=0,dir=+x)
