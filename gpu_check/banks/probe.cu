// fragsim bank-conflict probe (template; gpu_check/banks/probe.py fills in the kernels).
//
// One kernel per shared-memory instruction.  Each launch is one block of one warp that runs
// that one instruction once: the 32 lane addresses and the active-lane mask come from global
// memory (case[0..31], case[32]; cp.async also reads its per-lane global source offsets,
// case[33..64]: CASE_WORDS words per case), so nothing is folded at compile time, and the kernel has no
// other shared-memory traffic (cuobjdump -sass checks this).  Run under Nsight Compute:
//
//   probe CASES.bin OP[,OP...] SECONDS_PER_OP
//
// CASES.bin: uint32 n_ops, then per op: uint32 op_id, uint32 n, n x 65 uint32 (addrs, mask, cp.async source offsets).
// Prints "src_base ADDR" once (the device address of the cp.async source buffer, which the
// source offsets are relative to: the L1 line classes hash the absolute address), then launches
// case 0, 1, ... of each named op in order, until the cases or the op's time run out, and prints
// "launched OP_ID COUNT" for each.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <vector>
#include <cuda_runtime.h>

#define SMEM_BYTES @SMEM_BYTES@
#define SRC_BYTES @SRC_BYTES@

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "probe: %s: %s\n", #x, cudaGetErrorString(e_)); exit(3); } } while (0)

// ---- the prelude and the kernels (generated) ------------------------------------------------
@KERNELS@

typedef void (*probe_fn)(const unsigned*, unsigned*, const unsigned char*);
#define CASE_WORDS (2 * FS_LANES + 1)
static probe_fn KERNELS[] = { @TABLE@ };
static const int N_KERNELS = sizeof(KERNELS) / sizeof(KERNELS[0]);

int main(int argc, char** argv) {
    if (argc < 4) { fprintf(stderr, "usage: probe CASES.bin OP[,OP...] SECONDS_PER_OP\n"); return 2; }
    FILE* f = fopen(argv[1], "rb");
    if (!f) { fprintf(stderr, "probe: cannot open %s\n", argv[1]); return 2; }
    std::vector<std::vector<unsigned>> cases(N_KERNELS);
    unsigned n_ops = 0;
    if (fread(&n_ops, 4, 1, f) != 1) return 2;
    for (unsigned i = 0; i < n_ops; i++) {
        unsigned hdr[2];
        if (fread(hdr, 4, 2, f) != 2 || hdr[0] >= (unsigned)N_KERNELS) { fprintf(stderr, "probe: bad case file\n"); return 2; }
        cases[hdr[0]].resize((size_t)hdr[1] * CASE_WORDS);
        if (fread(cases[hdr[0]].data(), 4, (size_t)hdr[1] * CASE_WORDS, f) != (size_t)hdr[1] * CASE_WORDS) { fprintf(stderr, "probe: short case file\n"); return 2; }
    }
    fclose(f);
    double seconds = atof(argv[3]);

    unsigned *d_out = nullptr; unsigned char* d_src = nullptr;
    CHECK(cudaMalloc(&d_out, FS_LANES * 4 * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_src, SRC_BYTES));
    CHECK(cudaMemset(d_src, 0x5a, SRC_BYTES));
    printf("src_base %llu\n", (unsigned long long)(size_t)d_src);

    char* list = strdup(argv[2]);
    for (char* tok = strtok(list, ","); tok; tok = strtok(nullptr, ",")) {
        int op = atoi(tok);
        if (op < 0 || op >= N_KERNELS) { fprintf(stderr, "probe: no op %d\n", op); return 2; }
        size_t n = cases[op].size() / CASE_WORDS;
        unsigned* d_cases = nullptr;
        if (n) {
            CHECK(cudaMalloc(&d_cases, cases[op].size() * sizeof(unsigned)));
            CHECK(cudaMemcpy(d_cases, cases[op].data(), cases[op].size() * sizeof(unsigned), cudaMemcpyHostToDevice));
        }
        auto t0 = std::chrono::steady_clock::now();
        size_t done = 0;
        for (; done < n; done++) {
            double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (el > seconds) break;
            KERNELS[op]<<<1, FS_LANES>>>(d_cases + CASE_WORDS * done, d_out, d_src);
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
        }
        printf("launched %d %zu\n", op, done);
        fflush(stdout);
        if (d_cases) CHECK(cudaFree(d_cases));
    }
    free(list);
    return 0;
}
