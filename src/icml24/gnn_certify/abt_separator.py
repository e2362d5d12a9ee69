"""abt, the aggressive-bounds-tightening separator of the MIP (paper §3.3; official
``sepa_relu_robustclassify.c``), on PySCIPOpt.

At every branch-and-bound node it recomputes the topology bounds from the local bounds of the adjacency (and
feature) variables and separates the ReLU rows and the product rows of
:class:`~icml24.gnn_certify.mip.CertificationMIP` with them: local cuts below the root, global (pool) cuts at
the root. LP solutions only (the official separator also has an ``execsol`` callback for arbitrary solutions,
which SCIP's default plugins rarely call).
"""

from __future__ import annotations

import numpy as np

from ..extras import require

require("torch_geometric", "pyscipopt", extra="graphs", what="gnn_certify")

from pyscipopt import SCIP_RESULT, Sepa

from .bounds import topology_bounds_unchecked
from .network import GRAPH

EFFICACY = 1e-4  # SCIPisEfficacious with the default separating/minefficacy(root) = 1e-4

_is_var = np.frompyfunc(lambda o: o is not None, 1, 1)


def has_var(arr: np.ndarray) -> np.ndarray:
    """bool mask of the entries of an object array that hold a variable."""
    return _is_var(arr).astype(bool) if arr.size else np.zeros(arr.shape, dtype=bool)


class TopologySepa(Sepa):
    """abt: at every node, topology bounds under the local adjacency fixings, then the ReLU rows (sparse
    ``h <= U s``, dense ``h <= pre - L(1 - s)``) and the product rows with those local bounds, added as local
    cuts below the root and as global (pool) cuts at the root (``sepa_relu_robustclassify.c``).

    Parameters
    ----------
    mip : CertificationMIP
        The MIP whose rows it separates (its variables, network, space and bounds).
    """

    def __init__(self, mip) -> None:
        self.mip = mip
        self.n_local = self.n_global = self.calls = 0
        self._ready = False

    def sepainitsol(self) -> None:
        """SCIP's callback before solving: the transformed variables, and the rows that can be separated."""
        m, mip = self.model, self.mip

        def tr(arr):
            out = np.empty(arr.shape, dtype=object)
            for idx in zip(*np.nonzero(has_var(arr))):
                out[idx] = m.getTransformedVar(arr[idx])
            return out

        self.a = [None if v is None else m.getTransformedVar(v) for v in mip.a]
        self.x = tr(mip.x)
        self.h = [tr(a) for a in mip.h]
        self.pre = [tr(a) for a in mip.pre]
        self.s = [tr(a) for a in mip.s]
        self.z = [tr(a) for a in mip.z]
        self.dense = []  # (layer, feature, h, pre, s) of dense ReLUs with a binary (official separatedense)
        if mip.net.task == GRAPH:
            for d_i in range(len(mip.net.dense)):
                for f, sv in enumerate(mip.dense_s[d_i]):
                    if sv is not None:
                        self.dense.append(
                            (
                                d_i,
                                f,
                                m.getTransformedVar(mip.dense_h[d_i][f]),
                                m.getTransformedVar(mip.dense_pre[d_i][f]),
                                m.getTransformedVar(sv),
                            )
                        )
        # index lists of what can be separated
        self.relu_idx = [np.argwhere(has_var(s)) for s in self.s]
        self.z_idx = [np.argwhere(has_var(z)) for z in self.z]
        self._ready = True

    @staticmethod
    def _local(v, present: bool = False) -> tuple[float, float]:
        if v is None:  # frozen slot: its clean state
            return (1.0, 1.0) if present else (0.0, 0.0)
        if v.getStatus() == "MULTAGGR":
            return 0.0, 1.0
        return v.getLbLocal(), v.getUbLocal()

    def sepaexeclp(self) -> dict:
        """SCIP's callback on an LP solution: local topology bounds, then the violated rows as cuts.

        Returns
        -------
        dict
            ``{"result": SCIP_RESULT}``: CUTOFF, SEPARATED, DIDNOTFIND or DIDNOTRUN.
        """
        if not self._ready:
            return {"result": SCIP_RESULT.DIDNOTRUN}
        self.calls += 1
        m, mip, sp = self.model, self.mip, self.mip.space
        pres = sp.slot_present
        lohi = np.array([self._local(v, pres[s]) for s, v in enumerate(self.a)]).reshape(-1, 2)
        x_lo = x_hi = None
        if not sp.fixed_features:
            x_lo, x_hi = sp.x_lb.copy(), sp.x_ub.copy()
            for v, g in zip(*np.nonzero(has_var(self.x))):
                x_lo[v, g], x_hi[v, g] = self._local(self.x[v, g])
        b = topology_bounds_unchecked(mip.net, sp, lohi[:, 0], lohi[:, 1], x_lo, x_hi, False)
        if b.infeasible:
            return {"result": SCIP_RESULT.CUTOFF}
        local = m.getDepth() > 0
        added = 0
        infeasible = False

        def val(v) -> float:
            return v.getLPSol()

        def emit(name: str, terms: list, rhs: float) -> None:
            nonlocal added, infeasible
            row = m.createEmptyRowSepa(self, name, lhs=None, rhs=rhs, local=local, modifiable=False, removable=True)
            m.cacheRowExtensions(row)
            for var, c in terms:
                m.addVarToRow(row, var, c)
            m.flushRowExtensions(row)
            if local:
                infeasible |= bool(m.addCut(row, forcecut=False))
                self.n_local += 1
            else:
                m.addPoolCut(row)
                self.n_global += 1
            m.releaseRow(row)
            added += 1

        for l in range(len(mip.net.sage)):
            # ReLU rows with the local pre-activation bounds
            idx = self.relu_idx[l]
            if len(idx):
                lo = b.pre_lo[l][idx[:, 0], idx[:, 1]]
                hi = b.pre_hi[l][idx[:, 0], idx[:, 1]]
                hv = np.array([val(self.h[l][v, f]) for v, f in idx])
                sv = np.array([val(self.s[l][v, f]) for v, f in idx])
                pv = np.array([val(self.pre[l][v, f]) for v, f in idx])
                viol_sparse = hv - hi * sv
                viol_dense = hv - pv + lo * (1.0 - sv)
                for i in np.flatnonzero(viol_sparse > EFFICACY):
                    v, f = idx[i]
                    emit(f"relu_sparse_{l}_{v}_{f}", [(self.h[l][v, f], 1.0), (self.s[l][v, f], -float(hi[i]))], 0.0)
                for i in np.flatnonzero(viol_dense > EFFICACY):
                    v, f = idx[i]
                    emit(
                        f"relu_dense_{l}_{v}_{f}",
                        [(self.h[l][v, f], 1.0), (self.pre[l][v, f], -1.0), (self.s[l][v, f], -float(lo[i]))],
                        -float(lo[i]),
                    )
            # product rows with the local bounds of h_u and z
            zi = self.z_idx[l]
            if len(zi):
                mi, g = zi[:, 0], zi[:, 1]
                src = sp.msg_src[mi]
                prev = self.x if l == 0 else self.h[l - 1]
                lh = (b.inp_lo if l == 0 else b.out_lo[l - 1])[src, g]
                uh = (b.inp_hi if l == 0 else b.out_hi[l - 1])[src, g]
                lz, uz = b.aux_lo[l][mi, g], b.aux_hi[l][mi, g]
                zv = np.array([val(self.z[l][i, j]) for i, j in zi])
                hvv = np.array([val(prev[u, j]) for u, j in zip(src, g)])
                av = np.array([val(self.a[sp.msg_slot[i]]) for i in mi])
                v1 = zv - hvv + lh * (1.0 - av)
                v2 = -zv + hvv - uh * (1.0 - av)
                v3 = zv - uz * av
                v4 = -zv + lz * av
                for k in np.flatnonzero(v1 > EFFICACY):
                    zz, hh, aa = self.z[l][mi[k], g[k]], prev[src[k], g[k]], self.a[sp.msg_slot[mi[k]]]
                    emit(f"aux1_{l}_{mi[k]}_{g[k]}", [(zz, 1.0), (hh, -1.0), (aa, -float(lh[k]))], -float(lh[k]))
                for k in np.flatnonzero(v2 > EFFICACY):
                    zz, hh, aa = self.z[l][mi[k], g[k]], prev[src[k], g[k]], self.a[sp.msg_slot[mi[k]]]
                    emit(f"aux2_{l}_{mi[k]}_{g[k]}", [(zz, -1.0), (hh, 1.0), (aa, float(uh[k]))], float(uh[k]))
                for k in np.flatnonzero(v3 > EFFICACY):
                    zz, aa = self.z[l][mi[k], g[k]], self.a[sp.msg_slot[mi[k]]]
                    emit(f"aux3_{l}_{mi[k]}_{g[k]}", [(zz, 1.0), (aa, -float(uz[k]))], 0.0)
                for k in np.flatnonzero(v4 > EFFICACY):
                    zz, aa = self.z[l][mi[k], g[k]], self.a[sp.msg_slot[mi[k]]]
                    emit(f"aux4_{l}_{mi[k]}_{g[k]}", [(zz, -1.0), (aa, float(lz[k]))], 0.0)
            if infeasible:
                return {"result": SCIP_RESULT.CUTOFF}
        for d_i, f, hv, pv, sv in self.dense:  # dense-layer ReLUs (official separateCutsLayerDense)
            lo, hi = float(b.dense_pre_lo[d_i][f]), float(b.dense_pre_hi[d_i][f])
            h_, p_, s_ = val(hv), val(pv), val(sv)
            if h_ - hi * s_ > EFFICACY:
                emit(f"relu_dense_sparse_{d_i}_{f}", [(hv, 1.0), (sv, -hi)], 0.0)
            if h_ - p_ + lo * (1.0 - s_) > EFFICACY:
                emit(f"relu_dense_dense_{d_i}_{f}", [(hv, 1.0), (pv, -1.0), (sv, -lo)], -lo)
        if infeasible:
            return {"result": SCIP_RESULT.CUTOFF}
        return {"result": SCIP_RESULT.SEPARATED if added else SCIP_RESULT.DIDNOTFIND}


__all__ = ["TopologySepa"]
