"""What each card does, in plain words, for the help screen and the choice line.

The names of cards and the game's log are the narrator's
(`oriflamme.client.narrator`).
"""

from __future__ import annotations

# What each card does, for the help screen and the choice line (the revised
# edition's card texts, as docs/RULES.md rules them).
ABILITIES = {
    "archer": "eliminate the first or the last card of the queue",
    "soldier": "eliminate a card next to this one",
    "spy": "steal 1 point from the owner of a card next to it",
    "heir": "gain 2 if no other face-up card in the queue is an Heir",
    "lord": "gain 1, plus 1 for each neighbouring card of your family",
    "shapeshifter": "copy a face-up Archer, Soldier, Spy, Heir or Lord next to it",
    "assassination": "eliminate any card of the queue, then discard this one",
    "royal_decree": "move another card of the queue elsewhere, then discard this one",
    "ambush": "revealed: +1. Eliminated by an opponent: +4, attacker discarded",
    "conspiracy": "revealed: gain twice the Influence on it, then discard it",
}
