"""Neuralsym, the one-step model of the official code: a highway MLP over a product's count Morgan fingerprint.

The product's ECFP4 count fingerprint (radius 2, chirality, count simulation) is folded to ``orig_fp_size``
bits, log(1 + x) transformed and reduced to the ``final_fp_size`` bits of highest variance on the training
products; ``TemplateNN_Highway`` (one highway head layer to ``hidden_size`` with ELU and dropout 0.3, then
``depth`` highway body layers with dropout 0.1) outputs a softmax over templates (Neuralsym/model.py, the
official ``infer_config``: 1,000,000 -> 32,681 bits, hidden 300, depth 0). It is trained on single steps only.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..errors import InputError
from ..validation import check_array, check_float, check_int, check_seed, check_tensor
from ._checks import check_config, check_instances, check_sequence
from .world_routes import check_smiles
from .world_templates import Template


@dataclass(frozen=True)
class NeuralsymConfig:
    """Sizes and optimisation of Neuralsym; the fingerprint and network defaults are the official ones.

    Parameters
    ----------
    orig_fp_size : int, default 1_000_000
        Folded fingerprint size before the variance selection.
    final_fp_size : int, default 32681
        Bits kept (fewer when the training products set fewer bits).
    hidden_size : int, default 300
    depth : int, default 0
        Highway body layers.
    dropout_head, dropout_body : float, default 0.3, 0.1
    epochs : int, default 30
    lr : float, default 1e-3
    batch_size : int, default 64
    seed : int, default 0
    """

    orig_fp_size: int = 1_000_000
    final_fp_size: int = 32681
    hidden_size: int = 300
    depth: int = 0
    dropout_head: float = 0.3
    dropout_body: float = 0.1
    epochs: int = 30
    lr: float = 1e-3
    batch_size: int = 64
    seed: int = 0

    def __post_init__(self) -> None:
        for n in ("orig_fp_size", "final_fp_size", "hidden_size", "epochs", "batch_size"):
            check_int(getattr(self, n), n, min_val=1)
        if self.final_fp_size > self.orig_fp_size:
            raise InputError(f"final_fp_size ({self.final_fp_size}) must not exceed orig_fp_size ({self.orig_fp_size})")
        check_int(self.depth, "depth", min_val=0)
        for n in ("dropout_head", "dropout_body"):
            check_float(getattr(self, n), n, min_val=0.0, max_val=1.0, include_boundaries="left")
        check_float(self.lr, "lr", min_val=0.0, include_boundaries="neither")
        check_seed(self.seed)

    def validated(self) -> "NeuralsymConfig":
        """Return self (every field is checked when the config is made).

        Returns
        -------
        NeuralsymConfig
        """
        return self


def check_templates(templates, name: str = "templates") -> tuple[Template, ...]:
    """A non-empty sequence of :class:`Template` with distinct names, as a tuple.

    Parameters
    ----------
    templates : object
    name : str, default "templates"

    Returns
    -------
    tuple of Template
    """
    if isinstance(templates, Template):
        raise InputError(f"{name} must be a sequence of Template, got one Template", "wrap it in a list")
    out = tuple(check_instances(templates, name, Template))
    if len({t.name for t in out}) != len(out):
        raise InputError(f"{name} must have distinct names")
    return out


@functools.lru_cache(maxsize=50_000)
def _count_fp(smiles: str, size: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    from rdkit import Chem

    gen = _generator(size)
    fp = gen.GetCountFingerprint(Chem.MolFromSmiles(smiles)).GetNonzeroElements()
    keys = tuple(sorted(fp))
    return keys, tuple(float(np.log1p(fp[k])) for k in keys)


@functools.lru_cache(maxsize=8)
def _generator(size: int):
    from rdkit.Chem.rdFingerprintGenerator import GetMorganGenerator

    return GetMorganGenerator(radius=2, countSimulation=True, includeChirality=True, fpSize=size)


class _Highway(nn.Module):
    def __init__(self, size: int, layers: int, dropout: float, input_size: int | None = None) -> None:
        super().__init__()
        n_in = input_size or size
        self.nonlinear = nn.ModuleList([nn.Linear(n_in if i == 0 else size, size) for i in range(layers)])
        self.linear = nn.ModuleList([nn.Linear(n_in if i == 0 else size, size) for i in range(layers)])
        self.gate = nn.ModuleList([nn.Linear(n_in if i == 0 else size, size) for i in range(layers)])
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        for n, l, g in zip(self.nonlinear, self.linear, self.gate):
            gate = torch.sigmoid(g(x))
            x = self.drop(gate * F.elu(n(x)) + (1 - gate) * l(x))
        return x


class Neuralsym(nn.Module):
    """Template classifier over a product fingerprint (``TemplateNN_Highway``), with its featuriser.

    Parameters
    ----------
    templates : sequence of Template
        The classes, in order.
    indices : sequence of int
        The selected fingerprint bits (variance selection on the training products).
    config : NeuralsymConfig, optional
    """

    def __init__(self, templates: Sequence[Template], indices: Sequence[int], config: NeuralsymConfig | None = None):
        super().__init__()
        config = check_config(config, NeuralsymConfig)
        templates = check_templates(templates)
        if isinstance(indices, torch.Tensor):
            indices = indices.tolist()
        idx = check_array(indices, "indices", ndim=1, dtype="integer").astype(np.int64)
        if (idx < 0).any() or (idx >= config.orig_fp_size).any() or len(set(idx.tolist())) != idx.size:
            raise InputError(f"indices must be distinct fingerprint bits in [0, {config.orig_fp_size})")
        self.templates = templates
        self.config = config
        self.register_buffer("indices", torch.as_tensor(idx))
        self._pos = {int(b): i for i, b in enumerate(idx.tolist())}
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            self.head = _Highway(config.hidden_size, 1, config.dropout_head, input_size=len(idx))
            self.body = _Highway(config.hidden_size, config.depth, config.dropout_body)
            self.classifier = nn.Linear(config.hidden_size, len(self.templates))

    def featurize(self, smiles: Sequence[str]) -> torch.Tensor:
        """``log(1 + count)`` fingerprints of molecules on the selected bits.

        Parameters
        ----------
        smiles : sequence of str

        Returns
        -------
        torch.Tensor
            ``(N, len(indices))`` float32.
        """
        smiles = [check_smiles(s, "smiles") for s in check_sequence(smiles, "smiles", allow_empty=True)]
        x = torch.zeros(len(smiles), len(self._pos))
        for i, s in enumerate(smiles):
            keys, vals = _count_fp(s, self.config.orig_fp_size)
            for k, v in zip(keys, vals):
                j = self._pos.get(k)
                if j is not None:
                    x[i, j] = v
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Template logits.

        Parameters
        ----------
        x : torch.Tensor
            ``(N, len(indices))`` features from :meth:`featurize`.

        Returns
        -------
        torch.Tensor
            ``(N, len(templates))``.
        """
        return self.classifier(self.body(self.head(check_tensor(x, "x", shape=(None, len(self._pos))))))

    @torch.no_grad()
    def template_probs(self, smiles: str) -> torch.Tensor:
        """Softmax over the templates for one product (evaluation mode; the module's mode is restored).

        Parameters
        ----------
        smiles : str

        Returns
        -------
        torch.Tensor
            ``(len(templates),)`` probabilities.
        """
        was = self.training
        self.eval()
        try:
            return self(self.featurize([smiles]))[0].softmax(-1)
        finally:
            self.train(was)


def variance_indices(smiles: Sequence[str], orig_fp_size: int = 1_000_000, final_fp_size: int = 32681) -> list[int]:
    """The ``final_fp_size`` fingerprint bits of highest variance of ``log(1 + count)`` over molecules.

    Parameters
    ----------
    smiles : sequence of str
        Training products.
    orig_fp_size : int, default 1_000_000
    final_fp_size : int, default 32681

    Returns
    -------
    list of int
        Sorted bit indices (all set bits when fewer are set).
    """
    orig_fp_size = check_int(orig_fp_size, "orig_fp_size", min_val=1)
    final_fp_size = check_int(final_fp_size, "final_fp_size", min_val=1)
    if isinstance(smiles, str) or not len(smiles):
        raise InputError("smiles must be a non-empty sequence of SMILES strings")
    s1: dict[int, float] = {}
    s2: dict[int, float] = {}
    for s in smiles:
        keys, vals = _count_fp(check_smiles(s, "smiles"), orig_fp_size)
        for k, v in zip(keys, vals):
            s1[k] = s1.get(k, 0.0) + v
            s2[k] = s2.get(k, 0.0) + v * v
    n = len(smiles)
    var = {k: s2[k] / n - (s1[k] / n) ** 2 for k in s1}
    top = sorted(var, key=lambda k: (-var[k], k))[:final_fp_size]
    return sorted(top)


def train_neuralsym(
    products: Sequence[str],
    template_names: Sequence[str],
    templates: Sequence[Template],
    config: NeuralsymConfig | None = None,
) -> Neuralsym:
    """Train Neuralsym on single reaction steps (product -> template), cross-entropy with Adam.

    Parameters
    ----------
    products : sequence of str
        Product SMILES of the training steps.
    template_names : sequence of str
        The template used for each product.
    templates : sequence of Template
        The classes.
    config : NeuralsymConfig, optional

    Returns
    -------
    Neuralsym
        The trained model, in evaluation mode.
    """
    config = check_config(config, NeuralsymConfig)
    products, template_names = check_sequence(products, "products"), check_sequence(template_names, "template_names")
    if len(products) != len(template_names):
        raise InputError(f"template_names ({len(template_names)}) must match products ({len(products)})")
    names = [t.name for t in check_templates(templates)]
    unknown = [n for n in template_names if not isinstance(n, str) or n not in names]
    if unknown:
        raise InputError(f"template_names has names not in templates: {unknown[:3]}")
    idx = variance_indices(products, config.orig_fp_size, config.final_fp_size)
    model = Neuralsym(templates, idx, config)
    x = model.featurize(products)
    y = torch.tensor([names.index(n) for n in template_names])
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    g = torch.Generator().manual_seed(config.seed)
    model.train()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        for _ in range(config.epochs):
            order = torch.randperm(len(y), generator=g)
            for i in range(0, len(y), config.batch_size):
                b = order[i : i + config.batch_size]
                loss = F.cross_entropy(model(x[b]), y[b])
                opt.zero_grad()
                loss.backward()
                opt.step()
    return model.eval()
