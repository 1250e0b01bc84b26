# Source this file: defines make_venv, which creates (once) a virtual environment with
# the pinned tools it is given. Re-running is fast: pip is only called when the list of
# requirements changed since the last time.
make_venv() {
  local dir=$1; shift
  local wanted="$*"
  if [ ! -x "$dir/bin/python" ]; then
    python3 -m venv "$dir"
  fi
  if [ "$(cat "$dir/.openreg-requirements" 2>/dev/null)" != "$wanted" ]; then
    "$dir/bin/python" -m pip install --quiet "$@"
    echo "$wanted" > "$dir/.openreg-requirements"
  fi
}
