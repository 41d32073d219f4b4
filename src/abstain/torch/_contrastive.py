"""Contrastive training on shifted instances (CSI and SupCSI, Tack et al. 2020) for the base
scores of the score-combining paper (Reehorst and Schniter), on a CPU.

Each image of a batch is augmented twice (a random crop of the image padded by 2 pixels,
a horizontal flip, a brightness and contrast jitter) and each view is rotated by every
shift ``R_j`` (0, 90, 180, 270 degrees by default), so a batch of ``B`` images gives
``2 T B`` samples. The encoder is a small ResNet for 28x28 images (:class:`CSINetwork`):
``f`` (the penultimate features), a projection head ``g`` (two linear layers) and a
linear head on ``f`` with ``K T`` outputs, the joint label ``k T + j`` (``K = 1`` without
class labels: a shift head). The loss is the contrastive loss of the normalised
projections at temperature ``temperature`` plus ``head_weight`` times the head's cross
entropy:

- **CSI** (no labels, SimCLR on shifted instances): the two views of one image under one
  shift are positives, every other sample a negative, its other shifts included (eq. 1 of
  Tack et al., ``L_con-SI``); the head predicts the shift (``L_cls-SI``);
- **SupCSI** (labels, SupCLR): every sample of the same class under the same shift is a
  positive (Khosla et al. 2020, over the joint labels); the head predicts the joint label,
  trained together with the encoder (the original trains it afterwards, on the frozen
  encoder).

:func:`csi_outputs` returns what the base scores take, per shift: the projections
``g(f(R_j x))`` (``s_cos,j`` and ``s_norm,j`` of CSI), the features ``f(R_j x)`` and the
head's logits.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray
from torch import nn
from torch.nn import functional as F

from .._core.progress import ProgressBar, as_show
from .._core.validation import check_positive, plain
from ._adapter import (
    cast_in_range,
    check_batch_size,
    eval_mode,
    from_numpy,
    load_state,
    read_state_config,
    save_state,
)
from ._training import seeded

__all__ = ["CSINetwork", "contrastive_loss", "csi_outputs", "load_csi", "save_csi",
           "train_csi"]

#: The format name of a network written by :func:`save_csi`.
CSI_FORMAT = "abstain.csi-network/1"


def _positive_int(name: str, value: Any, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}; got {plain(value)}.")
    return int(value)


def _shifts(shifts: Any) -> tuple[int, ...]:
    turns = tuple(shifts) if isinstance(shifts, (list, tuple)) else None
    if (not turns or any(isinstance(s, bool) or not isinstance(s, (int, np.integer))
                         or not 0 <= s <= 3 for s in turns) or len(set(turns)) != len(turns)):
        raise ValueError(f"shifts must be distinct quarter turns in 0..3 (0, 90, 180, 270 "
                         f"degrees); got {plain(shifts)}.")
    return tuple(int(s) for s in turns)


class _Block(nn.Module):
    """A basic residual block: two 3x3 convolutions with batch norm, a 1x1 shortcut where
    the shape changes."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                          nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CSINetwork(nn.Module):
    """The encoder and heads of CSI / SupCSI for 28x28 grayscale images.

    A small ResNet: a 3x3 stem of ``width`` channels, three stages of two residual blocks
    (``width``, ``2 width``, ``4 width`` channels; strides 1, 2, 2: 28 -> 14 -> 7), global
    average pooling: the features ``f`` of dimension ``4 width``. On them, the projection
    head ``g`` (``Linear -> ReLU -> Linear`` to ``projection_dim``) and a linear head of
    ``n_classes * n_shifts`` outputs (the joint label ``k * n_shifts + j``; ``n_classes =
    1`` is CSI's shift head).

    Parameters
    ----------
    n_shifts : int, default 4
    n_classes : int, default 1
        1 for CSI (no labels); the number of classes for SupCSI.
    width : int, default 16
    projection_dim : int, default 64
    random_state : int, optional
        Seed of the weight initialisation (a forked torch RNG: the global one is left
        as it was).

    Examples
    --------
    >>> import torch
    >>> from abstain.torch import CSINetwork
    >>> net = CSINetwork(n_classes=10, width=4, projection_dim=8, random_state=0)
    >>> f, z, logits = net(torch.zeros(3, 1, 28, 28))
    >>> tuple(f.shape), tuple(z.shape), tuple(logits.shape)
    ((3, 16), (3, 8), (3, 40))
    """

    image_size = 28

    def __init__(self, n_shifts: int = 4, n_classes: int = 1, *, width: int = 16,
                 projection_dim: int = 64, random_state: int | None = None) -> None:
        super().__init__()
        self.n_shifts = _positive_int("n_shifts", n_shifts)
        self.n_classes = _positive_int("n_classes", n_classes)
        self.width = _positive_int("width", width)
        self.projection_dim = _positive_int("projection_dim", projection_dim)
        with seeded(random_state):
            w = self.width
            self.stem = nn.Sequential(nn.Conv2d(1, w, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(w), nn.ReLU())
            self.stages = nn.Sequential(_Block(w, w, 1), _Block(w, w, 1),
                                        _Block(w, 2 * w, 2), _Block(2 * w, 2 * w, 1),
                                        _Block(2 * w, 4 * w, 2), _Block(4 * w, 4 * w, 1))
            d = 4 * w
            self.projection = nn.Sequential(nn.Linear(d, d), nn.ReLU(),
                                            nn.Linear(d, self.projection_dim))
            self.head = nn.Linear(d, self.n_classes * self.n_shifts)

    @property
    def feature_dim(self) -> int:
        """Dimension of the features ``f``."""
        return 4 * self.width

    def config(self) -> dict[str, int]:
        """The constructor's arguments (what :func:`save_csi` writes beside the weights)."""
        return {"n_shifts": self.n_shifts, "n_classes": self.n_classes, "width": self.width,
                "projection_dim": self.projection_dim}

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(f(x), g(f(x)), head(f(x)))`` for ``x`` of shape (batch, 1, 28, 28)."""
        if x.ndim != 4 or tuple(x.shape[1:]) != (1, self.image_size, self.image_size):
            raise ValueError(f"x must have shape (batch, 1, 28, 28); got {tuple(x.shape)}.")
        f = self.stages(self.stem(x)).mean(dim=(2, 3))
        return f, self.projection(f), self.head(f)


def contrastive_loss(z: torch.Tensor, labels: torch.Tensor, temperature: float) -> torch.Tensor:
    """The supervised contrastive loss (Khosla et al. 2020, ``L_out``) of projections ``z``
    (N, p), normalised here, whose positives are the other samples of the same label.

    ``mean over anchors i with a positive of [-1/|P(i)| sum_{p in P(i)} log(exp(s_ip / t)
    / sum_{a != i} exp(s_ia / t))]`` with ``s`` the cosine similarities. With one label
    per instance (its two views share it) it is SimCLR's NT-Xent (``L_con-SI`` of CSI when
    the instances are the shifted images).

    Examples
    --------
    >>> import torch
    >>> from abstain.torch import contrastive_loss
    >>> z = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> round(contrastive_loss(z, torch.tensor([0, 0, 1, 1]), 0.5).item(), 4)
    0.2395
    """
    t = check_positive("temperature", temperature)
    if z.ndim != 2 or labels.shape != (z.shape[0],):
        raise ValueError(f"z must be (N, p) and labels (N,); got {tuple(z.shape)} and "
                         f"{tuple(labels.shape)}.")
    u = F.normalize(z, dim=1)
    logits = u @ u.T / t
    n = z.shape[0]
    self_mask = torch.eye(n, dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(self_mask, -math.inf)
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    positive = (labels[:, None] == labels[None, :]) & ~self_mask
    count = positive.sum(dim=1)
    has = count > 0
    if not bool(has.any()):
        raise ValueError("labels must give at least one anchor a positive (two samples of "
                         "one label).")
    mean_pos = torch.where(positive, log_prob, torch.zeros_like(log_prob)).sum(dim=1)
    return -(mean_pos[has] / count[has]).mean()


def _augment(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """A random view of each image of ``x`` (batch, 1, 28, 28): a crop of the image padded
    by 2 pixels, a horizontal flip with probability 1/2, brightness and contrast jitter."""
    b, _, h, w = x.shape
    pad = F.pad(x, (2, 2, 2, 2))
    oy = torch.randint(0, 5, (b,), generator=g)
    ox = torch.randint(0, 5, (b,), generator=g)
    rows = (oy[:, None] + torch.arange(h))[:, :, None].expand(b, h, w)
    cols = (ox[:, None] + torch.arange(w))[:, None, :].expand(b, h, w)
    out = pad[torch.arange(b)[:, None, None], 0, rows, cols].unsqueeze(1)
    flip = torch.rand(b, generator=g) < 0.5
    out = torch.where(flip[:, None, None, None], out.flip(-1), out)
    bright = 1.0 + 0.4 * (2 * torch.rand(b, 1, 1, 1, generator=g) - 1)
    contrast = 1.0 + 0.4 * (2 * torch.rand(b, 1, 1, 1, generator=g) - 1)
    mean = out.mean(dim=(2, 3), keepdim=True)
    return ((out - mean) * contrast + mean) * bright


def _as_images(images: ArrayLike | torch.Tensor, name: str = "images") -> torch.Tensor:
    """Images (n, 28, 28) or (n, 1, 28, 28), uint8 (scaled to [0, 1]) or float, as a float32
    tensor (n, 1, 28, 28)."""
    # detached: the caller's tensor gets no gradient from training or scoring
    if not isinstance(images, torch.Tensor):
        arr = np.asarray(images)
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be a numeric array or tensor of images; got dtype "
                             f"{arr.dtype}.")
    t = images.detach() if isinstance(images, torch.Tensor) else from_numpy(np.asarray(images))
    if t.ndim == 3:
        t = t.unsqueeze(1)
    if t.ndim != 4 or tuple(t.shape[1:]) != (1, 28, 28) or t.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty array of 28x28 images, shape (n, 28, 28) "
                         f"or (n, 1, 28, 28); got shape {tuple(t.shape)}.")
    if t.dtype == torch.uint8:
        t = t.float() / 255.0
    elif not t.is_floating_point():
        raise ValueError(f"{name} must be uint8 or floating; got {t.dtype}.")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite; got NaN or infinite pixels.")
    # float32: the network's dtype
    return cast_in_range(t, torch.float32, name, "float32's range", "a pixel")


def _rotate(x: torch.Tensor, turns: Sequence[int]) -> torch.Tensor:
    """``x`` under each shift, stacked shift-major: (T * batch, 1, 28, 28)."""
    return torch.cat([torch.rot90(x, k, dims=(2, 3)) for k in turns])


def train_csi(images: ArrayLike | torch.Tensor, labels: ArrayLike | None = None, *,
              shifts: Sequence[int] = (0, 1, 2, 3), epochs: int = 10, batch_size: int = 32,
              lr: float = 1e-3, temperature: float = 0.5, head_weight: float = 1.0,
              width: int = 16, projection_dim: int = 64, device: str | torch.device = "cpu",
              random_state: int = 0, progress: bool | str = False) -> CSINetwork:
    """Train a :class:`CSINetwork` with CSI's loss (no ``labels``) or SupCSI's (``labels``).

    See the module docstring for the loss and the augmentations. Adam at ``lr``; each
    epoch shuffles the images with a ``torch.Generator`` seeded by ``random_state``, which
    also draws the augmentations, and the weights are initialised from the same seed, so
    two runs with the same arguments, torch build and thread count give the same network.
    Runs on ``device`` (``"cuda"`` where one is present; the CPU by default, which is
    enough for a few thousand images and a few epochs: see docs/combining.md).

    Parameters
    ----------
    images : array of shape (n, 28, 28) or (n, 1, 28, 28)
        uint8 pixels (scaled to [0, 1]) or floats.
    labels : array-like of int of shape (n,), optional
        Class labels 0..K-1: SupCSI. None: CSI.
    shifts : sequence of int, default (0, 1, 2, 3)
        The quarter turns of the shifting transformations.
    epochs : int >= 1, default 10
    batch_size : int >= 2, default 32
        Images per step (each gives ``2 * len(shifts)`` samples).
    lr : float > 0, default 1e-3
    temperature : float > 0, default 0.5
    head_weight : float >= 0, default 1.0
        Weight of the head's cross entropy.
    width, projection_dim : int, default 16, 64
        Of :class:`CSINetwork`.
    device : str or torch.device, default "cpu"
    random_state : int, default 0
    progress : bool or {"auto", "always", "never"}, default False
        A progress bar over the steps on stderr.

    Returns
    -------
    CSINetwork
        In eval mode, on ``device``; ``history_`` holds the mean loss of each epoch
        (over the images trained on: a lone last image of an epoch is skipped).

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.torch import train_csi
    >>> rng = np.random.default_rng(0)
    >>> images = (rng.random((16, 28, 28)) * 255).astype(np.uint8)
    >>> net = train_csi(images, epochs=2, batch_size=8, width=4, projection_dim=8)
    >>> len(net.history_), net.n_classes, net.n_shifts
    (2, 1, 4)
    """
    turns = _shifts(shifts)
    x = _as_images(images)
    n = int(x.shape[0])
    if n < 2:
        raise ValueError(f"images must hold at least 2 images (a contrastive batch needs "
                         f"negatives); got {n}.")
    epochs = _positive_int("epochs", epochs)
    batch_size = check_batch_size(batch_size)
    if batch_size < 2:
        raise ValueError(f"batch_size must be at least 2 (a contrastive batch needs "
                         f"negatives); got {batch_size}.")
    lr = check_positive("lr", lr)
    temperature = check_positive("temperature", temperature)
    head_weight = check_positive("head_weight", head_weight, allow_zero=True)
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)):
        raise ValueError(f"random_state must be an integer; got {plain(random_state)}.")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must name a torch device ('cpu', 'cuda', 'cuda:0'); got "
                         f"{plain(device)}.") from exc
    y = None
    if labels is not None:
        lab = np.asarray(labels)
        if lab.shape != (n,) or lab.dtype.kind not in "iu" or (lab.size and lab.min() < 0):
            raise ValueError(f"labels must be non-negative integers, one per image ({n}); "
                             f"got shape {lab.shape}, dtype {lab.dtype}.")
        y = torch.from_numpy(lab.astype(np.int64))
    n_classes = 1 if y is None else int(y.max()) + 1
    net = CSINetwork(len(turns), n_classes, width=width, projection_dim=projection_dim,
                     random_state=int(random_state)).to(dev)
    g = torch.Generator().manual_seed(int(random_state))
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    steps = -(-n // batch_size)
    bar = ProgressBar("train_csi", show=as_show(progress))
    t_count = len(turns)
    history: list[float] = []
    net.train()
    try:
        for epoch in range(epochs):
            order = torch.randperm(n, generator=g)
            total, trained = 0.0, 0
            for s in range(steps):
                idx = order[s * batch_size:(s + 1) * batch_size]
                if idx.numel() < 2:  # a lone image has no negative
                    continue
                views = torch.cat([_rotate(_augment(x[idx], g), turns) for _ in range(2)])
                b = idx.numel()
                shift = torch.arange(t_count).repeat_interleave(b).repeat(2)
                inst = torch.arange(t_count * b).repeat(2)  # one instance per image x shift
                joint = shift if y is None else y[idx].repeat(2 * t_count) * t_count + shift
                _, z, logits = net(views.to(dev))
                loss = contrastive_loss(z, (inst if y is None else joint).to(dev), temperature)
                if head_weight:
                    loss = loss + head_weight * F.cross_entropy(logits, joint.to(dev))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * b
                trained += b
                bar(epoch * steps + s + 1, epochs * steps)
            history.append(total / trained)  # a lone last image is not trained on
    finally:
        net.eval()
        bar.close()
    net.history_ = history  # type: ignore[assignment]
    return net


def csi_outputs(net: CSINetwork, images: ArrayLike | torch.Tensor, *,
                shifts: Sequence[int] = (0, 1, 2, 3), batch_size: int = 256
                ) -> dict[str, NDArray[np.float64]]:
    """The network's outputs on every shifted copy of ``images``: per shift ``j``, the
    projections ``g(f(R_j x))``, the features ``f(R_j x)`` and the head's logits.

    Returns
    -------
    dict of float64 arrays
        ``"projections"`` (T, n, projection_dim), ``"features"`` (T, n, feature_dim) and
        ``"logits"`` (T, n, n_classes * T): what
        :class:`abstain.detectors.ShiftedBaseScores` takes (``cos`` and ``norm`` on the
        projections, as CSI; the logit kinds on ``logits``).

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.torch import CSINetwork, csi_outputs
    >>> net = CSINetwork(width=4, projection_dim=8, random_state=0).eval()
    >>> out = csi_outputs(net, np.zeros((5, 28, 28), np.uint8))
    >>> {k: v.shape for k, v in out.items()}
    {'projections': (4, 5, 8), 'features': (4, 5, 16), 'logits': (4, 5, 4)}
    """
    turns = _shifts(shifts)
    if not isinstance(getattr(net, "_orig_mod", net), CSINetwork):  # torch.compile's too
        raise ValueError(f"net must be a CSINetwork (train_csi or load_csi gives one); got "
                         f"{type(net).__name__}.")
    if len(turns) != net.n_shifts:
        raise ValueError(f"shifts must be the network's {net.n_shifts} shifts; got "
                         f"{plain(shifts)}.")
    x = _as_images(images)
    batch_size = check_batch_size(batch_size)
    dev = next(net.parameters()).device
    parts: dict[str, list[list[torch.Tensor]]] = {"projections": [], "features": [],
                                                   "logits": []}
    with eval_mode(net), torch.no_grad():  # each submodule's own flag restored after
        for k in turns:
            got: dict[str, list[torch.Tensor]] = {key: [] for key in parts}
            for start in range(0, x.shape[0], batch_size):
                xb = torch.rot90(x[start:start + batch_size], k, dims=(2, 3)).to(dev)
                f, z, logits = net(xb)
                got["features"].append(f.cpu())
                got["projections"].append(z.cpu())
                got["logits"].append(logits.cpu())
            for key in parts:
                parts[key].append(got[key])
    return {key: np.stack([torch.cat(chunks).double().numpy() for chunks in per_shift])
            for key, per_shift in parts.items()}


def save_csi(net: CSINetwork, path: str | os.PathLike[str]) -> None:
    """Write a :class:`CSINetwork` to an ``.npz`` file of plain arrays and a JSON entry with
    its constructor's arguments (:func:`abstain.torch.save_state`; read without pickle by
    :func:`load_csi`).

    Examples
    --------
    >>> import os, tempfile, torch
    >>> from abstain.torch import CSINetwork, load_csi, save_csi
    >>> net = CSINetwork(width=4, projection_dim=8, random_state=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "csi.npz")
    >>> save_csi(net, path)
    >>> torch.equal(load_csi(path).head.weight, net.head.weight)
    True
    """
    if not isinstance(getattr(net, "_orig_mod", net), CSINetwork):  # torch.compile's too
        raise ValueError(f"net must be a CSINetwork; got {type(net).__name__}.")
    save_state(net, path, config={"format": CSI_FORMAT, **net.config()})


def load_csi(path: str | os.PathLike[str]) -> CSINetwork:
    """The :class:`CSINetwork` written by :func:`save_csi`, in eval mode on the CPU."""
    config = read_state_config(path)
    if not isinstance(config, dict) or config.get("format") != CSI_FORMAT:
        raise ValueError(f"path must be a network written by save_csi ({CSI_FORMAT}); got "
                         f"{str(path)!r} with configuration {json.dumps(config)}.")
    args = {k: v for k, v in config.items() if k != "format"}
    try:
        net = CSINetwork(**args)
    except TypeError as exc:
        raise ValueError(f"the configuration in {str(path)!r} must hold the arguments of "
                         f"CSINetwork; got {json.dumps(args)}.") from exc
    return load_state(net, path).eval()  # type: ignore[return-value]
