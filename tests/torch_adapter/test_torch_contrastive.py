"""abstain.torch._contrastive: CSI / SupCSI training on shifted images (skipped without torch).

The loss is compared with a direct transcription of its definition (loops over anchors and
positives); training is seeded and learns (on images whose class is plain, the loss falls
and the shift head finds the rotations); the outputs per shift are those of the network on
the rotated images; the checkpoint is read back without pickle, and a damaged one is
refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from abstain.detectors import CSI, ShiftedBaseScores, SupCSI, rotations  # noqa: E402
from abstain.torch import (  # noqa: E402
    CSINetwork,
    contrastive_loss,
    csi_outputs,
    load_csi,
    read_state_config,
    save_csi,
    save_state,
    train_csi,
)


def _reference_loss(z: np.ndarray, labels: np.ndarray, t: float) -> float:
    """Khosla et al.'s L_out, anchor by anchor and positive by positive."""
    u = z / np.linalg.norm(z, axis=1, keepdims=True)
    n = len(z)
    losses = []
    for i in range(n):
        others = [a for a in range(n) if a != i]
        denom = math.log(sum(math.exp(float(u[i] @ u[a]) / t) for a in others))
        pos = [p for p in others if labels[p] == labels[i]]
        if pos:
            losses.append(-sum(float(u[i] @ u[p]) / t - denom for p in pos) / len(pos))
    return float(np.mean(losses))


@pytest.mark.parametrize("seed", range(4))
def test_the_loss_is_its_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(9, 3))
    labels = rng.integers(0, 3, 9)  # supervised: several positives, some anchors without
    got = contrastive_loss(torch.tensor(z), torch.tensor(labels), 0.3).item()
    assert got == pytest.approx(_reference_loss(z, labels, 0.3), rel=1e-10)
    pairs = np.repeat(np.arange(4), 2)  # SimCLR: each instance's two views
    got = contrastive_loss(torch.tensor(z[:8]), torch.tensor(pairs), 0.5).item()
    assert got == pytest.approx(_reference_loss(z[:8], pairs, 0.5), rel=1e-10)
    with pytest.raises(ValueError, match="at least one anchor a positive"):
        contrastive_loss(torch.tensor(z[:3]), torch.tensor([0, 1, 2]), 0.5)
    with pytest.raises(ValueError, match="temperature must be"):
        contrastive_loss(torch.tensor(z), torch.tensor(labels), 0.0)


def _images(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Images of 3 classes: a bright bar at the top, the left or the centre (each bar
    changes under a rotation, so the shift can be told), on faint noise."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    x = rng.random((n, 28, 28)) * 40
    x[y == 0, 2:6, 6:22] = 255
    x[y == 1, 6:22, 2:6] = 255
    x[y == 2, 10:14, 4:18] = 255
    return x.astype(np.uint8), y


def test_training_is_seeded_and_learns_the_shifts() -> None:
    images, _ = _images(48)
    kw = {"epochs": 6, "batch_size": 16, "width": 4, "projection_dim": 8, "lr": 1e-2}
    state = torch.get_rng_state()
    a = train_csi(images, random_state=1, **kw)
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is left alone
    b = train_csi(images, random_state=1, **kw)
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(),
                                                 b.state_dict().values(), strict=True))
    assert a.history_ == b.history_ and len(a.history_) == 6
    assert a.history_[-1] < a.history_[0]
    out = csi_outputs(a, images)
    assert out["logits"].shape == (4, 48, 4)  # CSI: a shift head
    accuracy = np.mean([np.mean(out["logits"][j].argmax(1) == j) for j in range(4)])
    assert accuracy > 0.5  # the head tells the rotations apart (chance: 0.25)
    assert not a.training
    assert np.all(np.isfinite(CSI().fit_outputs(out).score_outputs(out)))


def test_csi_outputs_restores_each_submodule_s_own_mode() -> None:
    # every submodule was set to the network's flag: a BatchNorm frozen in eval mode in a
    # network in training mode came back in training mode
    net = CSINetwork(width=4, projection_dim=8, random_state=0)
    net.train()
    norms = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    norms[0].eval()
    csi_outputs(net, np.zeros((3, 28, 28), np.uint8))
    assert net.training and not norms[0].training and all(m.training for m in norms[1:])


def test_images_beyond_float32_are_refused_as_such() -> None:
    net = CSINetwork(width=4, projection_dim=8, random_state=0)
    with pytest.raises(ValueError, match=r"^images must lie within float32's range"):
        csi_outputs(net, np.full((2, 28, 28), 1e39))
    with pytest.raises(ValueError, match=r"^images must be finite"):
        csi_outputs(net, np.full((2, 28, 28), np.inf))


def test_supcsi_takes_labels_and_its_joint_head_feeds_the_base_scores() -> None:
    images, y = _images(36, 1)
    net = train_csi(images, y, epochs=2, batch_size=12, width=4, projection_dim=8)
    assert (net.n_classes, net.n_shifts) == (3, 4)
    out = csi_outputs(net, images)
    assert out["logits"].shape == (4, 36, 12) and out["features"].shape == (4, 36, 16)
    # the outputs of shift j are the network's on the images turned by j quarter turns
    turned = torch.from_numpy(rotations(images, shifts=(1,))[0].astype(np.float32) / 255)
    with torch.no_grad():
        f, z, logits = net(turned[:, None])
    np.testing.assert_allclose(out["projections"][1], z.double().numpy(), rtol=1e-6)
    np.testing.assert_allclose(out["logits"][1], logits.double().numpy(), rtol=1e-6)
    kinds = ("cos", "norm", "shift", "supcsi")
    base = ShiftedBaseScores(kinds=kinds).fit(out["projections"], y)
    S = base.score(out["projections"], logits=out["logits"])
    assert S.shape == (36, 16) and np.all(np.isfinite(S))
    sup = SupCSI().fit_outputs(out).score_outputs(out)
    assert sup.shape == (36,) and np.all((-1.0 <= sup) & (sup <= -1.0 / 3))


def test_a_checkpoint_is_plain_arrays_and_json(tmp_path) -> None:
    net = CSINetwork(n_shifts=2, n_classes=3, width=4, projection_dim=8, random_state=0)
    path = tmp_path / "csi.npz"
    save_csi(net, path)
    assert read_state_config(path) == {"format": "abstain.csi-network/1", "n_shifts": 2,
                                       "n_classes": 3, "width": 4, "projection_dim": 8}
    back = load_csi(path)
    assert back.config() == net.config() and not back.training
    x = torch.rand(3, 1, 28, 28)
    net.eval()
    for got, want in zip(back(x), net(x), strict=True):
        assert torch.equal(got, want)
    other = tmp_path / "linear.npz"
    save_state(torch.nn.Linear(2, 2), other)
    with pytest.raises(ValueError, match="must be a network written by save_csi"):
        load_csi(other)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="must be an .npz file written by save_state"):
        load_csi(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="net must be a CSINetwork"):
        save_csi(torch.nn.Linear(2, 2), tmp_path / "x.npz")  # type: ignore[arg-type]


def test_a_turned_image_gives_its_shifted_outputs_rolled() -> None:
    """The outputs of images turned by a quarter turn are the images' outputs per shift,
    rolled by one shift; views (negative strides of np.rot90, reversed rows, read-only
    arrays) are taken as they are."""
    images, _ = _images(6)
    net = CSINetwork(width=4, projection_dim=8, random_state=0).eval()
    out = csi_outputs(net, images)
    turned = np.rot90(images, 1, axes=(1, 2))  # a view with a negative stride
    assert any(st < 0 for st in turned.strides)
    got = csi_outputs(net, turned)
    for k in out:
        np.testing.assert_allclose(got[k], np.roll(out[k], -1, axis=0), rtol=1e-5, atol=1e-6)
    frozen = images[::-1]
    frozen.flags.writeable = False
    back = csi_outputs(net, frozen)
    for k in out:
        np.testing.assert_allclose(back[k], out[k][:, ::-1], rtol=1e-6, atol=1e-6)


def test_bad_input_is_refused() -> None:
    images, y = _images(8)
    with pytest.raises(ValueError, match=r"images must be a non-empty array of 28x28 images"):
        train_csi(np.zeros((4, 32, 32), np.uint8))
    with pytest.raises(ValueError, match="images must be finite"):
        train_csi(np.full((4, 28, 28), np.nan))
    with pytest.raises(ValueError, match="labels must be non-negative integers, one per image"):
        train_csi(images, y[:3])
    with pytest.raises(ValueError, match="batch_size must be at least 2"):
        train_csi(images, batch_size=1)
    with pytest.raises(ValueError, match="shifts must be distinct quarter turns"):
        train_csi(images, shifts=(0, 0))
    with pytest.raises(ValueError, match="device must name a torch device"):
        train_csi(images, device="abacus")
    with pytest.raises(ValueError, match="epochs must be an integer >= 1"):
        train_csi(images, epochs=0)
    net = CSINetwork(width=4, projection_dim=8)
    with pytest.raises(ValueError, match="shifts must be the network's 4 shifts"):
        csi_outputs(net, images, shifts=(0, 1))


def test_the_history_is_the_mean_loss_of_the_images_trained_on(monkeypatch) -> None:
    # a lone last image of an epoch has no negative and is skipped: it is not in the mean
    import abstain.torch._contrastive as contrastive

    seen: list[float] = []
    loss = contrastive.contrastive_loss

    def recorded(*args, **kwargs):
        out = loss(*args, **kwargs)
        seen.append(float(out.detach()))
        return out

    monkeypatch.setattr(contrastive, "contrastive_loss", recorded)
    images, _ = _images(5)
    net = train_csi(images, epochs=1, batch_size=4, width=2, projection_dim=4, head_weight=0.0)
    assert len(seen) == 1 and net.history_ == [pytest.approx(seen[0], rel=1e-12, abs=0.0)]
    with pytest.raises(ValueError, match="images must hold at least 2 images"):
        train_csi(images[:1])


def test_training_leaves_the_callers_images_without_gradient_and_refuses_text():
    # train_csi wrote gradients into an image tensor that required them
    images = torch.rand(8, 28, 28, requires_grad=True)
    train_csi(images, epochs=1, batch_size=4, width=2, projection_dim=4, random_state=0)
    assert images.grad is None
    with pytest.raises(ValueError, match=r"^images must be a numeric array or tensor of images; "
                       r"got dtype <U3\.$"):
        csi_outputs(CSINetwork(width=2, projection_dim=4, random_state=0), np.array(["abc"]))
    with pytest.raises(ValueError, match=r"^net must be a CSINetwork .*; got Linear\.$"):
        csi_outputs(torch.nn.Linear(2, 2), np.zeros((2, 28, 28), np.uint8))


def test_a_compiled_csi_network_is_taken():
    net = CSINetwork(width=2, projection_dim=4, random_state=0).eval()
    compiled = torch.compile(net, backend="eager")
    images = np.zeros((3, 28, 28), np.uint8)
    a, b = csi_outputs(net, images), csi_outputs(compiled, images)
    np.testing.assert_array_equal(a["logits"], b["logits"])
