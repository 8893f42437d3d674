#!/usr/bin/env bash
# Makes the Helm provenance fixtures of this directory with real GnuPG (Debian `gnupg`):
# two RSA signing keys in a throwaway GNUPGHOME, the chart archive demo-0.1.0.tgz, a Helm
# repository index naming it, and demo-0.1.0.tgz.prov: Helm's provenance text (Chart.yaml, a
# line `...`, `files:` with the archive's sha256) clear-signed with SHA512 as `helm package
# --sign` does. Run from anywhere; it rewrites the files below (new keys, new signatures).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v gpg >/dev/null || { echo "make.sh: gpg is missing (apt-get install gnupg)" >&2; exit 1; }
work=$(mktemp -d)
trap 'gpgconf --homedir "$work/gnupg" --kill all 2>/dev/null || true; rm -rf "$work"' EXIT
export GNUPGHOME=$work/gnupg
mkdir -m 700 "$GNUPGHOME"
gen() { gpg --batch --pinentry-mode loopback --passphrase '' --quick-gen-key "$1" rsa2048 sign never; }
gen "Capstan Test Signer <signer@capstan.test>"
gen "Capstan Test Stranger <stranger@capstan.test>"
gpg --batch --export signer@capstan.test >"$here/signer.pubring.gpg"
gpg --batch --export stranger@capstan.test >"$here/stranger.pubring.gpg"
gpg --batch --armor --export signer@capstan.test >"$here/signer.pub.asc"

# The chart, packaged as Helm does (NAME/ at the top of a gzipped tar).
mkdir -p "$work/demo/templates"
printf 'apiVersion: v2\nname: demo\ndescription: A chart signed for capstan'"'"'s provenance tests\ntype: application\nversion: 0.1.0\nappVersion: "1.0"\n' >"$work/demo/Chart.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-demo\ndata:\n  signed: "yes"\n' >"$work/demo/templates/configmap.yaml"
tar -C "$work" --owner=0 --group=0 --numeric-owner --mtime='2026-01-01 00:00:00Z' --sort=name -cf - demo | gzip -n >"$here/demo-0.1.0.tgz"
sum=$(sha256sum "$here/demo-0.1.0.tgz" | cut -d' ' -f1)

# Helm's message block: Chart.yaml as yaml.Marshal writes the metadata, `...`, the files.
printf 'apiVersion: v2\nappVersion: "1.0"\ndescription: A chart signed for capstan'"'"'s provenance tests\nname: demo\ntype: application\nversion: 0.1.0\n\n...\nfiles:\n  demo-0.1.0.tgz: sha256:%s\n' "$sum" >"$work/block"
gpg --batch --yes --pinentry-mode loopback --passphrase '' --local-user signer@capstan.test \
    --digest-algo SHA512 --clearsign --output "$here/demo-0.1.0.tgz.prov" "$work/block"
gpg --batch --verify "$here/demo-0.1.0.tgz.prov"
# Signed by the same key, the same archive digest, but Chart.yaml of another version.
sed 's/^version: 0.1.0$/version: 0.2.0/' "$work/block" >"$work/block-other"
gpg --batch --yes --pinentry-mode loopback --passphrase '' --local-user signer@capstan.test \
    --digest-algo SHA512 --clearsign --output "$here/other-version.prov" "$work/block-other"

cat >"$here/index.yaml" <<INDEX
apiVersion: v1
entries:
  demo:
  - apiVersion: v2
    appVersion: "1.0"
    created: "2026-01-01T00:00:00Z"
    description: A chart signed for capstan's provenance tests
    digest: $sum
    name: demo
    type: application
    urls:
    - demo-0.1.0.tgz
    version: 0.1.0
generated: "2026-01-01T00:00:00Z"
INDEX

# The key-lifecycle fixtures (a revoked and an expired signer) for the same archive.
"$here/make-key-lifecycle.sh"
