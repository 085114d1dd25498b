"""Whole access sets measured under Nsight Compute (tests/data/access/, made by
``python -m fragsim.gpu_check.banks.access measure``), replayed against fragsim's predicted totals.

Every launch: per counter group (ld, st, ldgsts) the wavefronts and bank conflicts, the executed
instructions per kind, and the hardware's data check (every register the reads returned is the
tagged element the access set says).  Where fragsim and the hardware differ, the difference is
listed below with both figures; the replay pins it, so it can neither grow nor silently vanish.
"""

import glob
import os

import pytest

from fragsim.gpu_check.banks import access as N

DATA = os.path.join(os.path.dirname(__file__), "data", "access")
RECORDS = sorted(glob.glob(os.path.join(DATA, "*.npz")))

#: record file -> [(launch, case, layout, what, fragsim, measured, fragsim exact?)] documented differences
KNOWN: dict = {}


@pytest.mark.parametrize("path", RECORDS, ids=[os.path.basename(p) for p in RECORDS])
def test_recorded_kernels_match_fragsims_totals(path):
    rec = N.load_record(path)
    assert len(rec["case"]) > 0 and rec["data_ok"].dtype == bool
    assert N.differences(rec) == KNOWN.get(os.path.basename(path), [])
