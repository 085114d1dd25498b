"""fragsim draw KIND ... -o FILE, fragsim layout --png/--svg, and fragsim tour [DIR]: every picture
from the command line, in the format its extension names; bad input is one line and exit code 2."""

import json
import os

import pytest

from fragsim.cli import main

MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "svg": b"<?xml", "pdf": b"%PDF"}
F32 = "m16n8k16.row.col.f32.f16.f16.f32"
A_ROWS = "(lane % 16) * 128 + (lane / 16) * 16"

KINDS = [
    ["fragment", F32, "A"],
    ["mma", "m16n8k8.row.col.f32.tf32.tf32.f32"],
    ["flow", "ldmatrix.x2.trans", "--addrs", "(lane % 16) * 16", "--arrows", "0,5"],
    ["flow", "--form", F32, "--operand", "B", "--tile", "16x64 f16 swizzle=3,4,3"],
    ["bank-map", "16x64 f16 swizzle=3,4,3", "--op", "ldmatrix.x4", "--addrs", A_ROWS, "--swizzle", "3,4,3"],
    ["bank-phases", "ldmatrix.x4", "--addrs", A_ROWS],
    ["bank-histogram", "st.shared.b32", "--addrs", "(lane / 4) * ld + (lane % 4) * 4", "--var", "ld=128",
     "--mask", "lane < 16"],
    ["bank-report", "cp.async.ca.16", "--addrs", "lane * 16", "--src", "lane * 16 + 4096"],
    ["swizzle", "--swizzle", "2,4,3", "--row-bytes", "64"],
    ["swizzle", "--tile", "8x64 f16 pitch=144"],
    ["warp-tile", "--tiles", "2x4"],
    ["cta-tile", "--cta", "128x64", "--warps", "2x1"],
    ["wgmma", "m64n8k16.f32.bf16.bf16", "D"],
    ["movmatrix"],
]


@pytest.mark.parametrize("i", range(len(KINDS)), ids=lambda i: "-".join(KINDS[i][:2]))
def test_every_kind_writes_the_format_its_extension_names(tmp_path, capsys, i):
    ext = ("png", "svg", "pdf")[i % 3]
    path = tmp_path / f"p.{ext}"
    assert main(["draw", *KINDS[i], "-o", str(path)]) == 0
    assert path.read_bytes().startswith(MAGIC[ext])
    assert capsys.readouterr().out == f"wrote {path}\n"


@pytest.mark.parametrize("args,message", [
    (["fragment", F32, "A", "-o", "x.jpg"], "the picture format comes from the extension"),
    (["fragment", F32, "Q", "-o", "{tmp}/x.png"], "operand must be one of A, B, C, D"),
    (["flow", "ld.shared.b32", "--addrs", "lane * 4", "-o", "{tmp}/x.png"], "flow is drawn for ldmatrix/stmatrix"),
    (["bank-phases", "ldmatrix.x4", "--addrs", "lane * 8", "-o", "{tmp}/x.png"], "not 16-byte aligned"),
    (["bank-map", "16x64 f16", "--op", "ldmatrix.x4", "-o", "{tmp}/x.png"], "--op and --addrs go together"),
    (["swizzle", "--swizzle", "3,4", "-o", "{tmp}/x.png"], "expected B,M,S"),
    (["warp-tile", "--tiles", "4by8", "-o", "{tmp}/x.png"], "expected MxN"),
    (["wgmma", "m64n8k16.f32.bf16.bf16", "B", "-o", "{tmp}/x.png"], "operand B of wgmma is always in shared memory"),
    (["wgmma", F32, "D", "-o", "{tmp}/x.png"], "expected PTX's spelling after 'wgmma.mma_async.sync.aligned.'"),
    (["movmatrix", "-o", "{tmp}/x.gif"], "the picture format comes from the extension"),
    (["fragment", F32, "A", "-o", "/nonexistent-dir/x.png"], "-o /nonexistent-dir/x.png: cannot write there"),
])
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, capsys, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(["draw", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert list(tmp_path.iterdir()) == []


def test_draw_help_lists_every_kind(capsys):
    with pytest.raises(SystemExit) as e:
        main(["draw", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and all(k in out for k in ("fragment", "flow", "bank-map", "swizzle", "cta-tile", "check"))


def test_draw_wgmma_is_the_warpgroup_map(tmp_path, capsys):
    """`fragsim draw wgmma FORM A|C|D`: every cell of the picture names the thread and element the wgmma
    table gives it (rows top down), and the four warps' bands are tagged."""
    from fragsim.instructions.wgmma import lookup_wgmma
    from fragsim.sim.wgmma import owners
    import svg_labels
    form, path = "m64n16k16.f16.f16.f16", tmp_path / "a.svg"
    assert main(["draw", "wgmma", form, "A", "-o", str(path)]) == 0
    root = svg_labels.parse(path.read_text())
    thread, reg, half = owners(lookup_wgmma(form), "A")
    want = {f"A-{r}-{c}": f"T{thread[r, c]} a{2 * reg[r, c] + half[r, c]}" for r in range(64) for c in range(16)}
    assert svg_labels.labels(root) == want
    said = {t.text for t in root.iter(svg_labels.NS + "text")}
    assert all(f"warp {w}" in said for w in range(4))


def test_layout_png_and_svg_shortcut(tmp_path, capsys):
    png, svg = tmp_path / "a.png", tmp_path / "a.svg"
    assert main(["layout", F32, "C", "--png", str(png), "--svg", str(svg)]) == 0
    assert png.read_bytes().startswith(MAGIC["png"]) and svg.read_bytes().startswith(MAGIC["svg"])
    assert capsys.readouterr().out.splitlines() == [f"wrote {png}", f"wrote {svg}"]
    assert main(["layout", F32, "C", "--png", str(tmp_path / "a.svg")]) == 2
    assert "expected a file name ending in .png" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------
# the tour

@pytest.fixture(scope="module")
def tour(tmp_path_factory):
    out = tmp_path_factory.mktemp("tour")
    import io
    from contextlib import redirect_stdout
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["tour", str(out), "--json"]) == 0
    return out, json.loads(buf.getvalue())


def test_tour_writes_every_file_it_lists_and_nothing_else(tour):
    out, written = tour
    listed = {os.path.realpath(p) for files in written.values() for p in files}
    on_disk = {os.path.realpath(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs}
    assert listed == on_disk
    for p in listed:
        data = open(p, "rb").read()
        assert data, p
        if p.endswith(".png"):
            assert data.startswith(MAGIC["png"]), p


def test_tour_has_the_standard_set(tour):
    """A/B/C/D of every form (forms with the same map share its picture, tables/pictures.md says
    which), the ldmatrix flows of A and B, bank maps without and with Swizzle<3,4,3>, the conflict
    table and the explorer."""
    import re

    from fragsim.instructions import FORMS
    out, written = tour
    names = {os.path.basename(p) for p in written["pictures"]}
    index = open(os.path.join(out, "tables", "pictures.md")).read()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([^`]+)` \| (.*) \|$", index, re.M)}
    assert set(rows) == set(FORMS)
    for name, cells in rows.items():
        maps = [re.search(r"\[([^]]+)\]", c).group(1) for c in cells.split(" | ")[:4]]
        assert all(m in names for m in maps), name
        assert [m.split(".")[1] for m in maps] == list("ABCD") and maps[0].startswith(name.split(".")[0] + ".")
    assert {"m16n8k16.A.f16-bf16.ldmatrix.x4.png", "m16n8k16.B.f16-bf16.ldmatrix.x2.trans.png",
            "m16n8k8.B.tf32.ldmatrix.x2.png"} <= names
    assert {"f16-128B-rows.bank-map.png", "f16-128B-rows.Swizzle343.bank-map.png"} <= names
    assert sorted(os.path.basename(p) for p in written["tables"]) == ["bank_conflicts.md", "pictures.md"]
    assert [os.path.basename(p) for p in written["explorer"]] == ["index.html"]


def test_explorer_page_is_self_contained_and_small(tour):
    """No server, no network: the tables of every mma.sync and wgmma form and a script that draws
    them, well under 2 MB (no per-cell element in the file)."""
    from fragsim.instructions import FORMS
    from fragsim.instructions.wgmma import WGMMA_FORMS
    from fragsim.viz.explorer import page_data
    _, written = tour
    path = written["explorer"][0]
    page = open(path, encoding="utf-8").read()
    for fetch in ("http://", "https://", "<script src", "<link", "<img", "@import", "url(http"):
        assert fetch not in page.replace("http://www.w3.org/2000/svg", "")
    names = [e["name"] for e in page_data(path)["entries"]]
    assert set(FORMS) <= set(names) and set(WGMMA_FORMS) <= set(names)
    assert os.path.getsize(path) < 1_000_000 and "<rect" not in page


def test_tour_prints_the_explorer_path(tmp_path, capsys, monkeypatch):
    from fragsim.cli import tour as tour_cli

    def pictures(out, written, jobs, stages=None):          # the drawing itself is the fixture's business
        written["explorer"].append(os.path.join(out, "index.html"))
    monkeypatch.setattr(tour_cli, "_pictures", pictures)
    assert main(["tour", "--out", str(tmp_path / "t")]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.endswith(str(tmp_path / "t" / "index.html")) and "explorer" in last


@pytest.mark.parametrize("where", ["file", "under-a-file", "both"])
def test_tour_refuses_an_unusable_folder_before_drawing(tmp_path, capsys, where):
    f = tmp_path / "a-file"
    f.write_text("keep me")
    args = {"file": ["tour", "--out", str(f)], "under-a-file": ["tour", str(f / "sub")],
            "both": ["tour", str(tmp_path / "x"), "--out", str(tmp_path / "y")]}[where]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fragsim tour: error:")
    assert f.read_text() == "keep me" and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
