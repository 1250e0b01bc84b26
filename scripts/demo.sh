#!/usr/bin/env bash
# The main job: build openreg into .venv/demo (torch 2.13.0) and run the demo on the device.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
make_venv .venv/demo torch==2.13.0 -r requirements/build.txt
.venv/demo/bin/python scripts/install_packages.py
exec .venv/demo/bin/python examples/demo.py "$@"
