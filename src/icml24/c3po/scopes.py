"""The feedbacks of the assistant world (:mod:`icml24.c3po.world`) and where each applies.

A feedback is one sentence "use X instead of Y in <domain>": its in-scope domain, the near-scope domains that look
alike, and every other domain out of scope. ``"ampersand"`` = "use & instead of and in dms to my colleagues" (near
scope: DMs to friends and family, emails to colleagues; out of scope: recipes, math problems, trivia) and ``"u"`` =
"use u instead of you in recipes" (near scope: math problems, which also say "you add ..."; out of scope: the
other four domains). :func:`parse_feedback` turns a sentence back into its key.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from .feedback import Feedback, word_feedback
from .world import DOMAINS, EFFECTS, AssistantWorld, instruction


@dataclass(frozen=True)
class WorldFeedback:
    """One programmatic feedback of the assistant world and where it applies.

    Parameters
    ----------
    feedback : Feedback
        The feedback (metric and rewrite).
    domain : str
        The in-scope domain.
    near : tuple of str
        Near-scope domains.
    out : tuple of str
        Out-of-scope domains.
    old, new : str
        The word the feedback replaces and its replacement.
    """

    feedback: Feedback
    domain: str
    near: tuple[str, ...]
    out: tuple[str, ...]
    old: str = ""
    new: str = ""


NEAR = {
    "colleague_dm": ("other_dm", "colleague_email"),
    "other_dm": ("colleague_dm",),
    "colleague_email": ("colleague_dm",),
    "recipe": ("math",),
    "math": ("recipe",),
    "trivia": ("recipe",),
}
SHORTCUTS = {"ampersand": ("ampersand", "colleague_dm"), "u": ("u", "recipe")}


def world_feedback(key: str) -> WorldFeedback:
    """Return a feedback of the assistant world: ``"ampersand"`` ("use & instead of and in dms to my
    colleagues"), ``"u"`` ("use u instead of you in recipes"), or ``"<effect>:<domain>"`` for any effect of
    :data:`icml24.c3po.world.EFFECTS` and domain of :data:`icml24.c3po.world.DOMAINS`.

    Parameters
    ----------
    key : str
        Which feedback.

    Returns
    -------
    WorldFeedback
        Near scope: the domains that look alike (other DMs and colleague emails for colleague DMs, math for
        recipes, ...); out of scope: every other domain.
    """
    effect, domain = SHORTCUTS.get(key, tuple(str(key).split(":", 1)) if ":" in str(key) else (key, ""))
    if effect not in EFFECTS or domain not in DOMAINS:
        raise InputError(f"unknown feedback {key!r}", "use 'ampersand', 'u' or '<effect>:<domain>'")
    old, new = EFFECTS[effect]
    fb = word_feedback(old, new, instruction(effect, domain).split(" in ", 1)[1], content=instruction(effect, domain))
    near = NEAR[domain]
    out = tuple(d for d in DOMAINS if d != domain and d not in near)
    return WorldFeedback(fb, domain, near, out, old, new)


def parse_feedback(text: str) -> str:
    """Find the world feedback whose sentence is ``text`` (e.g. "use & instead of and in dms to my colleagues").

    Parameters
    ----------
    text : str
        The sentence.

    Returns
    -------
    str
        Its key ``"<effect>:<domain>"`` for :func:`world_feedback`.
    """
    world = AssistantWorld()
    said = " ".join(str(text).lower().replace("'", " ").replace('"', " ").split())
    for effect, domain, sentence in world.instructions():
        if said == sentence:
            return f"{effect}:{domain}"
    examples = "; ".join(s for _, _, s in world.instructions()[:3])
    raise InputError(f"--feedback {text!r} is not a feedback of the assistant world", f"say e.g.: {examples}")


__all__ = ["WorldFeedback", "world_feedback", "parse_feedback"]
