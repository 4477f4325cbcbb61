#!/usr/bin/env bash
# usage: expect_usage.sh REGEX COMMAND...
# Bad input: COMMAND must exit with 2, print exactly one "tpuemu: ..." line (on
# every rank together, under mpirun), and that output must match REGEX
# (expect.sh usage REGEX COMMAND...).
exec "$(dirname "$0")/expect.sh" usage "$@"
