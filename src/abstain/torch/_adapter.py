"""Logits, features, last-layer weights and ODIN's perturbed logits of any ``torch.nn.Module``
as NumPy arrays; weights cached in ``.npz`` files read without pickle."""

from __future__ import annotations

import contextlib
import json
import os
import warnings
import zipfile
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray
from torch import nn
from torch.nn import functional as F

from .._core.files import atomic_path, save_npz
from .._core.progress import ProgressBar, as_show
from .._core.validation import check_positive, plain

#: The format name written into every file of :func:`save_state`.
STATE_FORMAT = "abstain.torch-state/1"


_META_KEY = "__abstain_meta__"


class Extracted(NamedTuple):
    """What :func:`extract` returns.

    Attributes
    ----------
    logits : ndarray of shape (n, K), float64
        The model's outputs.
    features : ndarray of shape (n, d), float64
        The input of the feature layer, flattened to one row per sample.
    """

    logits: NDArray[np.float64]
    features: NDArray[np.float64]


class LastLayer(NamedTuple):
    """What :func:`last_layer` returns: ``logits = features @ weight.T + bias``.

    Attributes
    ----------
    weight : ndarray of shape (K, d), float64
    bias : ndarray of shape (K,), float64
        Zeros for a layer built with ``bias=False``.
    """

    weight: NDArray[np.float64]
    bias: NDArray[np.float64]


def check_batch_size(batch_size: Any) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer; got {plain(batch_size)}.")
    return int(batch_size)


def _param_dtype(model: nn.Module) -> torch.dtype:
    """The dtype of the model's first floating parameter (float32 if it has none)."""
    for p in model.parameters():
        if p.is_floating_point():
            return p.dtype
    return torch.float32


def from_numpy(arr: NDArray[Any]) -> torch.Tensor:
    """``torch.from_numpy`` without its warning for read-only arrays (never written to here)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(np.ascontiguousarray(arr))


def as_input(model: nn.Module, X: ArrayLike | torch.Tensor, name: str = "X") -> torch.Tensor:
    """``X`` as a tensor with at least one row; floating NumPy data takes the model's dtype."""
    if isinstance(X, torch.Tensor):
        t = X.detach()
    else:
        arr = np.asarray(X)
        if arr.dtype == object or not (
            np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_
        ):
            raise ValueError(f"{name} must be a numeric array or tensor; got dtype {arr.dtype}.")
        t = from_numpy(arr)
        if t.is_floating_point():
            dtype = _param_dtype(model)
            t = cast_in_range(t, dtype, name, f"the range of the model's dtype {dtype}",
                              "a value")
    if t.ndim == 0 or t.shape[0] == 0:
        raise ValueError(
            f"{name} must hold at least one sample along its first axis; "
            f"got shape {tuple(t.shape)}."
        )
    return t


def cast_in_range(t: torch.Tensor, dtype: torch.dtype, name: str, range_of: str,
                  item: str) -> torch.Tensor:
    """``t`` cast to ``dtype``; finite values beyond its range (1e5 for float16), which the
    cast would make infinite, are refused as such, not later as the data's NaN."""
    cast = t.to(dtype)
    if (cast.dtype != t.dtype and not bool(torch.isfinite(cast).all())
            and bool(torch.isfinite(t).all())):
        worst = float(t.reshape(-1)[int(t.abs().argmax())])
        raise ValueError(f"{name} must lie within {range_of} (largest "
                         f"{torch.finfo(dtype).max!r}); got {item} of {worst!r}.")
    return cast


def check_finite(t: torch.Tensor, start: int, name: str = "X") -> None:
    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
        bad = int((~torch.isfinite(t)).sum())
        raise ValueError(
            f"{name} must be finite; got {bad} NaN or infinite value(s) in rows {start} "
            f"to {start + int(t.shape[0]) - 1}."
        )


def _last_linear(model: nn.Module) -> nn.Linear:
    last = None
    for m in model.modules():
        if isinstance(m, nn.Linear):
            last = m
    if last is None:
        raise ValueError(
            f"model must contain an nn.Linear layer when feature_layer is None; "
            f"got {type(model).__name__} without one. Pass feature_layer=<the submodule "
            f"whose input is the feature vector>."
        )
    return last


def _check_submodule(model: nn.Module, layer: nn.Module, name: str) -> None:
    if not isinstance(layer, nn.Module) or not any(m is layer for m in model.modules()):
        raise ValueError(
            f"{name} must be a submodule of model (an element of model.modules()); "
            f"got {type(layer).__name__}."
        )


@contextlib.contextmanager
def eval_mode(model: nn.Module) -> Iterator[None]:
    """Put every submodule in eval mode; restore each one's own flag afterwards."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, training in modes:
            m.training = training


def _logits_2d(out: Any, n: int) -> torch.Tensor:
    if not isinstance(out, torch.Tensor):
        raise ValueError(
            f"model must return a tensor of logits; got {type(out).__name__}. Wrap the model "
            f"in an nn.Module whose forward returns the logits."
        )
    if out.ndim != 2 or out.shape[0] != n:
        raise ValueError(
            f"model must return logits of shape (batch, n_classes); got shape "
            f"{tuple(out.shape)} for a batch of {n}."
        )
    return out


def _to_numpy(t: torch.Tensor) -> NDArray[np.float64]:
    return t.detach().to(device="cpu", dtype=torch.float64).numpy()


def extract(
    model: nn.Module,
    X: ArrayLike | torch.Tensor,
    *,
    batch_size: int = 256,
    feature_layer: nn.Module | None = None,
    device: str | torch.device = "cpu",
    progress: bool | str = False,
) -> Extracted:
    """Logits and penultimate features of ``model`` on ``X``, as float64 NumPy arrays.

    The model runs in eval mode under ``torch.no_grad()``, ``batch_size`` rows at a
    time; each submodule's train/eval flag is restored afterwards. The features
    are the input of ``feature_layer``, captured with a forward pre-hook that is
    removed on return (also on an error), and flattened to one row per sample.

    Parameters
    ----------
    model : torch.nn.Module
        Maps a batch of inputs to logits of shape (batch, K). It must already be on
        ``device``; it is not moved.
    X : ndarray or torch.Tensor of shape (n, ...)
        The inputs, e.g. (n, 1, 28, 28) images. A floating NumPy array is converted
        to the dtype of the model's parameters (float64 data to a float32 model);
        a tensor is used as it is.
    batch_size : int, default 256
        Rows per forward pass. The results do not depend on it beyond the
        floating-point noise of batched kernels.
    feature_layer : torch.nn.Module, optional
        The submodule whose input is the feature vector. Default: the last
        ``nn.Linear`` in ``model.modules()`` order, so that
        ``logits == features @ W.T + b`` with ``(W, b) = last_layer(model)``.
        It must run exactly once per forward pass.
    device : str or torch.device, default "cpu"
        Where each batch is sent before the forward pass.
    progress : bool or {"auto", "always", "never"}, default False
        Draw a progress bar on stderr: True always, "auto" only on a terminal.

    Returns
    -------
    Extracted
        ``logits`` of shape (n, K) and ``features`` of shape (n, d), float64.

    Raises
    ------
    ValueError
        For an empty or non-finite ``X``, a model without ``nn.Linear`` when
        ``feature_layer`` is None, a ``feature_layer`` that is not a submodule or does
        not run exactly once per forward pass, or outputs that are not (batch, K).

    Examples
    --------
    >>> import torch
    >>> from abstain.torch import extract
    >>> _ = torch.manual_seed(0)
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(),
    ...                             torch.nn.Linear(3, 2))
    >>> out = extract(model, torch.randn(5, 4), batch_size=2)
    >>> out.logits.shape, out.features.shape, out.logits.dtype
    ((5, 2), (5, 3), dtype('float64'))
    >>> bool((out.features >= 0).all())        # the ReLU output feeds the last layer
    True
    """
    batch_size = check_batch_size(batch_size)
    if feature_layer is None:
        feature_layer = _last_linear(model)
    else:
        _check_submodule(model, feature_layer, "feature_layer")
    t = as_input(model, X)
    n = int(t.shape[0])
    captured: list[torch.Tensor] = []

    def hook(module: nn.Module, args: tuple[Any, ...]) -> None:
        if not args or not isinstance(args[0], torch.Tensor):
            raise ValueError(
                f"feature_layer must take a tensor as its first positional input; "
                f"got {type(args[0]).__name__ if args else 'no positional input'}."
            )
        # a copy: an in-place op later in the forward pass (ReLU(inplace=True)) would
        # otherwise change the captured input
        captured.append(args[0].detach().clone())

    logits: NDArray[np.float64] | None = None
    features: NDArray[np.float64] | None = None
    bar = ProgressBar("extract", show=as_show(progress))
    handle = feature_layer.register_forward_pre_hook(hook)
    try:
        with eval_mode(model), torch.no_grad():
            for start in range(0, n, batch_size):
                xb = t[start:start + batch_size]
                check_finite(xb, start)
                m = int(xb.shape[0])
                captured.clear()
                out = _logits_2d(model(xb.to(device)), m)
                if len(captured) != 1:
                    raise ValueError(
                        f"feature_layer must run exactly once per forward pass; it ran "
                        f"{len(captured)} times."
                    )
                feat = captured[0]
                if feat.ndim == 0 or feat.shape[0] != m:
                    raise ValueError(
                        f"feature_layer's input must have one row per sample; got shape "
                        f"{tuple(feat.shape)} for a batch of {m}."
                    )
                feat = feat.reshape(m, -1)
                if logits is None or features is None:
                    logits = np.empty((n, out.shape[1]), dtype=np.float64)
                    features = np.empty((n, feat.shape[1]), dtype=np.float64)
                logits[start:start + m] = _to_numpy(out)
                features[start:start + m] = _to_numpy(feat)
                bar(start + m, n)
    finally:
        handle.remove()
        bar.close()
    assert logits is not None and features is not None
    return Extracted(logits, features)


def last_layer(model: nn.Module, layer: nn.Linear | None = None) -> LastLayer:
    """Weight and bias of the model's final ``nn.Linear``, as float64 NumPy arrays.

    Parameters
    ----------
    model : torch.nn.Module
    layer : torch.nn.Linear, optional
        The layer to read. Default: the last ``nn.Linear`` in ``model.modules()``
        order, the layer whose input :func:`extract` returns as features.

    Returns
    -------
    LastLayer
        ``weight`` of shape (K, d) and ``bias`` of shape (K,) (zeros for
        ``bias=False``), so that ``logits = features @ weight.T + bias``.

    Raises
    ------
    ValueError
        When the model has no ``nn.Linear`` or ``layer`` is not one of its
        ``nn.Linear`` submodules.

    Examples
    --------
    >>> import torch
    >>> from abstain.torch import last_layer
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(),
    ...                             torch.nn.Linear(3, 2, bias=False))
    >>> W, b = last_layer(model)
    >>> W.shape, b.tolist()
    ((2, 3), [0.0, 0.0])
    """
    if layer is None:
        layer = _last_linear(model)
    else:
        _check_submodule(model, layer, "layer")
        if not isinstance(layer, nn.Linear):
            raise ValueError(f"layer must be an nn.Linear; got {type(layer).__name__}.")
    W = _to_numpy(layer.weight)
    b = _to_numpy(layer.bias) if layer.bias is not None else np.zeros(W.shape[0])
    return LastLayer(W, b)


def odin_logits(
    model: nn.Module,
    X: ArrayLike | torch.Tensor,
    *,
    temperature: float = 1000.0,
    epsilon: float = 0.0014,
    batch_size: int = 256,
    progress: bool | str = False,
) -> NDArray[np.float64]:
    r"""Logits of ODIN's perturbed inputs (Liang, Li and Srikant, ICLR 2018, eq. 2).

    Each input is moved a step ``epsilon`` against the gradient sign of the
    temperature-scaled softmax score of its predicted class,

    .. math::

        \tilde x = x - \varepsilon\,\operatorname{sign}\bigl(-\nabla_x
        \log S_{\hat y}(x; T)\bigr), \qquad
        S_k(x; T) = \frac{\exp(f_k(x)/T)}{\sum_j \exp(f_j(x)/T)},
        \quad \hat y = \arg\max_k f_k(x),

    which raises the maximum softmax score, more so for in-distribution inputs.
    The returned logits are the raw ``f(x~)``, not divided by ``T``: the ODIN
    detector applies the temperature (and the one score direction, higher = more
    OOD).

    The model runs in eval mode (each submodule's flag is restored afterwards); the
    gradient is taken with ``torch.autograd.grad`` with respect to the inputs only,
    so no ``.grad`` of a model parameter is created or changed. The gradients of a
    batch are taken of the sum of its per-sample scores, which equals the
    per-sample gradient for any model that treats samples independently (true in
    eval mode for the usual layers, batch norm included). Ties in ``argmax`` go to
    the first class.

    Parameters
    ----------
    model : torch.nn.Module
        Maps a batch of floating inputs to logits (batch, K); inputs are sent to the
        device of its first parameter.
    X : ndarray or torch.Tensor of shape (n, ...), floating
        The inputs, in the units the model takes (see ``epsilon``).
    temperature : float, default 1000.0
        ``T`` of the softmax whose score is perturbed; the paper's value.
    epsilon : float, default 0.0014
        Step size, >= 0, in the model's input units. The paper tunes it on
        validation data over 21 values in [0, 0.004]; 0.0014 is the value of its
        reference code for CIFAR-10 (with pixels in [0, 1]). If the model takes
        normalised inputs ``(x - mean) / std``, a step of ``e`` in [0, 1] pixel units
        is ``e / std`` in the model's units: pass ``epsilon=e / std`` (the reference
        code divides the gradient sign by the per-channel std for this reason).
        ``epsilon=0`` returns the plain logits.
    batch_size : int, default 256
    progress : bool or {"auto", "always", "never"}, default False
        Draw a progress bar on stderr: True always, "auto" only on a terminal.

    Returns
    -------
    ndarray of shape (n, K), float64
        ``f(x~)`` for every input.

    Raises
    ------
    ValueError
        For an empty, non-floating or non-finite ``X``, ``temperature <= 0``,
        ``epsilon < 0``, or outputs that are not (batch, K).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from abstain.torch import odin_logits
    >>> _ = torch.manual_seed(0)
    >>> model = torch.nn.Linear(4, 3)
    >>> x = torch.randn(6, 4)
    >>> def msp(z, T=1000.0):
    ...     return torch.softmax(torch.as_tensor(z) / T, 1).max(1).values
    >>> z = odin_logits(model, x, epsilon=0.01)
    >>> z.shape, bool((msp(z) >= msp(model(x).detach())).all())
    ((6, 3), True)
    >>> np.allclose(odin_logits(model, x, epsilon=0.0), model(x).detach().numpy())
    True
    """
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be a torch.nn.Module (ODIN perturbs its inputs by its "
                         f"gradient); got {type(model).__name__}.")
    temperature = check_positive("temperature", temperature)
    epsilon = check_positive("epsilon", epsilon, allow_zero=True)
    batch_size = check_batch_size(batch_size)
    t = as_input(model, X)
    if not t.is_floating_point():
        raise ValueError(f"X must be floating point for ODIN's gradient; got {t.dtype}.")
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    n = int(t.shape[0])
    result: NDArray[np.float64] | None = None
    bar = ProgressBar("odin", show=as_show(progress))
    try:
        # inference mode (Lightning's validation step) has no autograd: left for the steps
        with eval_mode(model), torch.inference_mode(False):
            for start in range(0, n, batch_size):
                xb = t[start:start + batch_size]
                check_finite(xb, start)
                m = int(xb.shape[0])
                x = xb.to(device).detach().clone().requires_grad_(True)
                with torch.enable_grad():
                    out = _logits_2d(model(x), m)
                    pred = out.argmax(dim=1, keepdim=True)
                    score = F.log_softmax(out / temperature, dim=1).gather(1, pred).sum()
                    (grad,) = torch.autograd.grad(score, x)
                with torch.no_grad():
                    # x - eps * sign(-grad) == x + eps * sign(grad)
                    x_tilde = x.detach() - epsilon * torch.sign(-grad)
                    z = _logits_2d(model(x_tilde), m)
                if result is None:
                    result = np.empty((n, z.shape[1]), dtype=np.float64)
                result[start:start + m] = _to_numpy(z)
                bar(start + m, n)
    finally:
        bar.close()
    assert result is not None
    return result


def images_to_tensor(
    X: ArrayLike,
    mean: float | None = None,
    std: float | None = None,
) -> torch.Tensor:
    """Grayscale uint8 images of shape (n, H, W) as a float32 tensor (n, 1, H, W).

    Pixels are scaled to [0, 1] (divided by 255), then, when ``mean`` and ``std``
    are given, normalised to ``(x - mean) / std``.

    Parameters
    ----------
    X : ndarray of shape (n, H, W), uint8
        E.g. the 28x28 images of an IDX file.
    mean, std : float, optional
        Both or neither; in [0, 1] pixel units (FashionMNIST's training set has
        mean 0.2860 and std 0.3530).

    Returns
    -------
    torch.Tensor of shape (n, 1, H, W), float32

    Raises
    ------
    ValueError
        When ``X`` is not a non-empty 3-D uint8 array, only one of ``mean`` and
        ``std`` is given, or ``std <= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.torch import images_to_tensor
    >>> x = images_to_tensor(np.array([[[0, 255], [51, 102]]], dtype=np.uint8))
    >>> x.shape, x.dtype, [round(v, 6) for v in x.flatten().tolist()]
    (torch.Size([1, 1, 2, 2]), torch.float32, [0.0, 1.0, 0.2, 0.4])
    >>> images_to_tensor(np.full((1, 2, 2), 255, np.uint8), mean=0.5, std=0.25).flatten()
    tensor([2., 2., 2., 2.])
    """
    arr = np.asarray(X)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[0] == 0:
        raise ValueError(
            f"X must be a non-empty uint8 array of shape (n, H, W); got an array of "
            f"shape {arr.shape} and dtype {arr.dtype}."
        )
    if (mean is None) != (std is None):
        raise ValueError(
            f"mean and std must be given together; got mean={plain(mean)} and std={plain(std)}."
        )
    out = torch.from_numpy(arr.astype(np.float32)).div_(255.0)
    if mean is not None and std is not None:
        std = check_positive("std", std)
        if isinstance(mean, bool) or not isinstance(mean, (int, float, np.integer, np.floating)) \
                or not np.isfinite(mean):
            raise ValueError(f"mean must be a finite real number; got {plain(mean)}.")
        out = out.sub_(float(mean)).div_(std)
    return out.unsqueeze(1)


def save_state(model: nn.Module, path: str | os.PathLike[str], *,
               config: dict[str, Any] | None = None) -> None:
    """Write ``model.state_dict()`` to an ``.npz`` file that loads without pickle.

    Each tensor becomes one NumPy array under its state-dict key; one more entry
    holds a JSON string with the format name ``"abstain.torch-state/1"``, every
    key's shape and dtype, and ``config`` (read back by :func:`read_state_config`). The
    file is written atomically to exactly ``path`` (no ``.npz`` is appended).

    Parameters
    ----------
    model : torch.nn.Module
    path : str or path-like
    config : dict, optional
        Plain JSON values that rebuild the model (its constructor's arguments, say).

    Raises
    ------
    ValueError
        For a tensor NumPy cannot hold (bfloat16, complex32 ...).

    Examples
    --------
    >>> import os, tempfile, torch
    >>> from abstain.torch import load_state, save_state
    >>> a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    >>> path = os.path.join(tempfile.mkdtemp(), "linear.npz")
    >>> save_state(a, path)
    >>> _ = load_state(b, path)
    >>> torch.equal(a.weight, b.weight)
    True
    """
    arrays: dict[str, NDArray[Any]] = {}
    meta: dict[str, Any] = {"format": STATE_FORMAT, "shapes": {}, "dtypes": {}}
    if config is not None:
        try:
            meta["config"] = json.loads(json.dumps(config, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"config must hold plain JSON values; got {plain(config)}.") \
                from exc
    for key, value in model.state_dict().items():
        if key == _META_KEY:  # pragma: no cover - a key nobody uses
            raise ValueError(f"model.state_dict() must not have the key {_META_KEY!r}.")
        try:
            arr = value.detach().cpu().numpy()
        except (TypeError, RuntimeError) as exc:
            raise ValueError(
                f"state_dict entry {key!r} must have a dtype NumPy can hold; got "
                f"{value.dtype}. Convert the model (e.g. model.float()) before saving."
            ) from exc
        arrays[key] = arr
        meta["shapes"][key] = list(arr.shape)
        meta["dtypes"][key] = arr.dtype.str
    arrays[_META_KEY] = np.array(json.dumps(meta, sort_keys=True))
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        save_npz(fh, arrays)  # any key, also "file" or "allow_pickle"


def _torch_dtype(dtype: np.dtype[Any]) -> torch.dtype | None:
    try:
        return torch.from_numpy(np.empty(0, dtype=dtype)).dtype
    except TypeError:
        return None


def _open_state(path: str | os.PathLike[str]) -> Any:
    """The ``NpzFile`` of a :func:`save_state` file and its metadata, or ``ValueError``."""
    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:  # empty, truncated
        raise ValueError(
            f"path must be an .npz file written by save_state; got {str(path)!r}."
        ) from exc
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(
            f"path must be an .npz file written by save_state; got {str(path)!r}, "
            f"a single array."
        )
    if _META_KEY not in data.files:
        data.close()
        raise ValueError(
            f"path must be a file written by save_state ({STATE_FORMAT}); got "
            f"{str(path)!r} without its metadata entry."
        )
    try:
        meta = json.loads(str(data[_META_KEY][()]))
    except (ValueError, TypeError, OSError, EOFError, zipfile.BadZipFile) as exc:  # bad CRC
        data.close()
        raise ValueError(f"the metadata of {str(path)!r} must be the JSON of save_state; "
                         "the file is damaged.") from exc
    if not isinstance(meta, dict) or meta.get("format") != STATE_FORMAT:
        data.close()
        raise ValueError(
            f"path must hold format {STATE_FORMAT!r}; got "
            f"{meta.get('format') if isinstance(meta, dict) else meta!r}."
        )
    return data, meta


def read_state_config(path: str | os.PathLike[str]) -> Any:
    """The ``config`` that :func:`save_state` wrote into ``path`` (None where none was).

    Examples
    --------
    >>> import os, tempfile, torch
    >>> from abstain.torch import read_state_config, save_state
    >>> path = os.path.join(tempfile.mkdtemp(), "linear.npz")
    >>> save_state(torch.nn.Linear(3, 2), path, config={"in": 3, "out": 2})
    >>> read_state_config(path)
    {'in': 3, 'out': 2}
    """
    data, meta = _open_state(path)
    data.close()
    return meta.get("config")


def load_state(model: nn.Module, path: str | os.PathLike[str]) -> nn.Module:
    """Load weights written by :func:`save_state` into ``model``, in place.

    The file is read with ``np.load(allow_pickle=False)``. Its keys must be exactly
    the model's state-dict keys, with the same shapes and dtypes.

    Parameters
    ----------
    model : torch.nn.Module
    path : str or path-like

    Returns
    -------
    torch.nn.Module
        ``model``.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        When the file is not an ``"abstain.torch-state/1"`` file or does not match
        the model (missing or unexpected keys, other shapes or dtypes); the message
        lists the differences.

    Examples
    --------
    See :func:`save_state`.
    """
    data, _ = _open_state(path)
    try:
        with data:
            arrays = {k: data[k] for k in data.files if k != _META_KEY}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:  # a damaged entry
        raise ValueError(f"{str(path)!r} is damaged ({exc}); save the state again with "
                         "save_state.") from None
    target = model.state_dict()
    problems = []
    missing = [k for k in target if k not in arrays]
    unexpected = [k for k in arrays if k not in target]
    if missing:
        problems.append(f"missing keys {missing}")
    if unexpected:
        problems.append(f"unexpected keys {unexpected}")
    for key, value in target.items():
        if key not in arrays:
            continue
        arr = arrays[key]
        if tuple(arr.shape) != tuple(value.shape):
            problems.append(
                f"{key!r} has shape {tuple(arr.shape)} in the file and "
                f"{tuple(value.shape)} in the model"
            )
        elif _torch_dtype(arr.dtype) != value.dtype:
            problems.append(f"{key!r} has dtype {arr.dtype} in the file and {value.dtype} "
                            f"in the model")
    if problems:
        raise ValueError(
            f"the weights in {str(path)!r} must match the model; got " + "; ".join(problems)
            + "."
        )
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in arrays.items()})
    return model
