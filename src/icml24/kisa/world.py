"""A procedural 2-D tabletop world of long-horizon robot demonstrations, rendered with numpy.

A top-down 24 x 24 RGB camera looks at a table with a drawer, a lamp and its switch, a button, a dial, a
sliding door, three coloured blocks and a bin. A gripper executes a chain of 3-5 scripted skills from a
library of eight ("open the drawer", "put the red block in the bin", ...). Every skill has three phases:
*reach* (the open gripper glides from where it is to the skill's object), *interact* (it closes and acts;
the object's state changes) and *retreat* (it opens and backs off towards the middle of the table). Reach
phases look alike across skills on purpose: a single frame of a gripper in mid-air says little about which
skill it serves, its history and future do. Ground truth is exact: the skill of every frame and the
keyframes, the last frame of each skill (the last keyframe is the demonstration's last frame).

Layout ``"a"`` is the training world; layout ``"b"`` moves every object by one or two pixels (a different
table arrangement) for zero-shot checks. ``exclude_transitions`` / ``require_transitions`` restrict which
ordered pairs of consecutive skills a chain may contain, so that test chains can hold compositions that
never occurred in training.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..validation import check_choice, check_int, check_rng, check_seed

SKILLS: tuple[str, ...] = (
    "open the drawer",
    "turn on the light",
    "press the button",
    "put the red block in the bin",
    "put the blue block in the bin",
    "put the green block in the bin",
    "turn the dial",
    "slide the door open",
)
SIZE = 24
LAYOUTS = ("a", "b")
_HOME = (12.0, 12.0)

# object anchor points (row, col) per layout: the gripper's target for each object
_LAYOUT_A = {
    "drawer": (6, 5),
    "switch": (4, 20),
    "button": (20, 20),
    "red": (11, 3),
    "blue": (14, 3),
    "green": (17, 3),
    "dial": (12, 20),
    "door": (8, 11),
    "bin": (20, 12),
}
_SHIFT_B = {
    "drawer": (1, 1),
    "switch": (1, -1),
    "button": (-1, -1),
    "red": (0, 1),
    "blue": (1, 1),
    "green": (1, 2),
    "dial": (-1, 1),
    "door": (1, -1),
    "bin": (-1, 1),
}
_BLOCK_COLOURS = {"red": (210, 40, 40), "blue": (40, 70, 220), "green": (40, 180, 60)}
_SKILL_OBJECT = ("drawer", "switch", "button", "red", "blue", "green", "dial", "door")


@dataclass(frozen=True)
class Demo:
    """One demonstration: frames, the skill of every frame, keyframes and the chain of skills.

    Attributes
    ----------
    frames : numpy.ndarray
        ``(T, 24, 24, 3)`` uint8 RGB frames.
    labels : numpy.ndarray
        ``(T,)`` int64 index into :data:`SKILLS` of each frame's skill.
    keyframes : numpy.ndarray
        ``(n_skills,)`` int64 last frame of each skill, increasing; the last one is ``T - 1``.
    chain : tuple of int
        The skills executed, in order.
    """

    frames: np.ndarray
    labels: np.ndarray
    keyframes: np.ndarray
    chain: tuple[int, ...]

    @property
    def captions(self) -> list[str]:
        """The skill text of every frame (the official HDF5 ``caption`` field)."""
        return [SKILLS[int(i)] for i in self.labels]


def _layout(layout: str) -> dict[str, tuple[int, int]]:
    if layout == "a":
        return dict(_LAYOUT_A)
    return {k: (r + _SHIFT_B[k][0], c + _SHIFT_B[k][1]) for k, (r, c) in _LAYOUT_A.items()}


class _Scene:
    """World state and its renderer."""

    def __init__(self, pos: dict[str, tuple[int, int]]):
        self.pos = pos
        self.drawer = 0.0  # 0 closed .. 1 open
        self.light = 0.0
        self.button = 0.0
        self.dial = 0.0
        self.door = 0.0
        self.blocks = {k: np.array(pos[k], float) for k in _BLOCK_COLOURS}
        self.binned = {k: False for k in _BLOCK_COLOURS}
        self.gripper = np.array(_HOME, float)
        self.closed = False
        self.held: str | None = None

    def render(self, rng: np.random.Generator, noise: float) -> np.ndarray:
        img = np.empty((SIZE, SIZE, 3), float)
        img[:] = (150, 135, 120)
        p = self.pos
        # drawer body and its sliding front (moves down as it opens)
        r, c = p["drawer"]
        img[r - 5 : r - 1, c - 3 : c + 3] = (110, 65, 30)
        ext = int(round(3 * self.drawer))
        img[r - 1 : r + ext, c - 3 : c + 3] = (160, 100, 50)
        img[r + ext, c - 1 : c + 2] = (60, 40, 20)  # handle
        # lamp and switch
        r, c = p["switch"]
        img[r - 3 : r - 1, c - 5 : c - 2] = (
            np.array((60, 60, 60)) * (1 - self.light) + np.array((250, 230, 60)) * self.light
        )
        img[r, c] = (90, 90, 90) if self.light < 0.5 else (230, 230, 230)
        # button
        r, c = p["button"]
        img[r : r + 2, c : c + 2] = np.array((210, 0, 160)) * (1 - 0.6 * self.button)
        # dial: a ring whose colour grows as it turns
        r, c = p["dial"]
        img[r - 1 : r + 2, c - 1 : c + 2] = (70, 70, 90)
        img[r, c] = np.array((70, 70, 90)) * (1 - self.dial) + np.array((255, 150, 0)) * self.dial
        # sliding door: a bar that moves right as it opens
        r, c = p["door"]
        shift = int(round(4 * self.door))
        img[r, c + shift : c + 5 + shift] = (0, 150, 150)
        # bin
        r, c = p["bin"]
        img[r - 2 : r + 3, c - 3 : c + 4] = (45, 45, 45)
        img[r - 1 : r + 2, c - 2 : c + 3] = (95, 95, 95)
        # blocks
        for k, col in _BLOCK_COLOURS.items():
            br, bc = np.round(self.blocks[k]).astype(int)
            img[max(br, 0) : br + 2, max(bc, 0) : bc + 2] = col
        # gripper: an open U of white pixels or a closed grey square
        gr, gc = np.clip(np.round(self.gripper).astype(int), 1, SIZE - 2)
        if self.closed:
            img[gr - 1 : gr + 1, gc - 1 : gc + 1] = (215, 215, 215)
        else:
            img[gr - 1 : gr + 2, gc - 1] = (255, 255, 255)
            img[gr - 1 : gr + 2, gc + 1] = (255, 255, 255)
            img[gr + 1, gc] = (255, 255, 255)
        if noise > 0:
            img = img + rng.normal(0.0, noise, img.shape)
        return np.clip(np.round(img), 0, 255).astype(np.uint8)


def _glide(scene: _Scene, target, steps: int, rng, jitter: float, frames: list, noise: float, carry=None) -> None:
    start = scene.gripper.copy()
    target = np.asarray(target, float)
    for i in range(1, steps + 1):
        frac = i / steps
        scene.gripper = start + (target - start) * frac + (rng.normal(0, jitter, 2) if i < steps else 0.0)
        if carry is not None:
            scene.blocks[carry] = scene.gripper - 0.5
        frames.append(scene.render(rng, noise))


def _play_skill(scene: _Scene, skill: int, rng, frames: list, noise: float, jitter: float) -> None:
    obj = _SKILL_OBJECT[skill]
    target = np.array(scene.pos[obj], float)
    if obj in _BLOCK_COLOURS:
        target = scene.blocks[obj] + 0.5
    # reach: through a random waypoint, so that a frame in mid-air says little about where it goes
    scene.closed = False
    _glide(scene, rng.uniform(4.0, SIZE - 5.0, 2), int(rng.integers(3, 6)), rng, jitter, frames, noise)
    _glide(scene, target, int(rng.integers(4, 8)), rng, jitter, frames, noise)
    # interact
    scene.closed = True
    frames.append(scene.render(rng, noise))
    n_act = int(rng.integers(3, 6))
    if obj == "drawer":
        for i in range(1, n_act + 1):
            scene.drawer = i / n_act
            scene.gripper = target + np.array([3.0 * i / n_act, 0.0])
            frames.append(scene.render(rng, noise))
    elif obj in _BLOCK_COLOURS:
        slot = np.array(scene.pos["bin"], float) + np.array([0.0, {"red": -2.0, "blue": 0.0, "green": 2.0}[obj]])
        _glide(scene, slot + 0.5, int(rng.integers(4, 8)), rng, jitter, frames, noise, carry=obj)
        scene.binned[obj] = True
    elif obj == "door":
        for i in range(1, n_act + 1):
            scene.door = i / n_act
            scene.gripper = target + np.array([0.0, 4.0 * i / n_act])
            frames.append(scene.render(rng, noise))
    else:
        attr = {"switch": "light", "button": "button", "dial": "dial"}[obj]
        for i in range(1, n_act + 1):
            setattr(scene, attr, i / n_act)
            frames.append(scene.render(rng, noise))
    # retreat to a random free point of the table: where the next reach starts gives nothing away
    scene.closed = False
    home = rng.uniform(4.0, SIZE - 5.0, 2)
    _glide(scene, home, int(rng.integers(3, 6)), rng, jitter, frames, noise)


def _sample_chain(rng, lo: int, hi: int, exclude: set, require: set, tries: int = 10_000) -> tuple[int, ...]:
    for _ in range(tries):
        n = int(rng.integers(lo, hi + 1))
        chain = tuple(int(s) for s in rng.permutation(len(SKILLS))[:n])
        pairs = set(zip(chain[:-1], chain[1:]))
        if pairs & exclude:
            continue
        if require and not pairs & require:
            continue
        return chain
    raise InputError(
        "no chain satisfies exclude_transitions and require_transitions",
        "hold out fewer transitions or require ones that are allowed",
    )


def _check_transitions(value, name: str) -> set:
    if value is None:
        return set()
    out = set()
    try:
        for pair in value:
            a, b = (int(x) for x in pair)
            if not (0 <= a < len(SKILLS) and 0 <= b < len(SKILLS)):
                raise ValueError
            out.add((a, b))
    except (TypeError, ValueError):
        raise InputError(f"{name} must be pairs of skill indices in [0, {len(SKILLS) - 1}]") from None
    return out


def make_demos(
    n: int,
    seed: int,
    *,
    layout: str = "a",
    min_skills: int = 3,
    max_skills: int = 5,
    exclude_transitions=None,
    require_transitions=None,
    noise: float = 4.0,
    jitter: float = 0.35,
) -> list[Demo]:
    """Generate ``n`` demonstrations of random skill chains, deterministically from ``seed``.

    Parameters
    ----------
    n : int
        Number of demonstrations (at least 1).
    seed : int
        Seed of everything random: chains, phase lengths, gripper jitter, pixel noise.
    layout : {"a", "b"}, default "a"
        Table arrangement; ``"b"`` moves every object by one or two pixels.
    min_skills, max_skills : int, default 3, 5
        Chain lengths are drawn uniformly in this range (distinct skills, so at most 8).
    exclude_transitions : iterable of (int, int), optional
        Ordered pairs of consecutive skills that no chain may contain.
    require_transitions : iterable of (int, int), optional
        Every chain contains at least one of these ordered pairs.
    noise : float, default 4.0
        Standard deviation of Gaussian pixel noise (0-255 scale).
    jitter : float, default 0.35
        Standard deviation (pixels) of the gripper's path jitter.

    Returns
    -------
    list of Demo
        Frames are about 45-110 long for chains of 3-5 skills.
    """
    n = check_int(n, "n", min_val=1)
    rng = check_rng(check_seed(seed))
    layout = check_choice(layout, "layout", LAYOUTS)
    lo = check_int(min_skills, "min_skills", min_val=1, max_val=len(SKILLS))
    hi = check_int(max_skills, "max_skills", min_val=lo, max_val=len(SKILLS))
    exclude = _check_transitions(exclude_transitions, "exclude_transitions")
    require = _check_transitions(require_transitions, "require_transitions")
    if not np.isfinite(noise) or noise < 0:
        raise InputError(f"noise must be a non-negative number, got {noise!r}")
    if not np.isfinite(jitter) or jitter < 0:
        raise InputError(f"jitter must be a non-negative number, got {jitter!r}")
    pos = _layout(layout)
    demos = []
    for _ in range(n):
        chain = _sample_chain(rng, lo, hi, exclude, require)
        scene = _Scene(pos)
        frames: list[np.ndarray] = []
        labels: list[int] = []
        keyframes: list[int] = []
        for skill in chain:
            before = len(frames)
            _play_skill(scene, skill, rng, frames, float(noise), float(jitter))
            labels += [skill] * (len(frames) - before)
            keyframes.append(len(frames) - 1)
        demos.append(
            Demo(np.stack(frames), np.asarray(labels, np.int64), np.asarray(keyframes, np.int64), tuple(chain))
        )
    return demos


def random_frames(n: int, seed: int, *, layout: str = "a") -> np.ndarray:
    """Frames of random world states and gripper positions, unrelated to any demonstration.

    Used to fit a frozen image encoder's normalisation once (the stand-in for a backbone pretrained on
    other videos).

    Parameters
    ----------
    n : int
        Number of frames.
    seed : int
        Seed.
    layout : {"a", "b"}, default "a"
        Table arrangement.

    Returns
    -------
    numpy.ndarray
        ``(n, 24, 24, 3)`` uint8.
    """
    n = check_int(n, "n", min_val=1)
    rng = check_rng(check_seed(seed))
    pos = _layout(check_choice(layout, "layout", LAYOUTS))
    out = []
    for _ in range(n):
        s = _Scene(pos)
        s.drawer, s.light, s.button, s.dial, s.door = rng.uniform(0, 1, 5)
        s.gripper = rng.uniform(2, SIZE - 3, 2)
        s.closed = bool(rng.integers(0, 2))
        out.append(s.render(rng, 4.0))
    return np.stack(out)


def transitions(demos) -> set[tuple[int, int]]:
    """The ordered pairs of consecutive skills that occur in ``demos``.

    Parameters
    ----------
    demos : iterable of Demo
        Demonstrations.

    Returns
    -------
    set of (int, int)
        Each pair ``(skill, next skill)``.
    """
    out: set[tuple[int, int]] = set()
    for d in demos:
        out |= set(zip(d.chain[:-1], d.chain[1:]))
    return out


__all__ = ["SKILLS", "LAYOUTS", "Demo", "make_demos", "random_frames", "transitions"]
