"""Long commands say what they are doing on stderr (fragsim.cli.progress): `fragsim tour` a line per
stage, `fragsim gpu-check` a line per op; stdout keeps the result, and --json keeps stderr quiet off a
terminal unless --progress asks."""

import io
import json
from pathlib import Path

from fragsim.cli import main
from fragsim.cli.progress import Stages
from fragsim.cli.tour import CONFLICT_PATTERNS
from fragsim.instructions import FORMS

H200 = Path(__file__).parent / "data" / "hw" / "nvidia_h200_sm90"
TOUR_STAGES = [f"fragsim tour: writing the fragment maps of {len(FORMS)} mma forms (text and JSON) ...",
               f"fragsim tour: counting the bank conflicts of {len(CONFLICT_PATTERNS)} access patterns ..."]
REPLAY = ["gpu-check", "--family", "shared", "--replay", str(H200), "--forms", "cp.async", "--cases", "3"]


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_tour_says_each_stage_on_stderr_as_it_starts(tmp_path, capsys):
    assert main(["tour", "--out", str(tmp_path), "--no-pictures"]) == 0
    assert capsys.readouterr().err.splitlines() == TOUR_STAGES


def test_the_tour_with_json_keeps_stderr_quiet_off_a_terminal(tmp_path, capsys):
    assert main(["tour", "--out", str(tmp_path), "--no-pictures", "--json"]) == 0
    assert capsys.readouterr().err == ""


def test_progress_asks_for_the_tours_stages_with_json_too(tmp_path, capsys):
    assert main(["tour", "--out", str(tmp_path), "--no-pictures", "--json", "--progress"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == TOUR_STAGES and "maps" in json.loads(out)


def test_quiet_silences_the_tours_stages(tmp_path, capsys):
    assert main(["tour", "--out", str(tmp_path), "--no-pictures", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_on_a_terminal_a_stage_counts_its_items_in_place():
    term = _Terminal()
    stages = Stages("fragsim tour", True, term)
    stages.stage("drawing 3 pictures")
    for done in (1, 2, 3):
        stages.count(done, 3)
    stages.end()
    text = term.getvalue()
    assert text.startswith("fragsim tour: drawing 3 pictures ...\n\r  1/3 (")
    assert "\r  3/3 (" in text and text.endswith("\n") and text.count("\n") == 2


def test_a_replay_with_json_on_a_terminal_shows_its_progress_on_stderr(capsys, monkeypatch):
    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    assert main([*REPLAY, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    lines = term.getvalue().split("\n")        # a terminal line is rewritten in place after "\r"
    assert lines[0].startswith("device: replay of ")
    assert sum(line.startswith("\rcp.async.") for line in lines) == len(report["results"]) == 4


def test_progress_asks_for_a_replays_progress_with_json_off_a_terminal(capsys):
    assert main([*REPLAY, "--json", "--progress"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["mismatches"] == 0
    assert err.startswith("device: replay of ") and err.count("\ncp.async.") == 4
