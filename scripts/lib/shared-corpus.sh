# Sourced by the benchmark scripts: sets SHARED to the shared directory that holds the Helm
# corpus ($CAPSTAN_SHARED, else ../shared or ../../shared beside the checkout, else
# /work/shared), or exits with a message naming the calling script. Needs ROOT.
SHARED=${CAPSTAN_SHARED:-}
if [ -z "$SHARED" ]; then
    for c in "$ROOT/../shared" "$ROOT/../../shared" /work/shared; do
        if [ -d "$c/helm-corpus" ]; then SHARED=$(cd "$c" && pwd); break; fi
    done
fi
if [ -z "$SHARED" ] || [ ! -d "$SHARED/helm-corpus" ]; then
    echo "$(basename "$0"): no shared Helm corpus (set CAPSTAN_SHARED)" >&2
    exit 2
fi
