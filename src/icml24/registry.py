"""The nineteen methods, by slug, imported lazily.

Each entry carries the paper's identity: title, authors, arXiv identifier and official code. A method is
*implemented* when the package ``icml24.<slug>`` has a ``paper`` module defining ``METHOD``; otherwise it
is *planned* and listed as such. Users may :func:`register` methods of their own (a ``Method`` with
claims); ``icml24 verify`` then treats them like the built-in ones.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .claims import Method
from .errors import InputError


@dataclass(frozen=True)
class Paper:
    """A paper's identity: slug, title, authors, arXiv identifier and official code (None when there is none)."""

    slug: str
    title: str
    authors: tuple[str, ...]
    arxiv: str | None
    code: str | None


def _p(slug: str, title: str, authors: str, arxiv: str | None, code: str | None) -> Paper:
    return Paper(slug, title, tuple(a.strip() for a in authors.split(",")), arxiv, code)


PAPERS: dict[str, Paper] = {
    p.slug: p
    for p in (
        _p(
            "seed_gnn",
            "GNNs Also Deserve Editing, and They Need It More Than Once (SEED-GNN)",
            "Shaochen Zhong, Duy Le, Zirui Liu, Zhimeng Jiang, Andrew Ye, Jiamu Zhang, Jiayi Yuan, Kaixiong Zhou, "
            "Zhaozhuo Xu, Jing Ma, Shuai Xu, Vipin Chaudhary, Xia Hu",
            None,
            "https://github.com/henryzhongsc/gnn_editing",
        ),
        _p(
            "feedback_alignment",
            "Implicit Regularization in Feedback Alignment Learning Mechanisms for Neural Networks",
            "Zachary Robertson, Oluwasanmi Koyejo",
            "2306.01870",
            None,
        ),
        _p(
            "ensemble_equivariance",
            "Emergent Equivariance in Deep Ensembles",
            "Jan E. Gerken, Pan Kessel",
            "2403.03103",
            None,
        ),
        _p(
            "group_dro",
            "Efficient Algorithms for Empirical Group Distributionally Robust Optimization and Beyond (ALEG, ALEM)",
            "Dingzhi Yu, Yunuo Cai, Wei Jiang, Lijun Zhang",
            "2403.03562",
            None,
        ),
        _p(
            "dynamic_attention",
            "Algorithm and Hardness for Dynamic Attention Maintenance in Large Language Models",
            "Jan van den Brand, Zhao Song, Tianyi Zhou",
            "2304.02207",
            None,
        ),
        _p(
            "red_xai",
            "Position: Explain to Question not to Justify (RED XAI)",
            "Przemysław Biecek, Wojciech Samek",
            "2402.13914",
            None,
        ),
        _p(
            "crebm",
            "Preference Optimization for Molecule Synthesis with Conditional Residual Energy-based Models (CREBM)",
            "Songtao Liu, Hanjun Dai, Yue Zhao, Peng Liu",
            "2406.02066",
            "https://github.com/SongtaoLiu0823/CREBM",
        ),
        _p(
            "kisa",
            "KISA: A Unified Keyframe Identifier and Skill Annotator for Long-Horizon Robotics Demonstrations",
            "Longxin Kou, Fei Ni, Yan Zheng, Jinyi Liu, Yifu Yuan, Zibin Dong, Jianye Hao",
            None,
            "https://github.com/LongXinKou/KISA",
        ),
        _p(
            "spurious_memorization",
            "How Spurious Features are Memorized: Precise Analysis for Random and NTK Features",
            "Simone Bombari, Marco Mondelli",
            "2305.12100",
            "https://github.com/simone-bombari/spurious-features-memorization",
        ),
        _p(
            "brain",
            "BRAIn: Bayesian Reward-conditioned Amortized Inference for natural language generation from feedback",
            "Gaurav Pandey, Yatin Nandwani, Tahira Naseem, Mayank Mishra, Guangxuan Xu, Dinesh Raghu, "
            "Sachindra Joshi, Asim Munawar, Ramón Fernandez Astudillo",
            "2402.02479",
            None,
        ),
        _p(
            "momentum_particles",
            "Momentum Particle Maximum Likelihood (MPD)",
            "Jen Ning Lim, Juan Kuntz, Samuel Power, Adam M. Johansen",
            "2312.07335",
            "https://github.com/jenninglim/mpgd",
        ),
        _p(
            "c3po",
            "RLVF: Learning from Verbal Feedback without Overgeneralization (C3PO)",
            "Moritz Stephan, Alexander Khazatsky, Eric Mitchell, Annie S. Chen, Sheryl Hsu, Archit Sharma, "
            "Chelsea Finn",
            "2402.10893",
            "https://github.com/austrian-code-wizard/c3po",
        ),
        _p(
            "deep_align",
            "Equivariant Deep Weight Space Alignment (Deep-Align)",
            "Aviv Navon, Aviv Shamsian, Ethan Fetaya, Gal Chechik, Nadav Dym, Haggai Maron",
            "2310.13397",
            "https://github.com/AvivNavon/deep-align",
        ),
        _p(
            "gnn_certify",
            "Verifying message-passing neural networks via topology-based bounds tightening",
            "Christopher Hojny, Shiqiang Zhang, Juan S. Campos, Ruth Misener",
            "2402.13937",
            "https://github.com/christopherhojny/SCIP-MPNN",
        ),
        _p(
            "dera",
            "Decoding-time Realignment of Language Models (DeRa)",
            "Tianlin Liu, Shangmin Guo, Leonardo Bianco, Daniele Calandriello, Quentin Berthet, Felipe Llinares, "
            "Jessica Hoffmann, Lucas Dixon, Michal Valko, Mathieu Blondel",
            "2402.02992",
            "https://github.com/liutianlin0121/decoding-time-realignment",
        ),
        _p(
            "desa",
            "Overcoming Data and Model Heterogeneities in Decentralized Federated Learning via Synthetic "
            "Anchors (DeSA)",
            "Chun-Yin Huang, Kartik Srinivas, Xin Zhang, Xiaoxiao Li",
            "2405.11525",
            "https://github.com/ubc-tea/DESA",
        ),
        _p(
            "graph_transformer",
            "What Improves the Generalization of Graph Transformers? A Theoretical Dive into the "
            "Self-attention and Positional Encoding",
            "Hongkang Li, Meng Wang, Tengfei Ma, Sijia Liu, Zaixi Zhang, Pin-Yu Chen",
            "2406.01977",
            None,
        ),
        _p(
            "tiny_lm",
            "Rethinking Optimization and Architecture for Tiny Language Models (PanGu-pi Pro)",
            "Yehui Tang, Kai Han, Fangcheng Liu, Yunsheng Ni, Yuchuan Tian, Zheyuan Bai, Yi-Qi Hu, Sichao Liu, "
            "Shangling Jui, Yunhe Wang",
            "2402.02791",
            "https://github.com/YuchuanTian/RethinkTinyLM",
        ),
        _p(
            "jetfire",
            "Jetfire: Efficient and Accurate Transformer Pretraining with INT8 Data Flow and Per-Block Quantization",
            "Haocheng Xi, Yuxiang Chen, Kang Zhao, Kaijun Zheng, Jianfei Chen, Jun Zhu",
            "2403.12422",
            "https://github.com/thu-ml/Jetfire-INT8Training",
        ),
    )
}

SLUGS: tuple[str, ...] = tuple(PAPERS)

_EXTRA: dict[str, Method] = {}


def register(method: Method) -> None:
    """Make a method of your own (or a test's) known to :func:`get` and ``icml24 verify``.

    Parameters
    ----------
    method : Method
        Its slug must not be a built-in method's.

    Raises
    ------
    InputError
    """
    if not isinstance(method, Method):
        raise InputError(f"register() takes a Method, got {type(method).__name__}")
    if method.slug in PAPERS and is_implemented(method.slug):
        raise InputError(f"method {method.slug!r} is built in", "choose another slug for your own method")
    _EXTRA[method.slug] = method


def unregister(slug: str) -> None:
    """Forget a method made known with :func:`register` (nothing happens for an unknown slug).

    Parameters
    ----------
    slug : str
    """
    _EXTRA.pop(slug, None)


def all_slugs() -> list[str]:
    """The nineteen built-in slugs, then registered ones.

    Returns
    -------
    list of str
    """
    return list(SLUGS) + [s for s in _EXTRA if s not in PAPERS]


_HERE = Path(__file__).resolve().parent


def module_file(slug: str, name: str) -> Path | None:
    """``src/icml24/<slug>/<name>.py`` when it exists (a method's ``paper`` or ``cli``), else None.

    Parameters
    ----------
    slug, name : str

    Returns
    -------
    pathlib.Path or None
    """
    path = _HERE / slug / f"{name}.py"
    return path if path.is_file() else None


def is_implemented(slug: str) -> bool:
    """True when ``icml24.<slug>.paper`` exists (checked on disk, without importing anything).

    Parameters
    ----------
    slug : str

    Returns
    -------
    bool
    """
    return slug in _EXTRA or module_file(slug, "paper") is not None


def describe(slug: str) -> Method | None:
    """The :class:`Method` of ``slug``, or None while it is only planned (an alias of :func:`get`).

    A method's package ``__init__`` is lazy and its ``paper.py`` imports only the core, so this imports no torch:
    ``icml24 list`` and the verbs' ``--help`` read every method this way in well under a second.

    Parameters
    ----------
    slug : str

    Returns
    -------
    Method or None
    """
    return get(slug)


def check_slug(slug: str) -> str:
    """A known slug from ``slug`` (``seed-gnn`` is read as ``seed_gnn``).

    Parameters
    ----------
    slug : str

    Returns
    -------
    str

    Raises
    ------
    InputError
        For an unknown method.
    """
    if slug in PAPERS or slug in _EXTRA:
        return slug
    alt = slug.replace("-", "_").lower()
    if alt in PAPERS or alt in _EXTRA:
        return alt
    raise InputError(f"unknown method {slug!r}", "run 'icml24 list' for the slugs")


def get(slug: str) -> Method | None:
    """The :class:`Method` of ``slug`` (imports its package), or None while it is only planned.

    Parameters
    ----------
    slug : str

    Returns
    -------
    Method or None
    """
    slug = check_slug(slug)
    if slug in _EXTRA:
        return _EXTRA[slug]
    if not is_implemented(slug):
        return None
    module = importlib.import_module(f"icml24.{slug}.paper")
    method = getattr(module, "METHOD", None)
    if not isinstance(method, Method) or method.slug != slug:
        raise InputError(f"icml24.{slug}.paper does not define METHOD for {slug!r}")
    return method


def method(slug: str, claims) -> Method:
    """Build the ``METHOD`` of a built-in slug from its registry entry: ``METHOD = method("x", (c1, c2))``.

    Parameters
    ----------
    slug : str
        A built-in slug.
    claims : iterable of Claim

    Returns
    -------
    Method
    """
    if slug not in PAPERS:
        raise InputError(f"unknown method {slug!r}", "run 'icml24 list' for the built-in slugs")
    p = PAPERS[slug]
    return Method(slug=slug, title=p.title, arxiv=p.arxiv, code=p.code, claims=tuple(claims), authors=p.authors)


__all__ = [
    "Paper",
    "PAPERS",
    "SLUGS",
    "register",
    "unregister",
    "all_slugs",
    "is_implemented",
    "get",
    "method",
    "check_slug",
    "describe",
    "module_file",
]
