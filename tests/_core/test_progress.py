"""abstain._core.progress: when the progress bar draws, and the one progress argument."""

from __future__ import annotations

import io

import pytest

from abstain._core.progress import ProgressBar, as_show


@pytest.mark.parametrize("show,tty,drawn", [
    ("auto", False, False), ("auto", True, True), ("always", False, True),
    ("always", True, True), ("never", True, False),
])
def test_progress_bar_draws_on_a_terminal_unless_told(show, tty, drawn, tty_stream):
    stream = tty_stream() if tty else io.StringIO()
    bar = ProgressBar("job", show=show, stream=stream, width=4)
    bar(1, 2)
    bar(2, 2)
    bar.close()
    assert stream.getvalue() == ("\rjob [##..] 1/2\rjob [####] 2/2\n" if drawn else "")


def test_progress_argument_maps_to_one_show_mode(tty_stream):
    # the torch adapter's progress=True is an explicit request: it draws on any stream
    stream = io.StringIO()
    ProgressBar("job", show=as_show(True), stream=stream)(1, 1)
    assert "job [" in stream.getvalue()
    stream = tty_stream()
    ProgressBar("job", show=as_show(False), stream=stream)(1, 1)
    assert stream.getvalue() == ""
    assert as_show("auto") == "auto"
    with pytest.raises(ValueError, match="progress must be True, False or one of"):
        as_show("sometimes")
    with pytest.raises(ValueError, match="show must be one of 'auto', 'always', 'never'; got 'x'"):
        ProgressBar("job", show="x")
