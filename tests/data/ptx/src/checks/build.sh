#!/bin/sh
# Regenerates the checks' kernels in tests/data/ptx/checks/ from these sources (nvcc 13, -O3 by
# default, -lineinfo: the findings name CUDA lines): sm_90a for every file, sm_80 for those without
# wgmma, mbarrier phases or bulk copies (sm_90 instructions).
set -e
cd "$(dirname "$0")"
out=../../checks
mkdir -p "$out"
for cu in *.cu; do
    k=${cu%.cu}
    nvcc -arch=sm_90a -lineinfo -ptx "$cu" -o "$out/$k.sm90a.ptx"
    case $k in
        wgmma | mbarrier) ;;
        *) nvcc -arch=sm_80 -lineinfo -ptx "$cu" -o "$out/$k.sm80.ptx" ;;
    esac
done
# source paths relative to the repository, whichever folder it was built in
sed -i 's#"[^"]*/tests/data/ptx/src/#"tests/data/ptx/src/#' "$out"/*.ptx
