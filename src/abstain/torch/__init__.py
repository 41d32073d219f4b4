"""A thin PyTorch adapter: logits, features and last-layer weights as NumPy arrays.

The detectors of :mod:`abstain` take NumPy arrays: logits of shape (n, K),
penultimate features of shape (n, d), and the last linear layer's weight ``W``
(K, d) and bias ``b`` (K,). This module produces them from any
``torch.nn.Module`` (the ``torch`` extra: ``pip install 'abstain[torch]'``):

* :func:`extract` runs the model in eval mode, in batches, and returns the logits
  and the input of its last ``nn.Linear`` (or of any submodule you name);
* :func:`last_layer` returns that layer's ``W`` and ``b``;
* :func:`odin_logits` returns the logits of ODIN's perturbed inputs (Liang et al.,
  2018);
* :class:`SmallCNN`, :func:`train_classifier` and :func:`images_to_tensor` train a
  small, seeded CNN on 28x28 grayscale images on a CPU in a few minutes;
* :func:`save_state` and :func:`load_state` cache weights in an ``.npz`` file read
  without pickle;
* :func:`train_csi` trains CSI's or SupCSI's contrastive network on shifted images
  (:class:`CSINetwork`, :func:`contrastive_loss`), :func:`csi_outputs` returns its
  outputs per shift for the base scores, :func:`save_csi` / :func:`load_csi` keep it.

Every array returned is float64 NumPy. Nothing here computes a score: the
detectors do, with one direction everywhere (higher = more OOD).
"""

from .._core.optional import require

require("torch", "torch", "abstain.torch")

from ._adapter import (  # noqa: E402  (after the check that torch is installed)
    STATE_FORMAT,
    Extracted,
    LastLayer,
    extract,
    images_to_tensor,
    last_layer,
    load_state,
    odin_logits,
    read_state_config,
    save_state,
)
from ._contrastive import (  # noqa: E402
    CSI_FORMAT,
    CSINetwork,
    contrastive_loss,
    csi_outputs,
    load_csi,
    save_csi,
    train_csi,
)
from ._training import (  # noqa: E402
    SmallCNN,
    train_classifier,
)

__all__ = [
    "Extracted",
    "LastLayer",
    "extract",
    "last_layer",
    "odin_logits",
    "SmallCNN",
    "train_classifier",
    "images_to_tensor",
    "save_state",
    "load_state",
    "read_state_config",
    "STATE_FORMAT",
    "CSINetwork",
    "train_csi",
    "csi_outputs",
    "contrastive_loss",
    "save_csi",
    "load_csi",
    "CSI_FORMAT",
]
