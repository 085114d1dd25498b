#!/bin/sh
# Regenerates the PTX corpus in tests/data/ptx/ from these sources (nvcc 13, -O3 by default).
set -e
cd "$(dirname "$0")"
out=..
for cu in *.cu; do
    k=${cu%.cu}
    grep -q '^// ptx: ' "$cu" && continue       # built from its own "// ptx:" lines, below
    nvcc -arch=sm_90a -ptx "$cu" -o "$out/$k.sm90a.ptx"
    nvcc -arch=sm_90a -lineinfo -ptx "$cu" -o "$out/$k.sm90a.lineinfo.ptx"
    case $k in wgmma_desc|tma_*) ;; *) nvcc -arch=sm_80 -ptx "$cu" -o "$out/$k.sm80.ptx" ;; esac
done
# tma_wgmma_check.cu's injected mismatches (fragsim.check_tma_wgmma; ptx_kernels --forms tma_check)
for v in sbo512:-DDESC_SBO=512 kadv16:-DKADV=16 swz64:-DDESC_SWZ=2 shift384:-DSHIFT=384 \
         shift384_base3:"-DSHIFT=384 -DBASE_OFF=3" transb:-DTRANS_B=1; do
    nvcc -arch=sm_90a -ptx ${v#*:} tma_wgmma_check.cu -o "$out/tma_wgmma_check.${v%%:*}.sm90a.ptx"
done
for k in reduce_shfl devfunc_local; do
    nvcc -arch=sm_90a -G -ptx "$k.cu" -o "$out/$k.sm90a.G.ptx"
done
# sources that name their builds in "// ptx: FILE NVCC-FLAGS" lines (the MUFU kernels: fast math and
# the -prec-div/-prec-sqrt variants; gpu_check's nvcc_matches reads the same lines)
for cu in *.cu; do
    grep '^// ptx: ' "$cu" | while read -r _ _ file flags; do
        nvcc $flags -ptx "$cu" -o "$out/$file"
    done
done
# CUTLASS's CuTe tutorials (a checkout of github.com/NVIDIA/cutlass in $CUTLASS, if set)
if [ -n "$CUTLASS" ]; then
    inc="-std=c++17 -O3 -I$CUTLASS/include -I$CUTLASS/tools/util/include --expt-relaxed-constexpr"
    nvcc $inc -arch=sm_80 -ptx "$CUTLASS/examples/cute/tutorial/sgemm_sm80.cu" \
        -o "$out/cutlass_sgemm_sm80.sm80.ptx"
    nvcc $inc -arch=sm_90a -ptx "$CUTLASS/examples/cute/tutorial/hopper/wgmma_sm90.cu" \
        -o "$out/cutlass_wgmma_sm90.sm90a.ptx"
    nvcc $inc -arch=sm_90a -ptx "$CUTLASS/examples/cute/tutorial/hopper/wgmma_tma_sm90.cu" \
        -o "$out/cutlass_wgmma_tma_sm90.sm90a.ptx"
fi
# source paths relative to the repository, whichever folder it was built in
sed -i 's#"[^"]*/tests/data/ptx/src/#"tests/data/ptx/src/#' "$out"/*.ptx
