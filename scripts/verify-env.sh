#!/usr/bin/env bash
# Creates (once) a Python virtualenv with `cryptography` (ECDSA P-256) and `PyNaCl` (NaCl
# secretbox) for the independent cosign signer/verifier tests/oracle/cosign_oracle.py, and
# sigstore-python for the independent bundle verifier tests/oracle/sigstore_oracle.py (its tests
# skip when it cannot be installed); prints the path of its python. The supply-chain interop tests (tests/it/verify_cosign.rs) call it.
# Also makes sure GnuPG is there (Debian `gnupg`), which testdata/provenance/make.sh signs with.
set -euo pipefail
if ! command -v gpg >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "verify-env: installing gnupg" >&2
  apt-get install -y -qq gnupg >&2 || echo "verify-env: gnupg not installed; testdata/provenance/make.sh needs it" >&2
fi
venv="${XDG_CACHE_HOME:-$HOME/.cache}/capstan/verify-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import cryptography, nacl' 2>/dev/null; then
  echo "verify-env: creating $venv with cryptography and PyNaCl" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'cryptography>=42' 'PyNaCl>=1.5' >&2
fi
if ! "$venv/bin/python" -c 'import sigstore' 2>/dev/null; then
  echo "verify-env: installing sigstore into $venv" >&2
  "$venv/bin/pip" install -q 'sigstore>=4.5,<5' >&2 || echo "verify-env: sigstore not installed; its oracle tests skip" >&2
fi
echo "$venv/bin/python"
