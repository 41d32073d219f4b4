"""abstain.torch._adapter: extract, last_layer, ODIN, images_to_tensor, saved weights, and the
missing-torch error of abstain.torch (skipped without torch)."""

from __future__ import annotations

import importlib
import json
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from abstain.torch import (  # noqa: E402
    STATE_FORMAT,
    Extracted,
    SmallCNN,
    extract,
    images_to_tensor,
    last_layer,
    load_state,
    odin_logits,
    save_state,
)


def _mlp(seed: int = 0, dropout: float = 0.0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Flatten(), nn.Linear(12, 5), nn.ReLU(), nn.Dropout(dropout), nn.Linear(5, 3)
    )


def _inputs(n: int = 7, seed: int = 1) -> torch.Tensor:
    return torch.randn(n, 1, 3, 4, generator=torch.Generator().manual_seed(seed))


def _no_hooks(model: nn.Module) -> bool:
    return all(not m._forward_pre_hooks and not m._forward_hooks for m in model.modules())


# --------------------------------------------------------------------------- extract


def test_extract_equals_manual_forward() -> None:
    model, x = _mlp(), _inputs()
    out = extract(model, x)
    assert isinstance(out, Extracted)
    with torch.no_grad():
        h = torch.relu(model[1](x.flatten(1)))
        z = model[4](h)
    assert out.logits.dtype == np.float64 and out.features.dtype == np.float64
    assert out.logits.shape == (7, 3) and out.features.shape == (7, 5)
    np.testing.assert_allclose(out.features, h.double().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out.logits, z.double().numpy(), rtol=1e-6, atol=1e-7)
    W, b = last_layer(model)
    np.testing.assert_allclose(out.features @ W.T + b, out.logits, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch_size", [1, 3, 7, 100])
def test_extract_batch_size_invariance(batch_size: int) -> None:
    model, x = _mlp(), _inputs()
    ref = extract(model, x, batch_size=256)
    out = extract(model, x, batch_size=batch_size)
    np.testing.assert_allclose(out.logits, ref.logits, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out.features, ref.features, rtol=1e-6, atol=1e-7)


def test_extract_numpy_input_takes_the_model_dtype() -> None:
    model, x = _mlp(), _inputs()
    ref = extract(model, x)
    out = extract(model, x.numpy().astype(np.float64))  # float64 data, float32 model
    np.testing.assert_array_equal(out.logits, ref.logits)


def test_extract_runs_in_eval_mode_and_restores_each_flag() -> None:
    model, x = _mlp(dropout=0.9), _inputs()
    model.train()
    model[1].eval()  # a mixed state must come back as it was
    before = [m.training for m in model.modules()]
    a = extract(model, x)
    b = extract(model, x)
    np.testing.assert_array_equal(a.logits, b.logits)  # dropout off
    assert [m.training for m in model.modules()] == before


def test_extract_removes_its_hook_also_on_error() -> None:
    model, x = _mlp(), _inputs()
    extract(model, x)
    assert _no_hooks(model) and not model[4]._forward_pre_hooks
    x_bad = x.clone()
    x_bad[5, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="X must be finite; got 1 NaN.* in rows 4 to 5"):
        extract(model, x_bad, batch_size=2)
    assert _no_hooks(model)


def test_extract_custom_feature_layer() -> None:
    model, x = _mlp(), _inputs()
    first = extract(model, x, feature_layer=model[1])  # input of the first Linear
    np.testing.assert_allclose(first.features, x.flatten(1).double().numpy(), rtol=1e-7)
    pre_relu = extract(model, x, feature_layer=model[2])
    with torch.no_grad():
        np.testing.assert_allclose(pre_relu.features, model[1](x.flatten(1)).double().numpy(),
                                   rtol=1e-6, atol=1e-7)
    flat = extract(model, x, feature_layer=model[0])  # a 4-D input is flattened
    assert flat.features.shape == (7, 12)
    assert _no_hooks(model)


def test_extract_progress_bar(capsys: pytest.CaptureFixture[str]) -> None:
    extract(_mlp(), _inputs(), batch_size=2, progress=True)
    assert "extract [" in capsys.readouterr().err
    extract(_mlp(), _inputs(), batch_size=2)
    assert capsys.readouterr().err == ""


class _WithUnused(nn.Module):
    """``inner`` plus a submodule that forward never calls."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.unused = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


def test_extract_errors() -> None:
    model, x = _mlp(), _inputs()
    with pytest.raises(ValueError, match="X must hold at least one sample"):
        extract(model, x[:0])
    with pytest.raises(ValueError, match="model must contain an nn.Linear"):
        extract(nn.Sequential(nn.Flatten(), nn.ReLU()), x)
    with pytest.raises(ValueError, match="feature_layer must be a submodule"):
        extract(model, x, feature_layer=nn.Linear(5, 3))
    with_unused = _WithUnused(model)
    with pytest.raises(ValueError, match="feature_layer must run exactly once.*0 times"):
        extract(with_unused, x, feature_layer=with_unused.unused)
    assert _no_hooks(with_unused)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        extract(model, x, batch_size=0)
    with pytest.raises(ValueError, match="X must be a numeric array"):
        extract(model, np.array(["a", "b"]))
    with pytest.raises(ValueError, match=r"model must return logits of shape \(batch"):
        extract(nn.Sequential(nn.Linear(4, 3), nn.Flatten(0)), torch.zeros(2, 4))
    assert _no_hooks(model)


def test_extract_keeps_the_feature_layer_input_that_a_later_in_place_op_changes() -> None:
    # the hook kept the input tensor itself: ReLU(inplace=True) as the feature layer, or after
    # a Dropout taken as one, returned the rectified values (min 0.0 instead of -1.85)
    torch.manual_seed(0)
    x = torch.randn(6, 4)
    for model, layer in ((m := torch.nn.Sequential(torch.nn.Linear(4, 5),
                                                    torch.nn.ReLU(inplace=True),
                                                    torch.nn.Linear(5, 3)), m[1]),
                         (m2 := torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Dropout(0.2),
                                                    torch.nn.ReLU(inplace=True),
                                                    torch.nn.Linear(5, 3)), m2[1])):
        got = extract(model, x, feature_layer=layer).features
        want = model[0](x).detach().double().numpy()
        assert want.min() < 0
        np.testing.assert_array_equal(got, want)


def test_numpy_input_beyond_a_float16_model_is_refused_as_such() -> None:
    # cast first, then checked: 1e5 became inf and the data were called "not finite"
    model = torch.nn.Sequential(torch.nn.Linear(4, 3)).half()
    x = np.full((2, 4), 1e5)
    with pytest.raises(ValueError, match=r"^X must lie within the range of the model's dtype "
                                         r"torch\.float16 \(largest 65504\.0\); got a value of "
                                         r"100000\.0\.$"):
        extract(model, x)
    with pytest.raises(ValueError, match=r"^X must be finite"):
        extract(model, np.full((2, 4), np.nan))


def test_extract_feature_layer_run_twice() -> None:
    shared = nn.Linear(4, 4)

    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.shared = shared
            self.head = nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.shared(self.shared(x)))

    model = Twice()
    with pytest.raises(ValueError, match="ran 2 times"):
        extract(model, torch.zeros(3, 4), feature_layer=shared)
    assert _no_hooks(model)


# --------------------------------------------------------------------------- last_layer


def test_last_layer_returns_the_final_linear() -> None:
    model = _mlp()
    W, b = last_layer(model)
    assert W.dtype == np.float64 and W.shape == (3, 5) and b.shape == (3,)
    np.testing.assert_array_equal(W, model[4].weight.detach().double().numpy())
    np.testing.assert_array_equal(b, model[4].bias.detach().double().numpy())
    W1, _ = last_layer(model, model[1])
    assert W1.shape == (5, 12)
    no_bias = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2, bias=False))
    assert last_layer(no_bias).bias.tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="layer must be an nn.Linear; got ReLU"):
        last_layer(model, model[2])
    with pytest.raises(ValueError, match="model must contain an nn.Linear"):
        last_layer(nn.ReLU())


# --------------------------------------------------------------------------- ODIN


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("temperature", [1.0, 3.0, 1000.0])
def test_odin_equals_the_analytic_gradient_of_a_linear_model(temperature: float) -> None:
    torch.manual_seed(0)
    model = nn.Linear(5, 4).double()
    X = np.random.default_rng(0).normal(size=(9, 5))
    W = model.weight.detach().numpy()
    b = model.bias.detach().numpy()
    eps = 0.01
    z = X @ W.T + b
    p = _softmax(z / temperature)
    yhat = z.argmax(axis=1)
    grad = (W[yhat] - p @ W) / temperature  # d/dx log softmax(f/T)_yhat
    x_tilde = X - eps * np.sign(-grad)
    got = odin_logits(model, X, temperature=temperature, epsilon=eps, batch_size=4)
    np.testing.assert_allclose(got, x_tilde @ W.T + b, rtol=1e-12, atol=1e-12)


def test_odin_raises_the_max_softmax_and_leaves_no_parameter_grad() -> None:
    model, x = _mlp(dropout=0.5), _inputs(50)
    model.train()
    before = [m.training for m in model.modules()]
    plain = extract(model, x).logits
    z = odin_logits(model, x, temperature=1000.0, epsilon=1e-3, batch_size=16)
    assert z.shape == (50, 3) and z.dtype == np.float64
    assert np.all(_softmax(z / 1000.0).max(1) >= _softmax(plain / 1000.0).max(1) - 1e-12)
    assert all(p.grad is None for p in model.parameters())
    assert [m.training for m in model.modules()] == before
    np.testing.assert_allclose(odin_logits(model, x, epsilon=0.0), plain, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(odin_logits(model, x, epsilon=1e-3, batch_size=50), z,
                               rtol=1e-6, atol=1e-7)


def test_odin_detector_perturbs_through_the_adapter() -> None:
    from abstain.detectors import ODIN

    model, x = _mlp(), _inputs(20)
    det = ODIN(temperature=100.0, epsilon=2e-3)
    expected = det.score(odin_logits(model, x, temperature=100.0, epsilon=2e-3))
    # float32 passes over batches of 8 and of 20 rows take different BLAS kernels (and an
    # AVX-512 CPU others again): the logits agree to about 1e-7 relative, the scores at
    # T = 100 to less; epsilon = 0 instead of 2e-3 moves them by more than 1e-5
    got = det.score_inputs(model, x, batch_size=8)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    unperturbed = det.score(extract(model, x).logits)
    assert np.max(np.abs(unperturbed - expected) / np.abs(expected)) > 1e-5
    # epsilon reaches the perturbation: ODIN with epsilon = 0 is the plain tempered MSP
    np.testing.assert_allclose(ODIN(temperature=100.0, epsilon=0.0).score_inputs(model, x),
                               det.score(extract(model, x).logits), rtol=1e-6)
    assert np.all(det.score_inputs(model, x) <= det.score(extract(model, x).logits) + 1e-12)
    with pytest.raises(ValueError, match="epsilon must be"):
        ODIN(epsilon=-1.0).score_inputs(model, x)


def test_tune_detector_reaches_odin_epsilon_through_the_model() -> None:
    from abstain.detectors import ODIN
    from abstain.metrics import auroc
    from abstain.models import tune_detector

    model, x_id, x_ood = _mlp(), _inputs(30, seed=2), 3.0 * _inputs(20, seed=3)
    tuned = tune_detector(ODIN(temperature=10.0), {"epsilon": [0.0, 0.01, 0.1]}, x_id, x_ood,
                          model=model)
    labels = np.repeat([False, True], [30, 20])
    for cand, got in zip(tuned.params, tuned.scores, strict=True):
        det = ODIN(temperature=10.0, **cand)
        s = np.r_[det.score_inputs(model, x_id), det.score_inputs(model, x_ood)]
        assert got == auroc(labels, s)
    shuffled = tune_detector(ODIN(), {"epsilon": [0.0, 0.01]}, x_id, model=model,
                             random_state=0)
    assert shuffled.criterion == "shuffled" and shuffled.scores.shape == (2,)


def test_odin_errors() -> None:
    model, x = _mlp(), _inputs()
    with pytest.raises(ValueError, match="temperature must be a finite number in"):
        odin_logits(model, x, temperature=0.0)
    with pytest.raises(ValueError, match=r"epsilon must be a finite number in \[0, inf\)"):
        odin_logits(model, x, epsilon=-0.1)
    with pytest.raises(ValueError, match="X must be floating point"):
        odin_logits(model, torch.zeros(3, 1, 3, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="X must hold at least one sample"):
        odin_logits(model, np.zeros((0, 1, 3, 4), np.float32))


# --------------------------------------------------------------------------- images_to_tensor


def test_images_to_tensor() -> None:
    X = np.array([[[0, 255, 51], [102, 204, 153]]] * 2, dtype=np.uint8)
    t = images_to_tensor(X)
    assert t.shape == (2, 1, 2, 3) and t.dtype == torch.float32
    np.testing.assert_allclose(t[0, 0].numpy(), X[0] / 255.0, rtol=1e-6)
    n = images_to_tensor(X, mean=0.2860, std=0.3530)
    np.testing.assert_allclose(n[1, 0].numpy(), (X[1] / 255.0 - 0.2860) / 0.3530, rtol=1e-5)
    with pytest.raises(ValueError, match=r"X must be a non-empty uint8 array of shape \(n, H, W\)"):
        images_to_tensor(X.astype(np.float32))
    with pytest.raises(ValueError, match="X must be a non-empty uint8 array"):
        images_to_tensor(X[0])
    with pytest.raises(ValueError, match="mean and std must be given together"):
        images_to_tensor(X, mean=0.5)
    with pytest.raises(ValueError, match="std must be a finite number"):
        images_to_tensor(X, mean=0.5, std=0.0)
    with pytest.raises(ValueError, match="mean must be a finite real number; got nan"):
        images_to_tensor(X, mean=float("nan"), std=0.5)


# --------------------------------------------------------------------------- weights


def test_save_load_round_trip(tmp_path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(),
                          nn.Linear(2 * 26 * 26, 3))
    model.train()
    model(torch.randn(4, 1, 28, 28))  # running stats and num_batches_tracked change
    path = tmp_path / "weights.bin"
    save_state(model, path)
    assert path.exists() and list(tmp_path.iterdir()) == [path]  # exactly there, no temp left
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["__abstain_meta__"][()]))
    assert meta["format"] == STATE_FORMAT == "abstain.torch-state/1"
    assert meta["shapes"]["3.weight"] == [3, 1352]
    torch.manual_seed(1)
    other = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(),
                          nn.Linear(2 * 26 * 26, 3))
    assert load_state(other, str(path)) is other
    a, b = model.state_dict(), other.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) and a[k].dtype == b[k].dtype for k in a)


def test_load_state_mismatch_errors(tmp_path) -> None:
    path = tmp_path / "cnn.npz"
    save_state(SmallCNN(width=2, feature_dim=4, random_state=0), path)
    with pytest.raises(ValueError, match=r"must match the model; got .*'classifier.weight' has "
                                         r"shape \(10, 4\) in the file and \(10, 8\)"):
        load_state(SmallCNN(width=2, feature_dim=8), path)
    with pytest.raises(ValueError, match=r"missing keys \['weight', 'bias'\]; unexpected keys"):
        load_state(nn.Linear(4, 10), path)
    with pytest.raises(ValueError, match="has dtype float32 in the file and torch.float64"):
        load_state(SmallCNN(width=2, feature_dim=4).double(), path)
    plain = tmp_path / "plain.npz"
    np.savez(plain, weight=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="without its metadata entry"):
        load_state(nn.Linear(2, 2), plain)
    text = tmp_path / "text.npz"
    text.write_text("not a zip file")
    with pytest.raises(ValueError, match="path must be an .npz file written by save_state"):
        load_state(nn.Linear(2, 2), text)
    with pytest.raises(FileNotFoundError):
        load_state(nn.Linear(2, 2), tmp_path / "missing.npz")
    # damaged files: a zipfile or EOF error escaped before
    good = tmp_path / "linear.npz"
    save_state(nn.Linear(2, 2), good)
    raw = good.read_bytes()
    (tmp_path / "empty.npz").write_bytes(b"")
    (tmp_path / "cut.npz").write_bytes(raw[: len(raw) // 2])
    flipped = bytearray(raw)
    at = raw.index(b"weight.npy") + 200
    flipped[at] ^= 0xFF
    (tmp_path / "flipped.npz").write_bytes(bytes(flipped))
    for name in ("empty.npz", "cut.npz", "flipped.npz"):
        with pytest.raises(ValueError, match=r"(must be an \.npz file written by save_state|"
                                             r"is damaged)"):
            load_state(nn.Linear(2, 2), tmp_path / name)


def test_save_state_refuses_bfloat16(tmp_path) -> None:
    with pytest.raises(ValueError, match="must have a dtype NumPy can hold; got torch.bfloat16"):
        save_state(nn.Linear(2, 2).to(torch.bfloat16), tmp_path / "w.npz")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["allow_pickle", "file", "fix_imports"])
def test_save_state_keeps_a_parameter_named_as_a_keyword_of_savez(name, tmp_path) -> None:
    class One(nn.Module):
        def __init__(self, value: float) -> None:
            super().__init__()
            self.register_parameter(name, nn.Parameter(torch.full((2,), value)))

    save_state(One(3.0), tmp_path / "w.npz")
    loaded = load_state(One(0.0), tmp_path / "w.npz")
    assert getattr(loaded, name).tolist() == [3.0, 3.0]


# --------------------------------------------------------------------------- missing torch


def test_missing_torch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    monkeypatch.delitem(sys.modules, "abstain.torch")
    with pytest.raises(ImportError, match=r"abstain.torch needs PyTorch: pip install "
                                          r"'abstain\[torch\]' \(torch==2.13.0, the CPU wheel\)"):
        importlib.import_module("abstain.torch")


def test_a_damaged_metadata_entry_and_inference_mode_and_a_non_model(tmp_path):
    # a bad CRC in the metadata entry ended in zipfile.BadZipFile; ODIN under
    # torch.inference_mode() in "element 0 of tensors does not require grad"; a function
    # as the model in "'function' object has no attribute 'parameters'"
    import zipfile

    src = tmp_path / "ok.npz"
    save_state(nn.Linear(3, 2), src)
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = z.getinfo("__abstain_meta__.npy")
    name, extra = (int.from_bytes(data[info.header_offset + k:info.header_offset + k + 2],
                                  "little") for k in (26, 28))
    data[info.header_offset + 30 + name + extra + info.compress_size // 2] ^= 0xFF
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"^the metadata of .* must be the JSON of save_state"):
        load_state(nn.Linear(3, 2), bad)
    model, x = _mlp(), _inputs()
    plain_run = odin_logits(model, x, epsilon=0.01)
    with torch.inference_mode():
        np.testing.assert_array_equal(odin_logits(model, x, epsilon=0.01), plain_run)
    with pytest.raises(ValueError, match=r"^model must be a torch\.nn\.Module .*; got function"):
        odin_logits(lambda t: t, x)
