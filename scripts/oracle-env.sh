#!/usr/bin/env bash
# Creates (once) a Python virtualenv with real Helm v4.2.3 (helm-python-sdk) for regenerating
# test vectors; prints the path of its python. Not needed to run the tests.
set -euo pipefail
venv="${XDG_CACHE_HOME:-$HOME/.cache}/capstan/helm-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import helm_python' 2>/dev/null; then
  echo "oracle-env: creating $venv with helm-python-sdk==0.2.2" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q helm-python-sdk==0.2.2 pyyaml >&2
fi
echo "$venv/bin/python"
