#!/usr/bin/env bash
# The whole test suite: every tox environment of the matrix (see tox.ini), each building
# the packages against its own torch. Extra arguments go to tox (e.g. -e py311-torch213).
#
# Two environments run at a time: most of a test run is one Python thread waiting on
# another process or on itself, so two share this project's 2-core machines well (the
# whole matrix in about two thirds of the sequential time). Their output is shown live;
# OPENREG_TEST_PARALLEL=1 runs them one after the other.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
make_venv .venv/tools "tox>=4.20"
exec .venv/tools/bin/tox run-parallel --parallel "${OPENREG_TEST_PARALLEL:-2}" \
    --parallel-live --parallel-no-spinner "$@"
