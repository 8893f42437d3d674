#!/usr/bin/env bash
# Makes the key-lifecycle provenance fixtures of this directory with real GnuPG (Debian `gnupg`),
# for the chart demo-0.1.0.tgz that make.sh made (it calls this script at its end):
# - revoked.pubring.gpg, revoked.prov: a key that signed the chart's provenance and was revoked
#   afterwards; the keyring holds the key and its revocation certificate (the one gpg writes to
#   openpgp-revocs.d at key generation, imported), as `gpg --export` writes them.
# - expired.pubring.gpg, expired.prov: a key made on 2025-01-01 that expires on 2025-06-01 and
#   signed the provenance on 2025-03-01 (gpg's --faked-system-time): valid when it signed,
#   expired now.
# Run from anywhere; it rewrites the files above (new keys, new signatures).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v gpg >/dev/null || { echo "make-key-lifecycle.sh: gpg is missing (apt-get install gnupg)" >&2; exit 1; }
work=$(mktemp -d)
trap 'gpgconf --homedir "$work/gnupg" --kill all 2>/dev/null || true; rm -rf "$work"' EXIT
export GNUPGHOME=$work/gnupg
mkdir -m 700 "$GNUPGHOME"
sum=$(sha256sum "$here/demo-0.1.0.tgz" | cut -d' ' -f1)
# Helm's message block for the archive (as make.sh writes it).
printf 'apiVersion: v2\nappVersion: "1.0"\ndescription: A chart signed for capstan'"'"'s provenance tests\nname: demo\ntype: application\nversion: 0.1.0\n\n...\nfiles:\n  demo-0.1.0.tgz: sha256:%s\n' "$sum" >"$work/block"
q=(--batch --yes --pinentry-mode loopback --passphrase '')
sign() { gpg "${q[@]}" "${@:3}" --local-user "$1" --digest-algo SHA512 --clearsign --output "$2" "$work/block"; }

# Revoked: sign, then import the key's own revocation certificate (its armor line is
# escaped with a leading ':' against accidental import).
gpg "${q[@]}" --quick-gen-key "Capstan Test Revoked <revoked@capstan.test>" rsa2048 sign never
sign revoked@capstan.test "$here/revoked.prov"
fpr=$(gpg --batch --with-colons --list-keys revoked@capstan.test | awk -F: '/^fpr/ {print $10; exit}')
sed 's/^:-----BEGIN/-----BEGIN/' "$GNUPGHOME/openpgp-revocs.d/$fpr.rev" >"$work/revocation.asc"
gpg --batch --import "$work/revocation.asc"
gpg --batch --export revoked@capstan.test >"$here/revoked.pubring.gpg"
gpg --batch --list-keys revoked@capstan.test | grep -q revoked

# Expired: made on 2025-01-01 valid until 2025-06-01, signed on 2025-03-01.
gpg "${q[@]}" --faked-system-time 20250101T000000! \
    --quick-gen-key "Capstan Test Expired <expired@capstan.test>" rsa2048 sign 2025-06-01
sign expired@capstan.test "$here/expired.prov" --faked-system-time 20250301T000000!
gpg --batch --export expired@capstan.test >"$here/expired.pubring.gpg"
gpg --batch --faked-system-time 20250301T000000! --verify "$here/expired.prov"
