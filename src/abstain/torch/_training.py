"""A small, seeded CNN and its training loop for the CPU benchmarks."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import nn
from torch.nn import functional as F

from .._core.progress import ProgressBar, as_show
from .._core.validation import check_positive, plain
from ._adapter import as_input, check_batch_size, check_finite, from_numpy

#: Held while a block reseeds torch's one global RNG or switches its deterministic mode:
#: both are process-wide, so two threads doing so at once drew from each other's seed and
#: restored each other's state. Such blocks of several threads run one after the other.
_TORCH_GLOBALS = threading.RLock()
os.register_at_fork(after_in_child=lambda: globals().update(_TORCH_GLOBALS=threading.RLock()))


@contextlib.contextmanager
def seeded(random_state: int | None) -> Iterator[None]:
    """Draw from torch's RNG seeded with ``random_state`` inside the block, on a forked RNG
    so the global one is left as it was (one thread at a time); None: the global RNG as it
    is."""
    if random_state is None:
        yield
        return
    with _TORCH_GLOBALS, torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(random_state))
        yield


class SmallCNN(nn.Module):
    """A small CNN for 28x28 images (FashionMNIST, MNIST).

    ``[conv3x3-ReLU-conv3x3-ReLU-maxpool2] x 2`` with ``width`` and ``2 * width``
    channels (padding 1, so 28 -> 14 -> 7), then ``flatten -> Linear(feature_dim)
    -> ReLU -> Linear(n_classes)``. The features that :func:`extract` returns by
    default are the input of the last layer, the ReLU output: non-negative, as
    ReAct-style clipping assumes.

    Parameters
    ----------
    n_classes : int, default 10
    in_channels : int, default 1
    width : int, default 16
        Channels of the first two convolutions (the next two have ``2 * width``).
    feature_dim : int, default 128
        Dimension d of the penultimate features.
    random_state : int, optional
        Seed of the weight initialisation, drawn from a forked torch RNG so the
        global one is left as it was. None uses the global torch RNG.

    Attributes
    ----------
    backbone : torch.nn.Sequential
        Everything up to and including the penultimate ReLU.
    classifier : torch.nn.Linear
        The last layer, ``feature_dim -> n_classes``.

    Examples
    --------
    >>> import torch
    >>> from abstain.torch import SmallCNN
    >>> model = SmallCNN(n_classes=10, width=4, feature_dim=8, random_state=0)
    >>> model(torch.zeros(2, 1, 28, 28)).shape
    torch.Size([2, 10])
    >>> model.classifier
    Linear(in_features=8, out_features=10, bias=True)
    """

    image_size = 28

    def __init__(
        self,
        n_classes: int = 10,
        in_channels: int = 1,
        width: int = 16,
        feature_dim: int = 128,
        *,
        random_state: int | None = None,
    ) -> None:
        super().__init__()
        for name, value in (("n_classes", n_classes), ("in_channels", in_channels),
                            ("width", width), ("feature_dim", feature_dim)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {plain(value)}.")
        self.n_classes = int(n_classes)
        self.in_channels = int(in_channels)
        with seeded(random_state):
            w, w2 = int(width), 2 * int(width)
            side = self.image_size // 4
            self.backbone = nn.Sequential(
                nn.Conv2d(in_channels, w, 3, padding=1), nn.ReLU(),
                nn.Conv2d(w, w, 3, padding=1), nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(w, w2, 3, padding=1), nn.ReLU(),
                nn.Conv2d(w2, w2, 3, padding=1), nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Flatten(),
                nn.Linear(w2 * side * side, int(feature_dim)), nn.ReLU(),
            )
            self.classifier = nn.Linear(int(feature_dim), int(n_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of shape (batch, n_classes) for ``x`` of shape (batch, C, 28, 28)."""
        if x.ndim != 4 or tuple(x.shape[1:]) != (self.in_channels, 28, 28):
            raise ValueError(
                f"x must have shape (batch, {self.in_channels}, 28, 28); "
                f"got {tuple(x.shape)}."
            )
        out: torch.Tensor = self.classifier(self.backbone(x))
        return out


def _as_labels(y: ArrayLike | torch.Tensor, n: int) -> torch.Tensor:
    if isinstance(y, torch.Tensor):
        t = y.detach().cpu()
    else:
        arr = np.asarray(y)
        if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise ValueError(f"y must hold integer class labels; got dtype {arr.dtype}.")
        t = from_numpy(arr)
    if t.ndim != 1 or t.shape[0] != n:
        raise ValueError(
            f"y must be one-dimensional with one label per row of X ({n}); got shape "
            f"{tuple(t.shape)}."
        )
    if t.is_floating_point():
        if not bool((t == t.round()).all()) or not bool(torch.isfinite(t).all()) or (
                t.numel() and float(t.abs().max()) >= 2.0**62):
            raise ValueError("y must hold integer class labels; got non-integer, infinite or "
                             "huge values.")
    elif t.dtype == torch.bool or t.is_complex():
        raise ValueError(f"y must hold integer class labels; got dtype {t.dtype}.")
    t = t.to(torch.int64)
    if int(t.min()) < 0:
        raise ValueError(f"y must hold labels 0, ..., K-1; got minimum {int(t.min())}.")
    return t


def train_classifier(
    model: nn.Module,
    X: ArrayLike | torch.Tensor,
    y: ArrayLike | torch.Tensor,
    *,
    epochs: int = 5,
    batch_size: int = 128,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    random_state: int = 0,
    progress: bool | str = False,
) -> nn.Module:
    """Train ``model`` with Adam on the cross-entropy, reproducibly.

    The order of the rows is shuffled every epoch by a ``torch.Generator`` seeded
    with ``random_state``; other torch randomness (dropout) draws from a forked
    global RNG seeded with ``random_state``, so the caller's global RNG state is
    left as it was. ``torch.use_deterministic_algorithms(True, warn_only=True)``
    holds for the duration (the previous setting is restored). Both are
    process-wide, so calls from several threads train one after the other. Two runs
    from the same initial weights and seed give bit-identical weights with the same
    torch build and thread count.

    Parameters
    ----------
    model : torch.nn.Module
        Maps a batch of ``X`` to logits (batch, K). Trained in place on the device
        of its first parameter.
    X : ndarray or torch.Tensor of shape (n, ...)
        Inputs, e.g. from :func:`images_to_tensor`. Floating NumPy data is converted
        to the model's parameter dtype.
    y : array-like of shape (n,)
        Integer class labels in 0, ..., K-1.
    epochs : int, default 5
    batch_size : int, default 128
        The last batch of an epoch may be smaller.
    lr : float, default 1e-3
        Adam's learning rate.
    weight_decay : float, default 0.0
        Adam's L2 penalty.
    random_state : int, default 0
    progress : bool or {"auto", "always", "never"}, default False
        Draw a progress bar over all batches on stderr: True always, "auto" only on a
        terminal.

    Returns
    -------
    torch.nn.Module
        ``model`` itself, trained, in eval mode.

    Raises
    ------
    ValueError
        For empty, non-finite or mismatched ``X``/``y``, non-integer or negative
        labels, or bad ``epochs``, ``batch_size``, ``lr``, ``weight_decay``.

    Examples
    --------
    >>> import torch
    >>> from abstain.torch import train_classifier
    >>> X = torch.cat([torch.full((20, 2), -1.0), torch.full((20, 2), 1.0)])
    >>> y = torch.tensor([0] * 20 + [1] * 20)
    >>> model = torch.nn.Linear(2, 2)
    >>> model = train_classifier(model, X, y, epochs=20, batch_size=8, lr=0.1)
    >>> (model(X).argmax(1) == y).float().mean().item()
    1.0
    """
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
        raise ValueError(f"epochs must be a non-negative integer; got {plain(epochs)}.")
    batch_size = check_batch_size(batch_size)
    lr = check_positive("lr", lr)
    weight_decay = check_positive("weight_decay", weight_decay, allow_zero=True)
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)):
        raise ValueError(f"random_state must be an integer; got {plain(random_state)}.")
    Xt = as_input(model, X)
    n = int(Xt.shape[0])
    yt = _as_labels(y, n)
    check_finite(Xt, 0)
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    n_batches = -(-n // batch_size)
    bar = ProgressBar("train", show=as_show(progress))
    generator = torch.Generator().manual_seed(int(random_state))
    if int(epochs) and n:  # every label a class of the outputs, before any step
        model.eval()
        with torch.no_grad():
            k = model(Xt[:1].to(device))
        if isinstance(k, torch.Tensor) and k.ndim == 2 and int(yt.max()) >= k.shape[1]:
            raise ValueError(f"y must hold labels 0, ..., K-1 with K = {k.shape[1]} outputs; "
                             f"got label {int(yt.max())}.")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    _TORCH_GLOBALS.acquire()  # the global RNG and mode, one thread at a time
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        torch.use_deterministic_algorithms(True, warn_only=True)
        with seeded(int(random_state)):
            for epoch in range(int(epochs)):
                order = torch.randperm(n, generator=generator)
                for b in range(n_batches):
                    idx = order[b * batch_size:(b + 1) * batch_size]
                    xb, yb = Xt[idx].to(device), yt[idx].to(device)
                    optimizer.zero_grad(set_to_none=True)
                    logits = model(xb)
                    if not isinstance(logits, torch.Tensor) or logits.ndim != 2:
                        raise ValueError("model must return logits of shape (batch, n_classes).")
                    if int(yb.max()) >= logits.shape[1]:
                        raise ValueError(
                            f"y must hold labels 0, ..., K-1 with K = {logits.shape[1]} "
                            f"outputs; got label {int(yb.max())}."
                        )
                    loss = F.cross_entropy(logits, yb)
                    loss.backward()
                    optimizer.step()
                    bar(epoch * n_batches + b + 1, int(epochs) * n_batches)
    finally:
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        _TORCH_GLOBALS.release()
        model.eval()
        bar.close()
    return model
