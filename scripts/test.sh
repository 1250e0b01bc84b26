#!/usr/bin/env bash
# The whole test suite: every tox environment of the matrix (see tox.ini), each building
# the packages against its own torch. Extra arguments go to tox (e.g. -e py311-torch213).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
make_venv .venv/tools "tox>=4.20"
exec .venv/tools/bin/tox run "$@"
