"""Run docs/cli.md: its Python block writes the data, each `$ abstain ...` line runs and its
output must equal the lines shown under it (stdout, or the error line on stderr)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from abstain.app.cli import main

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", PAGE.read_text(), flags=re.S)


def _sessions() -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for block in _blocks("console"):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            else:
                out[-1][1].append(line)
    return out


def test_page_has_commands():
    cmds = [c.split()[1] for c, _ in _sessions()]
    assert {"evaluate", "fit", "apply", "report"} <= set(cmds)


def test_cli_page_output(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    (setup,) = _blocks("python")
    exec(compile(setup, str(PAGE), "exec"), {})
    for command, expected in _sessions():
        argv = shlex.split(command)
        assert argv[0] == "abstain"
        code = main(argv[1:])
        out, err = capsys.readouterr()
        shown = out if code == 0 else err
        assert shown.rstrip("\n").splitlines() == expected, command
        assert (code == 0) == (not any(line.startswith("abstain ") for line in expected))
    assert Path("report.html").read_text().count("data:image/png;base64,") == 7
