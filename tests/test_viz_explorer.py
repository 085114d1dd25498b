"""The explorer page's tables, read back from the written page: every mma.sync and wgmma form is an
entry, and every cell the page draws -- the lane or thread holding it, its element, the register it
shares -- is the instruction table's; the flows are the movement tables' and the swizzle views are
the Swizzle's.  The page is small because it holds these tables, not pictures."""

import os

import numpy as np
import pytest

from fragsim.instructions import FORMS
from fragsim.instructions.wgmma import WGMMA_FORMS, lookup_wgmma
from fragsim.sim.wgmma import owners
from fragsim.viz import _blocks
from fragsim.viz.explorer import MATRIX_OPS, SWIZZLES, map_cells, page_data, write_explorer


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    path = write_explorer(str(tmp_path_factory.mktemp("explorer")))
    return path, page_data(path)


def _entries(data, family):
    return {e["name"]: e for e in data["entries"] if e["family"] == family}


def test_every_form_of_both_tables_is_an_entry(page):
    _, data = page
    assert list(_entries(data, "mma")) == list(FORMS)
    assert list(_entries(data, "wgmma")) == list(WGMMA_FORMS)
    assert list(_entries(data, "ldsm")) == MATRIX_OPS
    assert [e["name"] for e in _entries(data, "swizzle").values()] == [s[0] for s in SWIZZLES]
    assert all(e["ptx"] == FORMS[n].ptx for n, e in _entries(data, "mma").items())


def _check_op(data, form, o, lane, reg, half, words=1):
    """The page's map of one operand against the table's: lane (or thread), element name, register
    (``words`` registers an element spans)."""
    op = o["op"]
    got_lane, got_elem = map_cells(data, o["map"])
    assert np.array_equal(got_lane, lane)
    names = {(r, c): f"{op.lower()}{got_elem[r, c]}" for r, c in np.ndindex(lane.shape)}
    assert names == {(r, c): form.element_name(op, reg[r, c], half[r, c]) for r, c in np.ndindex(lane.shape)}
    reg = reg // words
    # the page joins neighbours of one lane whose element // elements-per-register are equal: the
    # table's register (f64 elements, which span two registers, are never joined)
    same_page = got_elem // o["epr"]
    for (r, c), ln in np.ndenumerate(lane):
        for r2, c2 in ((r, c + 1), (r + 1, c)):
            if r2 < lane.shape[0] and c2 < lane.shape[1] and lane[r2, c2] == ln:
                assert (same_page[r, c] == same_page[r2, c2]) == (reg[r, c] == reg[r2, c2]), (op, r, c)


@pytest.mark.parametrize("name", list(FORMS))
def test_mma_cells_are_the_instruction_table(page, name):
    _, data = page
    form = FORMS[name]
    view = data["views"][_entries(data, "mma")[name]["view"]]
    ops = [o["op"] for o in view["ops"]]
    assert ops == (["A", "B", "C"] if form.layout("C") == form.layout("D") else ["A", "B", "C", "D"])
    for o in view["ops"]:
        lane, reg, half = form.owner(o["op"])
        words = max(1, form.fmt(o["op"]).storage_bits // 32)       # f64: an element spans two registers
        _check_op(data, form, o, lane, reg, half, words)
        assert o["blocks"] == [[b.index, b.row0, b.col0, b.nrows, b.ncols] for b in _blocks.blocks(form, o["op"])]


@pytest.mark.parametrize("name", list(WGMMA_FORMS))
def test_wgmma_cells_are_the_wgmma_table(page, name):
    _, data = page
    form = lookup_wgmma(name)
    view = data["views"][_entries(data, "wgmma")[name]["view"]]
    assert [o["op"] for o in view["ops"]] == ["A", "D"] and view["cd_same"]
    for o in view["ops"]:
        thread, reg, half = owners(form, o["op"])
        _check_op(data, form, o, thread, reg, half)


def test_flows_are_the_movement_tables(page):
    """Each flow's receiving lane of every 16-bit element is the one fragsim.ldmatrix delivers it to."""
    from fragsim.viz.flow import flow_data
    _, data = page
    for name, e in _entries(data, "ldsm").items():
        fl = data["flows"][e["flows"]["X"]]
        entry, a, dst, _, src, col, _ = flow_data(name)
        assert fl["dst"] == dst.ravel().tolist() and fl["addrs"] == a.tolist() and fl["num"] == entry.num
    for name, e in _entries(data, "mma").items():
        for op, k in e["flows"].items():
            entry, a, dst, _, _, _, st = flow_data(None, form=name, operand=op)
            fl = data["flows"][k]
            assert (fl["op"], fl["dst"], fl["addrs"]) == (entry.name, dst.ravel().tolist(), a.tolist()), (name, op)


def test_swizzle_views_are_where_the_swizzle_sends_each_chunk(page):
    import fragsim
    _, data = page
    for (name, args, pitch), sw in zip(SWIZZLES, data["swizzles"]):
        r, c = np.divmod(np.arange(sw["rows"] * sw["chunks"]), sw["chunks"])
        offset = r * (pitch or 128) + c * 16
        want = offset if args is None else np.asarray(fragsim.Swizzle(*args)(offset))
        assert sw["addr"] == want.tolist(), name
        assert sw["bank"] == (want // 4 % 32).tolist()


def test_the_page_holds_tables_not_pictures(page):
    """Every form of both tables in well under 2 MB (7.1 MB of inline SVG for mma.sync alone before):
    no per-cell element in the file, each distinct map stored once."""
    path, data = page
    text = open(path, encoding="utf-8").read()
    assert os.path.getsize(path) < 1_000_000
    assert "<svg" not in text and "<rect" not in text
    for fetch in ("http://", "https://", "<script src", "<link", "<img", "@import", "url(http"):
        assert fetch not in text.replace("http://www.w3.org/2000/svg", "")
    stored = sum(m["rows"] * m["cols"] for m in data["maps"])
    drawn = sum(data["maps"][o["map"][0]]["rows"] * o["map"][1]
                for e in data["entries"] if "view" in e for o in data["views"][e["view"]]["ops"])
    assert stored < drawn / 50
