"""One DeSA client: its state and steps (synthesise anchors, logits on the global anchors, a round of local training
on CE + KD + REG), the same code in-process and in a worker process, and the check of the clients' inputs."""

from __future__ import annotations

import copy
import math
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError
from ..validation import check_tensor
from .anchors import AnchorSet, synthesize_anchors
from .config import ClientFailed, DesaConfig
from .losses import kd_loss, supcon_loss
from .models import check_classifier, check_model
from .optim import SGD


def nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


class Client:
    """The state and steps of one client; the same code runs in-process and in a worker process."""

    def __init__(self, rank: int, model, x: torch.Tensor, y: torch.Tensor, cfg: DesaConfig) -> None:
        self.rank, self.cfg = rank, cfg
        self.model = copy.deepcopy(model).train()
        self.x, self.y = x, y
        seq = np.random.SeedSequence([cfg.seed, rank, 29])
        s_dm, s_train = (int(s.generate_state(1)[0]) for s in seq.spawn(2))
        self.dm_seed = s_dm
        self.g = torch.Generator().manual_seed(s_train)
        self.opt = SGD(self.model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
        self.losses: list[float] = []

    def synthesize(self) -> AnchorSet:
        c = self.cfg
        return synthesize_anchors(
            self.x,
            self.y,
            num_classes=c.num_classes,
            ipc=c.ipc,
            iterations=c.dm_iterations,
            batch_real=c.dm_batch_real,
            lr=c.dm_lr,
            momentum=c.dm_momentum,
            augment=c.augment,
            net_width=c.dm_net_width,
            net_depth=c.dm_net_depth,
            dp=c.dp,
            l2_norm_clip=c.l2_norm_clip,
            noise_multiplier=c.noise_multiplier,
            seed=self.dm_seed,
        )

    def set_anchors(self, anchors: AnchorSet) -> None:
        self.anchors = anchors
        # the code shuffles the anchors once; the KD loader then walks them in that fixed order
        order = torch.randperm(len(anchors.labels), generator=self.g)
        self.ax, self.ay = anchors.images[order], anchors.labels[order]
        self.cx = torch.cat([self.x, self.ax])
        self.cy = torch.cat([self.y, self.ay])

    def restore_anchors(self, anchors: AnchorSet, ax: torch.Tensor, ay: torch.Tensor) -> None:
        self.anchors, self.ax, self.ay = anchors, ax, ay
        self.cx = torch.cat([self.x, self.ax])
        self.cy = torch.cat([self.y, self.ay])

    def anchor_logits(self) -> torch.Tensor:
        self.model.eval()
        with torch.no_grad():
            z = torch.cat([self.model(b) for b in self.ax.split(self.cfg.batch_size)])
        self.model.train()
        return z

    def train_round(self, teacher: torch.Tensor | None) -> float:
        c, m = self.cfg, self.model
        bs = c.batch_size
        use_kd = teacher is not None and c.lambda_kd > 0
        total, steps = 0.0, 0
        for _ in range(c.local_epochs):
            perm = torch.randperm(len(self.cy), generator=self.g)
            kd_step = 0
            n_kd = math.ceil(len(self.ay) / bs)
            reg_perm = torch.randperm(len(self.ay), generator=self.g)
            reg_step = 0
            for idx in perm.split(bs):
                x, y = self.cx[idx], self.cy[idx]
                h = m.embed(x)
                loss = c.lambda_ce * F.cross_entropy(m.classify(h), y) if c.lambda_ce > 0 else h.new_zeros(())
                if use_kd:
                    if kd_step == n_kd:
                        kd_step = 0
                    sl = slice(kd_step * bs, (kd_step + 1) * bs)
                    loss = loss + c.lambda_kd * kd_loss(
                        m(self.ax[sl]),
                        teacher[sl],
                        self.ay[sl],
                        temperature=c.temperature,
                        distil_weight=c.distil_weight,
                        reduction=c.kl_reduction,
                    )
                    kd_step += 1
                if c.lambda_reg > 0:
                    if reg_step * bs >= len(reg_perm):
                        reg_perm = torch.randperm(len(self.ay), generator=self.g)
                        reg_step = 0
                    ridx = reg_perm[reg_step * bs : (reg_step + 1) * bs]
                    reg_step += 1
                    with torch.no_grad():
                        ha = m.embed(self.ax[ridx])
                    loss = loss + c.lambda_reg * supcon_loss(
                        h,
                        ha,
                        y,
                        self.ay[ridx],
                        temperature=c.reg_temperature,
                        base_temperature=c.reg_temperature,
                    )
                if not torch.isfinite(loss):
                    raise ClientFailed(f"client {self.rank} diverged (non-finite loss)", "lower lr or momentum")
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
                total += float(loss.detach())
                steps += 1
        return total / max(steps, 1)


def teacher(received: dict[int, torch.Tensor]) -> torch.Tensor | None:
    if not received:
        return None
    return torch.stack([received[j] for j in sorted(received)]).mean(0)


def check_inputs(
    models, train_sets, cfg: DesaConfig, need_models: bool = True, data_name: str = "train_sets"
) -> tuple[list, list]:
    """Validate the clients' models and data (one-line ``InputError`` naming the argument).

    Parameters
    ----------
    models : sequence of torch.nn.Module
    train_sets : sequence of (torch.Tensor, torch.Tensor)
    cfg : DesaConfig
    need_models : bool, default True
        Require ``embed`` and ``classify`` on every model.
    data_name : str, default "train_sets"
        The name of the data in the messages (``"anchors"`` for anchors-only training).

    Returns
    -------
    (list, list)
        The models and the ``(float images, int64 labels)`` pairs.
    """
    if isinstance(models, torch.nn.Module) or not isinstance(models, Sequence):
        raise InputError("models must be a list of modules, one per client")
    if isinstance(train_sets, tuple) and len(train_sets) == 2 and isinstance(train_sets[0], torch.Tensor):
        raise InputError("train_sets must be a list of (images, labels) pairs, one per client")
    if not isinstance(train_sets, Sequence):
        raise InputError("train_sets must be a list of (images, labels) pairs, one per client")
    if len(models) < 2:
        raise InputError(f"models holds {len(models)} client(s); DeSA needs at least two clients")
    if len(train_sets) != len(models):
        raise InputError(f"train_sets has {len(train_sets)} entries for {len(models)} models")
    ms = [check_model(m, f"models[{i}]") if need_models else m for i, m in enumerate(models)]
    if len({id(m) for m in ms}) != len(ms):
        raise InputError("models holds the same module twice", "give each client its own module")
    data = []
    shape = None
    for i, pair in enumerate(train_sets):
        if not isinstance(pair, Sequence) or len(pair) != 2:
            raise InputError(f"{data_name}[{i}] must be an (images, labels) pair")
        x = check_tensor(pair[0], f"{data_name}[{i}] images", ndim=4)
        y = check_tensor(pair[1], f"{data_name}[{i}] labels", ndim=1, dtype="integer")
        if len(x) != len(y):
            raise InputError(f"{data_name}[{i}] has {len(x)} images but {len(y)} labels")
        if int(y.min()) < 0 or int(y.max()) >= cfg.num_classes:
            raise InputError(f"{data_name}[{i}] labels must lie in [0, {cfg.num_classes})", "set num_classes")
        if shape is None:
            shape = x.shape[1:]
        elif x.shape[1:] != shape:
            raise InputError(f"{data_name}[{i}] images have shape {tuple(x.shape[1:])}, client 0 {tuple(shape)}")
        data.append((x.detach().float().contiguous(), y.detach().long().contiguous()))
    held = set().union(*[set(y.tolist()) for _, y in data])
    missing = sorted(set(range(cfg.num_classes)) - held)
    if missing:
        raise InputError(
            f"the anchors would have classes {missing} that no client holds (num_classes={cfg.num_classes})",
            "lower num_classes or relabel",
        )
    for i, m in enumerate(ms if need_models else ms[:1]):  # gossip_fedavg's clients are copies of one model
        name = f"models[{i}]" if need_models else "model"
        check_classifier(m, data[0][0], f"{data_name} images", name, cfg.num_classes)
    return ms, data


__all__ = ["check_inputs"]
