"""The explorer page in a real browser (headless Chromium driven by Selenium): for every form,
clicking lane 5 highlights exactly the cells the instruction table gives lane 5 -- in A, B and C/D,
and in the ldmatrix flows the row it addresses, the elements it receives and its registers.

Skips, saying why, where Chromium, its driver or Selenium is missing (``.ci/run`` installs them).
"""

import os
import shutil

import numpy as np
import pytest

from fragsim.instructions import FORMS

LANE = 5


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


HIGHLIGHTED = "return Array.from(document.querySelectorAll('.hl')).map(e => e.id)"


def _expected(form, lane, flows):
    """The ids the page must highlight for ``lane``, from the instruction table."""
    from fragsim.viz import _groups
    from fragsim.viz.flow import flow_data
    ids = set()
    view = next(i for i, fs in enumerate(_groups.group(FORMS.values(), _groups.view_key).values()) if form in fs)
    ops = "ABC" if form.layout("C") == form.layout("D") else "ABCD"
    for op in ops:
        rows, cols = form.coords(op)
        ids |= {f"f{view}-{op}-{r}-{c}" for r, c in zip(rows[lane].ravel(), cols[lane].ravel())}
    for op, k in flows.items():
        entry, a, dst, _, _, _, _ = flow_data(None, form=form, operand=op)
        p = f"g{k}-flow-"
        ids |= {f"{p}s-{r}-{c}" for r, c in zip(*np.nonzero(dst == lane))}
        ids |= {f"{p}r-{lane}-{i}-{h}" for i in range(entry.num) for h in range(2)}
        if lane < entry.address_lanes:
            ids |= {f"{p}row-{lane}", f"{p}p-{a[lane] // 128}-{a[lane] % 128 // 16}"}
    return ids


def _labels(page, ids):
    script = "return arguments[0].map(i => { const t = document.getElementById(i + '-t'); " \
             "return t ? Array.from(t.querySelectorAll('text')).map(x => x.textContent).join(' ') : null; })"
    return page.execute_script(script, sorted(ids))


@pytest.mark.parametrize("index", range(len(FORMS)), ids=list(FORMS))
def test_clicking_lane_5_highlights_exactly_its_cells(page, index):
    from selenium.webdriver.support.ui import Select
    form = list(FORMS.values())[index]
    Select(page.find_element("id", "form-picker")).select_by_index(index)
    flows = page.execute_script("return DATA.forms[arguments[0]].flows", index)
    page.find_element("id", f"lane-{LANE}").click()
    got = set(page.execute_script(HIGHLIGHTED))
    cells = {i for i in got if not i.endswith("-t")}
    assert cells == _expected(form, LANE, flows)
    # every highlighted map cell that carries a label says lane 5
    shown = [x for x in _labels(page, [i for i in cells if i.startswith("f")]) if x is not None]
    assert all(x.split()[0] == f"T{LANE}" for x in shown)
    # and they are visible: the form's view and flows are the ones on screen
    visible = page.execute_script("return Array.from(document.querySelectorAll('section.active')).map(s => s.id)")
    assert visible[0].startswith("view-") and len(visible) == 1 + len(flows)
    page.find_element("id", f"lane-{LANE}").click()                  # clicking again clears
    assert page.execute_script(HIGHLIGHTED) == []


def test_clicking_a_cell_selects_the_lane_that_holds_it(page):
    """A click on A's cell (9, 3) of m16n8k16 (lane 5's a3) selects lane 5; hovering another lane's
    cell previews it; the info line lists lane 5's elements."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import Select
    Select(page.find_element("id", "form-picker")).select_by_index(0)
    cell = page.find_element("css selector", "#f0-A-9-3 rect")
    ActionChains(page).move_to_element(cell).click().perform()
    info = page.find_element("id", "info").text
    assert info.startswith("lane 5 ") and "a3=(9,3)" in info and "B  : b0=(2,1)" in info
    assert "f0-A-9-3" in page.execute_script(HIGHLIGHTED)
    other = page.find_element("css selector", "#f0-C-0-0 rect")          # lane 0's c0
    ActionChains(page).move_to_element(other).perform()
    assert page.find_element("id", "info").text.startswith("lane 0 ")
    page.find_element("id", "lane-5").click()                            # un-pin lane 5
