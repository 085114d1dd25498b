#!/bin/sh
# Regenerates the fragment-tracing test kernels (tests/test_ptx_trace*.py) in tests/data/ptx/trace/
# from these sources (nvcc 13): each source once per injected mistake (-DBUG=NAME, its names in
# the source; OK is the correct kernel), for sm_90a and, for the mma.sync kernels, sm_80.
set -e
cd "$(dirname "$0")"
out=../../trace
mkdir -p "$out"
build() {   # source, output stem, arches, nvcc flags...
    src=$1 stem=$2 arches=$3
    shift 3
    for a in $arches; do
        nvcc -arch="$a" -ptx "$@" "$src" -o "$out/$stem.${a#sm_}.ptx"
    done
}
for bug in OK TRANS KHALVES X4HALVES OFF8 NOSWIZZLE KSTEP STORE; do
    name=$(echo "$bug" | tr A-Z a-z)
    build ldsm_gemm.cu "ldsm_gemm.$name" "sm_90a sm_80" -DBUG="$bug"
done
build ldsm_gemm.cu ldsm_gemm.pad_ok "sm_90a sm_80" -DLAYOUT_PAD -DBUG=OK
build ldsm_gemm.cu ldsm_gemm.pad_pitch "sm_90a sm_80" -DLAYOUT_PAD -DBUG=PITCH
build ldsm_gemm.cu ldsm_gemm.bkn_ok "sm_90a sm_80" -DB_KN -DBUG=OK
build ldsm_gemm.cu ldsm_gemm.bkn_notrans "sm_90a sm_80" -DB_KN -DBUG=NOTRANS
nvcc -arch=sm_90a -lineinfo -ptx -DBUG=KHALVES ldsm_gemm.cu -o "$out/ldsm_gemm.khalves.90a.lineinfo.ptx"
for bug in OK PITCH KHALVES OFF8; do
    build ldshared_mma.cu "ldshared_mma.$(echo "$bug" | tr A-Z a-z)" "sm_90a sm_80" -DBUG="$bug"
done
for bug in OK NOSWIZZLE SBO ADVANCE; do
    build wgmma_trace.cu "wgmma_trace.$(echo "$bug" | tr A-Z a-z)" sm_90a -DBUG="$bug"
done
# source paths relative to the repository, whichever folder it was built in
sed -i 's#"[^"]*/tests/data/ptx/src/#"tests/data/ptx/src/#' "$out"/*.ptx
