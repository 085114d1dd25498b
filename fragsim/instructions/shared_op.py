"""One entry of the shared-memory instruction table: every fact about one instruction variant.

The shared-memory model (``fragsim.sim.smem``), the bank model (``fragsim.banks``, both its detail and
its batch path), gpu_check's kernels and the Nsight Compute probe read these fields and nothing
else; adding a variant is adding an entry in its family's module (``ldmatrix.py``,
``ld_st_shared.py``, ``cp_async.py``) plus its hardware validation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fragsim.facts.hardware import BANK_BYTES, WARP_LANES, WAVEFRONT_BYTES
from fragsim.layout.linear import LinearLayout

#: Nsight Compute counters of each counter group: (wavefronts, bank conflicts).  cp.async's
#: wavefronts have no op_ metric of their own; the probe derives them from the shared total.
NCU_METRICS = {
    "ld": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
    "st": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
    "ldgsts": ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
               "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum"),
}

#: How overlapping stores resolve (PTX leaves it undefined; gpu_check's overlap probes on H200 and
#: H100 showed these two behaviours).
OVERLAP_PHASES = "phases"          # phases in order, a later phase overwrites; the lowest lane of a phase wins
OVERLAP_HIGHEST_LANE = "highest lane"


@dataclass(frozen=True)
class SharedOp:
    """A shared-memory instruction variant.

    name            fragsim's short spelling, the key of the table ("ldmatrix.x4.trans")
    ptx             the PTX instruction as written in asm ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")
    family          "ldmatrix" | "stmatrix" | "ld.shared" | "st.shared" | "cp.async"
    kind            Nsight Compute's op: "ldsm" | "stsm" | "ld" | "st" | "ldgsts"
    sass            the SASS mnemonic it compiles to ("LDSM", "LDS", "LDGSTS", ...)
    bytes_per_addr  bytes each lane's address covers (16 for an ldmatrix row)
    address_lanes   lanes whose address the instruction reads (ldmatrix.x1: 8)
    phase_lanes     lanes per bank phase: WAVEFRONT_BYTES worth of accesses, or one 8x8 matrix
    merges_partners loads whose partner lanes (n^1 or n^2) share addresses take half the phases
    nregs           32-bit registers each lane moves
    counter         which Nsight Compute counters count it ("ld" | "st" | "ldgsts")
    counted         False where the counters show nothing (cp.async.cg bypasses L1)
    overlap         for stores: how overlapping writes resolve (OVERLAP_PHASES / OVERLAP_HIGHEST_LANE)
    min_cc          lowest compute capability (major*10 + minor) that has it
    level           cp.async cache level ("ca" | "cg")
    num, trans      ldmatrix/stmatrix: number of 8x8 matrices, transposed or not
    movement        ldmatrix/stmatrix data movement: (lane, reg, elem) -> (src lane, col), a layout
    aliases         other spellings of the same shared-memory access (ld.shared.f32 = ld.shared.b32)
    phantom_lds     never-executed LDS that ptxas puts once into a kernel that uses the instruction and
                    that Nsight Compute's smsp__inst_executed_op_shared_ld still counts, once per warp
                    (cp.async: 3 ``@!PT LDS RZ, [RZ]``)
    """

    name: str
    ptx: str
    family: str
    kind: str
    sass: str
    bytes_per_addr: int
    address_lanes: int
    phase_lanes: int
    nregs: int
    counter: str
    min_cc: int
    merges_partners: bool = False
    counted: bool = True
    overlap: str | None = None
    level: str | None = None
    num: int = 0
    trans: bool = False
    movement: LinearLayout | None = field(default=None, compare=False, repr=False)
    aliases: tuple = ()
    phantom_lds: int = 0

    def __post_init__(self):
        # Invariants of the table, checked when an entry is written.
        if self.kind not in ("ldsm", "stsm", "ld", "st", "ldgsts") or self.counter not in NCU_METRICS:
            raise ValueError(f"{self.name}: unknown kind {self.kind!r} or counter {self.counter!r}")
        if not (0 < self.address_lanes <= WARP_LANES and WARP_LANES % self.phase_lanes == 0):
            raise ValueError(f"{self.name}: address_lanes/phase_lanes must divide a warp")
        if (self.overlap is not None) != self.is_store:
            raise ValueError(f"{self.name}: stores, and only stores, say how overlapping writes resolve")

    @property
    def is_store(self) -> bool:
        """Writes shared memory (cp.async does: it copies global -> shared)."""
        return self.kind in ("st", "stsm", "ldgsts")

    @property
    def element_bytes(self) -> int:
        """ld/st.shared: the bytes of one element, each in a register of its own (zero-extended to 32 bits
        on a load): the whole access up to 4 bytes, a word for .v2/.v4.b32, a byte or a half for the
        vectors of 8- and 16-bit elements (ld.shared.v4.u8: 1)."""
        if self.kind not in ("ld", "st"):
            raise ValueError(f"{self.name}: element_bytes applies to ld/st.shared (registers of whole elements)")
        return self.bytes_per_addr // self.nregs

    @property
    def unit_bytes(self) -> int:
        """The unit two lanes share or conflict on: a bank word, or the lane's whole aligned access."""
        return max(BANK_BYTES, self.bytes_per_addr)

    @property
    def unit_shift(self) -> int:
        return self.unit_bytes.bit_length() - 1

    @property
    def bank_groups(self) -> int:
        """Groups of consecutive banks one aligned unit covers: 32, 16 or 8."""
        return WAVEFRONT_BYTES // self.unit_bytes

    @property
    def width_phase_lanes(self) -> int:
        """Lanes whose accesses fill one wavefront (WAVEFRONT_BYTES / unit), at most a warp."""
        return min(WARP_LANES, WAVEFRONT_BYTES // self.unit_bytes)

    @property
    def metrics(self) -> tuple[str, str]:
        """The Nsight Compute metrics (wavefronts, bank conflicts) that count this instruction."""
        return NCU_METRICS[self.counter]

    @property
    def ncu_inst_metric(self) -> str:
        """The counter of executed instructions of this kind."""
        return {"ldsm": "smsp__inst_executed_op_ldsm.sum", "stsm": "smsp__inst_executed_op_shared_stsm.sum",
                "ld": "smsp__inst_executed_op_shared_ld.sum", "st": "smsp__inst_executed_op_shared_st.sum",
                "ldgsts": "smsp__inst_executed_op_ldgsts.sum"}[self.kind]

    @property
    def what(self) -> str:
        """How error messages name one lane's address."""
        return {"ldsm": "ldmatrix row address", "stsm": "stmatrix row address",
                "ldgsts": "cp.async destination"}.get(self.kind, f"{self.name} address")

    def asm(self, addr: str, regs=(), src: str = "") -> str:
        """The instruction as inline-asm text, operands given as asm placeholders ("%0" ...)."""
        vec = regs[0] if len(regs) == 1 and self.kind in ("ld", "st") else "{" + ", ".join(regs) + "}"
        if self.kind in ("ldsm", "ld"):
            return f"{self.ptx} {vec}, [{addr}];"
        if self.kind in ("stsm", "st"):
            return f"{self.ptx} [{addr}], {vec};"
        return f"{self.ptx} [{addr}], [{src}], {self.bytes_per_addr};"

    def __str__(self) -> str:
        return self.name
