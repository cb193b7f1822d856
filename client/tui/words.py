"""What each card does, in plain words, for the help screen and the choice line.

The names of cards and the game's log are the narrator's
(`oriflamme.client.narrator`).
"""

from __future__ import annotations

from ..i18n import NP_

# What each card does, for the help screen and the choice line (the revised
# edition's card texts, as docs/RULES.md rules them).
ABILITIES = {
    "archer": NP_("help", "eliminate the first or the last card of the queue"),
    "soldier": NP_("help", "eliminate a card next to this one"),
    "spy": NP_("help", "steal 1 point from the owner of a card next to it"),
    "heir": NP_("help", "gain 2 if no other face-up card in the queue is an Heir"),
    "lord": NP_("help", "gain 1, plus 1 for each neighbouring card of your family"),
    "shapeshifter": NP_("help", "copy a face-up Archer, Soldier, Spy, Heir or Lord next to it"),
    "assassination": NP_("help", "eliminate any card of the queue, then discard this one"),
    "royal_decree": NP_("help", "move another card of the queue elsewhere, then discard this one"),
    "ambush": NP_("help", "revealed: +1. Eliminated by an opponent: +4, attacker discarded"),
    "conspiracy": NP_("help", "revealed: gain twice the Influence on it, then discard it"),
}
