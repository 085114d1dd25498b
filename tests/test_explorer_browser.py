"""The explorer page in a real browser (headless Chromium driven by Selenium): the page draws each
entry from its tables, and clicking lane 5 highlights exactly the cells the instruction tables give
lane 5 -- in A, B and C/D of every mma.sync form, with the row it addresses, the elements it receives
and its registers in the ldmatrix flows; thread 37 (warp 1, lane 5) in a wgmma form's A and D; and a
swizzle chunk highlights the slot the Swizzle sends it to.

Skips, saying why, where Chromium, its driver or Selenium is missing (``.ci/run`` installs them).
"""

import os
import shutil

import numpy as np
import pytest

from fragsim.instructions import FORMS
from fragsim.instructions.wgmma import WGMMA_FORMS, lookup_wgmma
from fragsim.sim.wgmma import owners
from fragsim.viz import _blocks

LANE = 5
WARP = 1


def _browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("Selenium is not installed (pip install '.[test]')")
    binary = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    driver = shutil.which("chromedriver")
    if binary is None or driver is None:
        pytest.skip("no headless browser: install chromium and chromium-driver (apt-get install chromium "
                    "chromium-driver), as .ci/run does")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(a)
    # the driver is given: Selenium Manager is never asked to download one (no network needed)
    return webdriver.Chrome(options=opts, service=Service(driver))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from fragsim.viz.explorer import write_explorer
    path = write_explorer(str(tmp_path_factory.mktemp("explorer")))
    browser = _browser()
    browser.get("file://" + os.path.abspath(path))
    yield browser
    browser.quit()


HIGHLIGHTED = "return Array.from(document.querySelectorAll('rect.hl')).map(e => e.id)"


def _entry(page, family, name):
    """Select the picker's entry for ``name`` of ``family`` (mma, wgmma, ldsm, swizzle)."""
    from selenium.webdriver.support.ui import Select
    i = page.execute_script("return DATA.entries.findIndex(e => e.family === arguments[0] && e.name === arguments[1])",
                            family, name)
    assert i >= 0, (family, name)
    Select(page.find_element("id", "form-picker")).select_by_value(str(i))


def _flow_ids(tag, lane, op=None, form=None, operand=None):
    """What the flow of ``op`` (or of ``form``'s ``operand``) highlights for ``lane``, from the movement table."""
    from fragsim.viz.flow import flow_data
    entry, a, dst, _, _, _, _ = flow_data(op, form=form, operand=operand)
    ids = {f"{tag}-s-{r}-{c}" for r, c in zip(*np.nonzero(dst == lane))}
    ids |= {f"{tag}-r-{lane}-{i}-{h}" for i in range(entry.num) for h in range(2)}
    if lane < entry.address_lanes:
        ids |= {f"{tag}-row-{lane}", f"{tag}-p-{a[lane] // 128}-{a[lane] % 128 // 16}"}
    return ids


def _labels(page, ids):
    script = "return arguments[0].map(i => { const t = document.getElementById(i + '-t'); " \
             "return t ? t.textContent : null; })"
    return page.execute_script(script, sorted(ids))


@pytest.mark.parametrize("name", list(FORMS))
def test_clicking_lane_5_highlights_exactly_its_cells(page, name):
    form = FORMS[name]
    _entry(page, "mma", name)
    page.find_element("id", f"lane-{LANE}").click()
    got = set(page.execute_script(HIGHLIGHTED))
    want = set()
    for op in "ABC" if form.layout("C") == form.layout("D") else "ABCD":
        rows, cols = form.coords(op)
        want |= {f"{op}-{r}-{c}" for r, c in zip(rows[LANE].ravel(), cols[LANE].ravel())}
    for op in "AB":
        if _blocks.storages(form, op):
            want |= _flow_ids(f"f{op}", LANE, form=form, operand=op)
    assert got == want
    # every highlighted map cell that carries a label says lane 5
    shown = [x for x in _labels(page, [i for i in got if i[0] in "ABCD"]) if x is not None]
    assert all(x == f"T{LANE}" for x in shown)
    page.find_element("id", f"lane-{LANE}").click()                  # clicking again clears
    assert page.execute_script(HIGHLIGHTED) == []


def _wgmma_views():
    """One wgmma form for each distinct pair of maps (A, D): the page draws each pair the same way."""
    seen = {}
    for name in WGMMA_FORMS:
        f = lookup_wgmma(name)
        seen.setdefault((f.layout("A"), f.layout("D"), f.elems_per_reg("A"), f.elems_per_reg("D")), name)
    return list(seen.values())


@pytest.mark.parametrize("name", _wgmma_views())
def test_clicking_lane_5_of_warp_1_highlights_thread_37_in_a_and_d(page, name):
    from selenium.webdriver.support.ui import Select
    form = lookup_wgmma(name)
    _entry(page, "wgmma", name)
    Select(page.find_element("id", "warp-picker")).select_by_value(str(WARP))
    page.find_element("id", f"lane-{LANE}").click()
    thread = WARP * 32 + LANE
    want = set()
    for op in "AD":
        t = owners(form, op)[0]
        want |= {f"{op}-{r}-{c}" for r, c in zip(*np.nonzero(t == thread))}
    assert set(page.execute_script(HIGHLIGHTED)) == want
    assert page.find_element("id", "info").text.startswith(f"thread {thread} (warp {WARP}, lane {LANE})")
    page.find_element("id", f"lane-{LANE}").click()


@pytest.mark.parametrize("op", ["ldmatrix.x1", "ldmatrix.x4.trans", "stmatrix.x2", "stmatrix.x4.trans"])
def test_an_ldmatrix_flow_on_its_own_highlights_what_lane_5_gives_and_gets(page, op):
    _entry(page, "ldsm", op)
    page.find_element("id", f"lane-{LANE}").click()
    assert set(page.execute_script(HIGHLIGHTED)) == _flow_ids("fX", LANE, op)
    page.find_element("id", f"lane-{LANE}").click()


def test_a_swizzle_chunk_highlights_the_slot_it_lands_in(page):
    """Swizzle<3,4,3>: logical row 3, chunk 1 (byte 400) lands at 400 ^ (3 << 4) = 0x1a0 -- line 3, slot 2."""
    import fragsim
    _entry(page, "swizzle", "Swizzle<3,4,3> (128B)")
    page.find_element("id", "sw-l-3-1").click()
    a = int(fragsim.Swizzle(3, 4, 3)(3 * 128 + 16))
    assert a == 0x1A0
    assert set(page.execute_script(HIGHLIGHTED)) == {"sw-l-3-1", f"sw-p-{a // 128}-{a % 128 // 16}"}
    assert "-> 0x01a0: line 3, slot 2 (banks 8-11)" in page.find_element("id", "info").text


def test_clicking_a_cell_selects_the_lane_that_holds_it(page):
    """A click on A's cell (9, 3) of m16n8k16 (lane 5's a3) selects lane 5; hovering another lane's
    cell previews it; the info line lists lane 5's elements."""
    from selenium.webdriver.common.action_chains import ActionChains
    _entry(page, "mma", "m16n8k16.row.col.f16.f16.f16.f16")
    ActionChains(page).move_to_element(page.find_element("id", "A-9-3")).click().perform()
    info = page.find_element("id", "info").text
    assert info.startswith("lane 5 ") and "a3=(9,3)" in info and "B  : b0=(2,1)" in info
    assert "A-9-3" in page.execute_script(HIGHLIGHTED)
    ActionChains(page).move_to_element(page.find_element("id", "C-0-0")).perform()     # lane 0's c0
    assert page.find_element("id", "info").text.startswith("lane 0 ")
    page.find_element("id", "lane-5").click()                            # un-pin lane 5


def test_the_first_screen_shows_a_b_and_c_d_together(page):
    """All operands of the selected form side by side, inside the window (the flows come below)."""
    _entry(page, "mma", "m16n8k16.row.col.f32.f16.f16.f32")
    def boxes(selector):
        return page.execute_script(f"return Array.from(document.querySelectorAll('{selector}')).map(s => "
                                   "{ const r = s.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })")
    width, height = page.execute_script("return [window.innerWidth, window.innerHeight]")
    panels, maps = boxes("#maps .panel"), boxes("#maps svg")
    assert len(panels) == len(maps) == 3 and len({round(b[1]) for b in panels}) == 1     # A, B, C/D in one row
    assert all(b[2] <= width and b[3] <= height for b in maps)
