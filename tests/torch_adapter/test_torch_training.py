"""abstain.torch._training: the seeded SmallCNN and train_classifier (skipped without torch)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from abstain.torch import SmallCNN, extract, last_layer, train_classifier  # noqa: E402


def test_small_cnn_shapes_features_and_seed() -> None:
    state = torch.get_rng_state()
    a = SmallCNN(n_classes=3, width=2, feature_dim=6, random_state=0)
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is left alone
    b = SmallCNN(n_classes=3, width=2, feature_dim=6, random_state=0)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    x = torch.randn(4, 1, 28, 28)
    out = extract(a, x)
    assert out.logits.shape == (4, 3) and out.features.shape == (4, 6)
    assert out.features.min() >= 0.0  # ReLU output feeds the classifier
    assert last_layer(a).weight.shape == (3, 6)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, 1, 28, 28\)"):
        a(torch.zeros(2, 1, 32, 32))
    with pytest.raises(ValueError, match="width must be a positive integer"):
        SmallCNN(width=0)


def _toy_images(n: int = 48) -> tuple[torch.Tensor, np.ndarray]:
    rng = np.random.default_rng(0)
    y = np.arange(n) % 2
    x = rng.normal(0.0, 0.3, size=(n, 1, 28, 28)).astype(np.float32)
    x[y == 1, :, :14] += 1.0  # class 1: bright top half
    return torch.from_numpy(x), y


def test_seeded_work_of_several_threads_runs_one_after_the_other() -> None:
    # torch's RNG and deterministic mode are process-wide: threads building seeded models
    # and training at once must get the weights of a serial run and leave both as they were
    import copy
    from concurrent.futures import ThreadPoolExecutor

    def weights(m: nn.Module) -> torch.Tensor:
        return torch.cat([p.detach().flatten() for p in m.parameters()])

    def build(_: int) -> torch.Tensor:
        return weights(SmallCNN(n_classes=3, width=2, feature_dim=6, random_state=0))

    g = torch.Generator().manual_seed(1)
    X, y = torch.randn(40, 4, generator=g), torch.arange(40) % 2
    start = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))

    def train(_: int) -> torch.Tensor:  # dropout draws from the global RNG
        return weights(train_classifier(copy.deepcopy(start), X, y, epochs=2, batch_size=8,
                                        random_state=0))

    built, trained = build(0), train(0)
    state = torch.get_rng_state()
    with ThreadPoolExecutor(4) as ex:
        many = list(ex.map(build, range(12))) + list(ex.map(train, range(8)))
    assert all(torch.equal(w, built) for w in many[:12])
    assert all(torch.equal(w, trained) for w in many[12:])
    assert torch.equal(torch.get_rng_state(), state)
    assert not torch.are_deterministic_algorithms_enabled()


def test_train_classifier_is_deterministic() -> None:
    x, y = _toy_images()
    rng_state = torch.get_rng_state()
    deterministic = torch.are_deterministic_algorithms_enabled()
    runs = [
        train_classifier(SmallCNN(n_classes=2, width=2, feature_dim=4, random_state=1), x, y,
                         epochs=1, batch_size=16, random_state=seed)
        for seed in (0, 0, 1)
    ]
    s0, s1, s2 = (m.state_dict() for m in runs)
    assert all(torch.equal(s0[k], s1[k]) for k in s0)
    assert not all(torch.equal(s0[k], s2[k]) for k in s0)  # another shuffle
    assert torch.equal(torch.get_rng_state(), rng_state)
    assert torch.are_deterministic_algorithms_enabled() == deterministic
    assert not runs[0].training


def test_train_classifier_learns_a_separable_problem() -> None:
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 30)
    centres = np.array([[-3.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
    X = centres[y] + rng.normal(0.0, 0.5, size=(90, 2))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
    train_classifier(model, X, y, epochs=30, batch_size=16, lr=0.01)
    acc = (extract(model, X).logits.argmax(1) == y).mean()
    assert acc == 1.0


def test_train_classifier_errors() -> None:
    x, y = _toy_images(8)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 2))
    with pytest.raises(ValueError, match="y must be one-dimensional with one label per row"):
        train_classifier(model, x, y[:5])
    with pytest.raises(ValueError, match="y must hold integer class labels"):
        train_classifier(model, x, y + 0.5)
    with pytest.raises(ValueError, match="y must hold labels 0, ..., K-1; got minimum -1"):
        train_classifier(model, x, y - 1)
    before = [p.detach().clone() for p in model.parameters()]
    late = np.array(y, copy=True)
    late[-1] = 7  # in the last batch: refused before any step, the model untouched
    for labels in (y + 1, late):
        with pytest.raises(ValueError, match="K = 2 outputs; got label"):
            train_classifier(model, x, labels, batch_size=2)
        assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    for huge in (float("inf"), 1e30):
        with pytest.raises(ValueError, match="non-integer, infinite or huge values"):
            train_classifier(model, x, np.where(np.asarray(y) > 0, huge, 0.0))
    with pytest.raises(ValueError, match="epochs must be a non-negative integer"):
        train_classifier(model, x, y, epochs=-1)
    with pytest.raises(ValueError, match="lr must be a finite number"):
        train_classifier(model, x, y, lr=0.0)
    x_bad = x.clone()
    x_bad[0, 0, 0, 0] = float("inf")
    with pytest.raises(ValueError, match="X must be finite; got 1 NaN or infinite"):
        train_classifier(model, x_bad, y)
