"""Helpers for testing claims: every claim's test runs it at SMOKE scale and feeds ``holds`` contradictions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .claims import Claim, Metrics, Scale, validate_metrics


def check_claim(
    claim: Claim,
    contradictions: Sequence[Mapping[str, float]],
    *,
    seed: int = 0,
    scale: Scale = Scale.SMOKE,
    expect: bool = True,
    metrics: Mapping[str, float] | None = None,
) -> Metrics:
    """Run ``claim`` (or judge given ``metrics`` of its experiment) and assert that it holds and that each
    contradiction makes ``holds`` return False.

    The claim is measured once at ``scale`` with ``seed``; its verdict must equal ``expect``. Each
    contradiction is then overlaid on the measured metrics and the verdict on the result must be False.
    ``contradictions`` must not be empty: a claim whose ``holds`` cannot be made False is a defect.

    Parameters
    ----------
    claim : Claim
        The claim to run.
    contradictions : sequence of mapping of str to float
        Metric values that should each break the claim when overlaid on the measured metrics; every key
        must be one of the measured metrics.
    seed : int, default 0
        Seed passed to the claim's measurement.
    scale : Scale, default Scale.SMOKE
        Scale at which the claim is measured.
    expect : bool, default True
        The verdict the measured metrics must give (``False`` for a claim expected not to hold).
    metrics : mapping of str to float, optional
        The metrics of the claim's experiment, measured once by the caller (``claim.experiment.measure(scale,
        seed)``) and shared by the claims that judge it; the claim is then not run again.

    Returns
    -------
    Metrics
        The measured metrics.

    Raises
    ------
    AssertionError
        If ``contradictions`` is empty, the verdict differs from ``expect``, a contradiction names a metric
        that was not measured, or a contradiction leaves ``holds`` True.
    """
    if not contradictions:
        raise AssertionError(f"{claim.key}: give at least one set of contradicting metrics")
    metrics = claim.measure(scale, seed) if metrics is None else validate_metrics(claim, metrics)
    assert claim.judge(metrics) is expect, f"{claim.key} at {scale.value} scale: holds={not expect} on {metrics}"
    for bad in contradictions:
        unknown = set(bad) - set(metrics)
        assert not unknown, f"{claim.key}: contradiction names unknown metrics {sorted(unknown)}"
        assert claim.judge({**metrics, **bad}) is False, f"{claim.key}: holds is True on contradicting {bad}"
    return metrics


# --------------------------------------------------------------------------------------------------
# Bad input: every public callable refuses it with a one-line InputError naming the argument, and leaves
# the objects passed in exactly as they were.


@dataclass(frozen=True)
class Bad:
    """One bad call of a public callable, and what it must do.

    Parameters
    ----------
    target : str
        The public name the call exercises: ``"name"`` for a function or a class's constructor,
        ``"Class.method"`` for a method. Coverage is counted on the part before the dot.
    argument : str
        The argument the call gets wrong; the error message must contain it.
    call : callable
        A zero-argument function that makes the bad call.
    watch : tuple, default ()
        Objects the call must leave unchanged (modules, tensors, arrays, PyG ``Data``, the library's own
        stateful objects); compared before and after by :func:`fingerprint`.
    kind : str, default ""
        What is wrong, for the test id and the tally ("shape", "nan", "type", "range", "name", ...).
    """

    target: str
    argument: str
    call: Callable[[], Any]
    watch: tuple = ()
    kind: str = ""

    @property
    def id(self) -> str:
        """Return a short test id: ``target:argument:kind``.

        Returns
        -------
        str
            The id.
        """
        return f"{self.target}:{self.argument}:{self.kind}" if self.kind else f"{self.target}:{self.argument}"


def bad(target: str, argument: str, call: Callable[[], Any], *watch: Any, kind: str = "") -> Bad:
    """Build a :class:`Bad` case; ``watch`` objects are given positionally after the call.

    Parameters
    ----------
    target : str
        The public name the call exercises (``"name"`` or ``"Class.method"``).
    argument : str
        The argument the call gets wrong.
    call : callable
        A zero-argument function that makes the bad call.
    *watch : object
        Objects the call must leave unchanged.
    kind : str, default ""
        What is wrong ("shape", "nan", "type", "range", "name", "empty", ...).

    Returns
    -------
    Bad
        The case.
    """
    return Bad(target, argument, call, tuple(watch), kind)


def fingerprint(obj: Any, _depth: int = 0) -> Any:
    """Return a comparable deep snapshot of ``obj`` (values, ``requires_grad``, ``training`` modes).

    Modules give their parameters and buffers (values, dtypes, devices, ``requires_grad``) and every
    submodule's ``training`` flag; tensors and arrays their values, dtypes and shapes; containers and plain
    objects (``__dict__``/``__slots__``) are walked recursively to a bounded depth.

    Parameters
    ----------
    obj : object
        The object to snapshot.

    Returns
    -------
    object
        A snapshot made of tuples, dicts and copied arrays, compared with :func:`same`.
    """
    import numpy as np
    import torch

    if _depth > 6:
        return ("...", type(obj).__name__)
    if isinstance(obj, torch.nn.Module):
        return (
            "module",
            tuple((n, fingerprint(p, _depth + 1), p.requires_grad) for n, p in obj.named_parameters()),
            tuple((n, fingerprint(b, _depth + 1)) for n, b in obj.named_buffers()),
            tuple((n, m.training) for n, m in obj.named_modules()),
        )
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        return ("tensor", t.dtype, tuple(t.shape), str(t.device), obj.requires_grad, t.cpu().clone())
    if isinstance(obj, np.ndarray):
        return ("array", obj.dtype.str, obj.shape, obj.copy())
    if isinstance(obj, (str, bytes, int, float, bool, complex, type(None))):
        return obj
    if isinstance(obj, dict):
        return ("dict", tuple((k, fingerprint(v, _depth + 1)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        return (type(obj).__name__, tuple(fingerprint(v, _depth + 1) for v in items))
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict) and type(obj).__module__.startswith("torch_geometric"):
        return ("data", fingerprint(to_dict(), _depth + 1))
    if callable(obj) and not hasattr(obj, "__dict__"):
        return ("callable", id(obj))
    state = getattr(obj, "__dict__", None)
    if state is None and hasattr(obj, "__slots__"):
        state = {k: getattr(obj, k) for k in obj.__slots__ if hasattr(obj, k)}
    if state is None:
        return ("object", type(obj).__name__, repr(obj))
    return ("object", type(obj).__name__, fingerprint(dict(state), _depth + 1))


def same(a: Any, b: Any) -> bool:
    """Return whether two :func:`fingerprint` snapshots are equal (NaN equals NaN).

    Parameters
    ----------
    a, b : object
        Snapshots.

    Returns
    -------
    bool
        True when equal.
    """
    import numpy as np
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape:
            return False
        if a.dtype != b.dtype:
            return False
        if a.is_floating_point() or a.is_complex():
            return bool(torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))) and bool(
                torch.equal(torch.isnan(a), torch.isnan(b))
            )
        return bool(torch.equal(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
            return False
        try:
            return bool(np.array_equal(a, b, equal_nan=True))
        except TypeError:
            return bool(np.array_equal(a, b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an uncomparable value counts as different
        return False


def assert_refuses(case: Bad) -> str:
    """Make the bad call; assert a one-line ``InputError`` naming the argument and untouched objects.

    Parameters
    ----------
    case : Bad
        The case.

    Returns
    -------
    str
        The error's message.

    Raises
    ------
    AssertionError
        If the call returns, raises anything but :class:`~icml24.errors.InputError`, gives a message over
        several lines or one that does not name the argument, or changes a watched object.
    """
    from .errors import InputError

    before = [fingerprint(w) for w in case.watch]
    try:
        result = case.call()
    except InputError as error:
        message = str(error)
    except Exception as error:  # noqa: BLE001 - reported as the defect it is
        raise AssertionError(f"{case.id}: raised {type(error).__name__}: {error}") from error
    else:
        raise AssertionError(f"{case.id}: accepted, returned {type(result).__name__}")
    assert "\n" not in message, f"{case.id}: message spans several lines: {message!r}"
    assert case.argument in message, f"{case.id}: message does not name {case.argument!r}: {message!r}"
    for i, (w, snap) in enumerate(zip(case.watch, before)):
        assert same(fingerprint(w), snap), f"{case.id}: watched object {i} ({type(w).__name__}) was changed"
    return message


def public_callables(module: Any) -> list[str]:
    """Return the names in ``module.__all__`` that are functions or classes.

    Parameters
    ----------
    module : module
        A method package (``icml24.<slug>``).

    Returns
    -------
    list of str
        The callable public names, sorted.
    """
    import inspect

    names = []
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj):
            names.append(name)
    return sorted(names)


def coverage_gaps(module: Any, cases: Sequence[Bad], *, minimum: int = 5, exempt: Mapping[str, str] = {}) -> dict:
    """Return the public callables of ``module`` with fewer than ``minimum`` bad-input cases.

    Parameters
    ----------
    module : module
        A method package.
    cases : sequence of Bad
        The package's cases; ``case.target`` before the first dot is counted.
    minimum : int, default 5
        Cases each public callable needs.
    exempt : mapping of str to str, default {}
        Names that take no argument a user can get wrong (exception types, enums, plain records), each
        with the reason; they need no cases.

    Returns
    -------
    dict of str to int
        Each name short of ``minimum``, with its count; empty when every name is covered.
    """
    counts: dict[str, int] = {}
    for case in cases:
        head = case.target.split(".", 1)[0]
        counts[head] = counts.get(head, 0) + 1
    return {n: counts.get(n, 0) for n in public_callables(module) if n not in exempt and counts.get(n, 0) < minimum}
