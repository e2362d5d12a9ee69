"""SCIP's parameters in :func:`~icml24.gnn_certify.certify`: the presets (:data:`SETTINGS`) and the check of the
parameters a user adds (:func:`check_scip_params`)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError

#: SCIP parameter presets. "official": SCIP's defaults plus the official ``settings/*.set`` (which only switch
#: bounds and the separator, applied by ``bounds``). "fast": also ``separating/aggregation/freq = -1``: SCIP's
#: aggregation (c-MIR) separator spends most of the root time on these big-M models without closing the gap
#: (measured with the official plugin on MUTAG; on SCIP 10 it stalls even small models).
SETTINGS: dict[str, dict] = {"official": {}, "fast": {"separating/aggregation/freq": -1}}


#: SCIP parameters that other arguments of :func:`~icml24.gnn_certify.certify` set, and the argument to use instead.
_MANAGED = {
    "limits/time": "time_limit",
    "limits/gap": "decision",
    "limits/absgap": "decision",
    "limits/primal": "decision",
    "randomization/randomseedshift": "seed",
    "lp/threads": "threads",
    "parallel/maxnthreads": "threads",
    "timing/clocktype": "clock",
}
_SCIP_DEFAULTS: dict | None = None


def check_scip_params(scip_params) -> dict:
    """Refuse unknown SCIP parameter names, values of the wrong type or range, and tolerances.

    ``numerics/*`` (tolerances that could turn a wrong bound into a certificate) and the parameters other
    arguments of :func:`~icml24.gnn_certify.certify` set are refused; every other value is tried on a scratch
    SCIP model.

    Parameters
    ----------
    scip_params : dict of str to bool, int, float or str, or None

    Returns
    -------
    dict
        A copy of the parameters.
    """
    global _SCIP_DEFAULTS
    if scip_params is None:
        return {}
    if not isinstance(scip_params, dict):
        raise InputError(
            f"scip_params must be a dict of SCIP parameter names to values, got {type(scip_params).__name__}"
        )
    from pyscipopt import Model

    scratch = Model()
    scratch.hideOutput()
    if _SCIP_DEFAULTS is None:
        _SCIP_DEFAULTS = scratch.getParams()
    out = {}
    for name, value in scip_params.items():
        if not isinstance(name, str) or name not in _SCIP_DEFAULTS:
            close = [k for k in _SCIP_DEFAULTS if isinstance(name, str) and name.split("/")[-1] in k][:3]
            raise InputError(
                f"scip_params: unknown SCIP parameter {name!r}",
                f"similar names: {', '.join(close)}" if close else "see SCIP's parameter list (model.getParams())",
            )
        if name in _MANAGED:
            raise InputError(f"scip_params: {name!r} is set by the argument {_MANAGED[name]!r}; use that instead")
        if name.startswith("numerics/"):
            raise InputError(
                f"scip_params: {name!r} is a numerical tolerance, which could turn a wrong bound into a certificate",
                "numerics/* parameters are refused",
            )
        default = _SCIP_DEFAULTS[name]
        kind = type(default)
        value = value.item() if isinstance(value, np.generic) else value
        ok = (
            isinstance(value, bool)
            if kind is bool
            else (isinstance(value, int) and not isinstance(value, bool))
            if kind is int
            else (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))
            if kind is float
            else isinstance(value, str)
        )
        if not ok:
            raise InputError(f"scip_params: {name!r} takes a {kind.__name__} (like {default!r}), got {value!r}")
        try:
            scratch.setParam(name, value)
        except Exception as exc:  # SCIP's range check
            raise InputError(f"scip_params: {name!r} = {value!r} is refused by SCIP ({exc})") from None
        out[name] = value
    scratch.freeProb()
    return out


__all__ = [
    "SETTINGS",
    "check_scip_params",
]
