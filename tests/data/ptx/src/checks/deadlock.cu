// Barrier deadlock (fragsim run --check: deadlock) and its correct twin (_ok).  A line marked
// "BUG <kind>" is where a finding must point.  Two warps.

extern "C" __global__ void deadlock_bug(int *out) {
    int warp = threadIdx.x / 32;
    if (warp == 0)
        asm volatile("bar.sync 1, 64;" ::: "memory");  // BUG deadlock
    else
        asm volatile("bar.sync 2, 64;" ::: "memory");  // BUG deadlock
    out[threadIdx.x] = warp;
}

extern "C" __global__ void deadlock_ok(int *out) {
    int warp = threadIdx.x / 32;
    asm volatile("bar.sync 1, 64;" ::: "memory");
    out[threadIdx.x] = warp;
}
