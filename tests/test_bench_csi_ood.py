"""benchmarks/csi_ood.py: its ``--quick`` run end to end when PyTorch and FashionMNIST are
installed (the full run trains two contrastive networks, so it is not part of the suite),
and the page it renders from its results."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("csi_ood")


def test_quick_run_end_to_end(bench, tmp_path):
    pytest.importorskip("torch", reason="needs the torch extra")
    pytest.importorskip("sklearn", reason="supocsvm needs the sklearn extra")
    from abstain.datasets import load_fashion_mnist
    from abstain.exceptions import MissingDataSourceError

    try:
        load_fashion_mnist("test")
        assert bench.main(["--quick", "--quiet", "--out", str(tmp_path)]) == 0
    except MissingDataSourceError as exc:
        pytest.skip(f"source absent (make data-ood installs it): {exc}")
    md = (tmp_path / "csi_ood.md").read_text()
    for row in ("| CSI |", "| glrt-CSI |", "| SupCSI |", "| glrt-SupCSI |", "| glrt-SupCSI+ |",
                "| fisher |", "| alr |", "| auto |", "| auto, per_task |", "| single (proxy) |",
                "| auto, both kinds |", "| single (both kinds) |", "| auto, every kind |",
                "| single (every kind) |"):
        assert row in md
    assert "`auto` against `single (proxy)`" in md and "of 5." in md
    assert "`auto` with the paired test on every held-out split apart" in md
    assert "`auto` on both kinds of proxy" in md and "against `single (proxy)`: " in md
    assert "`auto` on every kind of proxy" in md and "shuffled pixels: " in md
    assert md.count("the paper: ") == 3 and "Detection rate (%) at 5% false alarms" in md
    raw = json.loads((tmp_path / "csi_ood_raw.json").read_text())
    assert raw["args"]["quick"] is True
    for per_set in raw["results"].values():
        for values in per_set.values():
            assert 0.0 <= values["auroc"] <= 1.0 and 0.0 <= values["dr"] <= 100.0
    assert bench.render(raw) == md


def test_quick_leave_one_class_out_goes_on_from_finished_classes(bench, tmp_path):
    pytest.importorskip("torch", reason="needs the torch extra")
    pytest.importorskip("sklearn", reason="supocsvm needs the sklearn extra")
    from abstain.datasets import load_fashion_mnist
    from abstain.exceptions import MissingDataSourceError

    argv = ["--mode", "loco", "--quick", "--quiet", "--out", str(tmp_path)]
    try:
        load_fashion_mnist("test")
        assert bench.main([*argv, "--classes", "1"]) == 0
    except MissingDataSourceError as exc:
        pytest.skip(f"source absent (make data-ood installs it): {exc}")
    first = json.loads((tmp_path / "csi_ood_loco_raw.json").read_text())
    assert list(first["results"]) == ["class 1"]
    assert bench.main([*argv, "--classes", "0", "1"]) == 0
    raw = json.loads((tmp_path / "csi_ood_loco_raw.json").read_text())
    assert list(raw["results"]) == ["class 0", "class 1"]  # in class order
    assert raw["per_class"]["class 1"] == first["per_class"]["class 1"]  # not run again
    md = (tmp_path / "csi_ood_loco.md").read_text()
    assert "| method | T-shirt | Trouser | avg |" in md and "at 25% false alarms" in md
    assert "Held-out classes finished: 2 of 10." in md and "| s_supCSI,1 |" in md
    assert "chose T-shirt: " in md and "; Trouser: " in md and "of 2." in md
    assert md.count("Against `single (proxy)`: ") == 1 and "| auto, per_task |" in md
    assert md.count("`auto` on both kinds of proxy") == 1 and "| auto, both kinds |" in md
    assert md.count("`auto` on every kind of proxy") == 1 and "| auto, every kind |" in md
    assert bench.render(raw) == md



def test_rotation_task_rolls_the_holdout_stacks(bench):
    """rotation_task: z-value rows and proxy inliers are the two halves of the holdout; its
    proxy outliers are the inliers' thirds with their stacks rolled by 1, 2 and 3 shifts
    (a turned image's outputs, tests/torch_adapter/test_torch_contrastive.py)."""
    import numpy as np

    rng = np.random.default_rng(0)
    c = {"projections": rng.normal(size=(4, 12, 3)), "logits": rng.normal(size=(4, 12, 2))}
    s = {"features": rng.normal(size=(4, 12, 5)), "logits": rng.normal(size=(4, 12, 2))}

    def score(c, s):  # one column per shift of the first projection and feature
        return np.hstack([c["projections"][..., 0].T, s["features"][..., 0].T])

    z, inl, outl = bench.rotation_task({"holdout": c}, {"holdout": s}, score, 0)
    assert z.shape == inl.shape == outl.shape == (6, 8)
    whole = score(c, s)
    rows = [np.flatnonzero((whole == r).all(axis=1))[0] for r in np.vstack([z, inl])]
    assert sorted(rows) == list(range(12))  # the two halves of the holdout
    rest = np.sort(rows[6:])
    for j, t in enumerate((1, 2, 3)):
        got = outl[2 * j: 2 * j + 2]
        want = np.roll(whole[rest[j::3]].reshape(2, 2, 4), -t, axis=2).reshape(2, 8)
        np.testing.assert_array_equal(got, want)


def test_shuffled_task_shuffles_the_proxy_inliers_pixels(bench):
    """shuffled_task: the halves of rotation_task, and as proxy outliers the proxy inliers'
    images with every pixel shuffled across them apart (each pixel's values kept), scored
    through the networks' outputs."""
    import numpy as np

    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, size=(12, 4, 4)).astype(np.uint8)
    seen = []

    def outputs(x):
        seen.append(x)
        return x.reshape(len(x), -1).astype(float), None

    def score(c, s):
        return c

    rotation = (np.zeros((6, 2)), np.ones((6, 2)), None)
    z, inl, outl = bench.shuffled_task(rotation, images, outputs, score, 0)
    assert z is rotation[0] and inl is rotation[1]
    (pixels,) = seen
    assert pixels.dtype == images.dtype and pixels.shape == (6, 4, 4)
    _, rest = bench._halves(12, 0)
    np.testing.assert_array_equal(np.sort(pixels, axis=0), np.sort(images[rest], axis=0))
    assert not np.array_equal(pixels, images[rest])
    np.testing.assert_array_equal(outl, pixels.reshape(6, -1))

