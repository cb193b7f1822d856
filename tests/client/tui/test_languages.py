"""The game in French and in Polish: the catalogs complete and sound, the
card names the rulebooks give, and every screen of real games fitting
80x24 in each language with nothing that matters cut.

The catalogs are read as gettext's tools read them (Babel), and the screens
drawn through the compiled ``.mo`` files the client loads, so a catalog
changed but not compiled fails here too (`make test` compiles them first).
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from hypothesis import given, settings
from hypothesis import strategies as st

from oriflamme.client import i18n
from oriflamme.client.catalogs import load
from oriflamme.client.narrator import FAMILIES, YOU, EventLog, family_short, kind_name
from oriflamme.client.replay import replay_steps
from oriflamme.client.state import ClientState
from oriflamme.client.tui.choices import ESCAPE, RIGHT, Chooser
from oriflamme.client.tui.controller import Command, GameController, refusal
from oriflamme.client.tui.lobby import _HELP, LobbyController
from oriflamme.client.tui.replay_screen import ReplayController
from oriflamme.client.tui.screen import (
    HELP_KEYS,
    EndSummary,
    Scene,
    queue_names,
    render,
    short_name,
    tiny_name,
)
from oriflamme.client.tui.text import cells
from oriflamme.client.tui.words import ABILITIES
from oriflamme.client.view import TableView
from oriflamme.engine import FAMILY_NAMES, Game, RandomPlayer, mask_event
from oriflamme.protocol import messages as m
from oriflamme.protocol.record import decode_record
from oriflamme.protocol.verify import verify_record
from tests.client.tui.helpers import NAMES, Table, game, press_an_offer, screen_text, text
from tests.client.tui.test_lobby import lobby_in_a_room
from tools.catalogs import extract, read, untranslated

LANGUAGES = tuple(lang for lang in i18n.LANGUAGES if lang != i18n.DEFAULT)
SAMPLE = Path(__file__).parents[3] / "docs" / "records" / "honest-3-players.oriflamme"
TABLES = [(2, 21), (3, 22), (4, 23), (5, 24)]  # (players, seed), as test_screen's
# `str.format`'s named fields, and the %-style ones of argparse's words.
PLACEHOLDER = re.compile(r"\{\w*\}|%\(\w+\)[sr]|%[sr]")

# Each card's name as the rulebook of the language names it (docs/LANGUAGES.md).
RULEBOOK_NAMES = {
    "fr": {
        "archer": "Archer",
        "soldier": "Soldat",
        "spy": "Espion",
        "heir": "Héritier",
        "lord": "Seigneur",
        "shapeshifter": "Changeforme",
        "assassination": "Assassinat",
        "royal_decree": "Décret royal",
        "ambush": "Embuscade",
        "conspiracy": "Complot",
    },
    "pl": {
        "archer": "Łucznik",
        "soldier": "Żołnierz",
        "spy": "Szpieg",
        "heir": "Dziedzic",
        "lord": "Lord",
        "shapeshifter": "Impostor",
        "assassination": "Zlecenie zabójstwa",
        "royal_decree": "Królewski Dekret",
        "ambush": "Zasadzka",
        "conspiracy": "Spisek",
    },
}


@pytest.fixture(params=LANGUAGES)
def language(request: pytest.FixtureRequest) -> Iterator[str]:
    """The client speaking each language in turn, from its compiled catalog."""
    lang = str(request.param)
    with i18n.using(load(lang), lang):
        yield lang


def _strings(catalog: Catalog) -> dict[tuple[str | None, str], object]:
    return {(m.context, m.id if isinstance(m.id, str) else m.id[0]): m for m in catalog if m.id}


# ---------------------------------------------------------------- the catalogs


def _texts(said: object) -> tuple[str, ...]:
    """A message's id or translation, as its forms (one, or a plural's)."""
    if isinstance(said, str):
        return (said,)
    assert isinstance(said, tuple | list), said
    return tuple(str(s) for s in said)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_string_of_the_code_is_translated(lang: str) -> None:
    """Every string marked in the code has a translation (not fuzzy) in the
    catalog; the failure lists what is missing (`make locale` merges new
    strings in, `python -m tools.catalogs missing` lists them)."""
    catalog = read(lang)
    known = _strings(catalog)
    lacking = {id(m) for m in untranslated(catalog)}
    missing = [
        f"{context or ''}|{key}"
        for (context, key) in _strings(extract())
        if (context, key) not in known or id(known[(context, key)]) in lacking
    ]
    assert missing == [], f"{lang}: {len(missing)} not translated:\n" + "\n".join(missing)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_translation_drops_or_adds_a_placeholder(lang: str) -> None:
    wrong = []
    for message in read(lang):
        if not message.id:
            continue
        ids = _texts(message.id)
        strings = _texts(message.string)
        wanted = set().union(*(PLACEHOLDER.findall(s) for s in ids))
        found = [set(PLACEHOLDER.findall(s)) for s in strings]
        # A plural's forms may each leave out the count ("une autre partie"),
        # but together they say what the English says, and nothing else.
        if set().union(*found) != wanted or any(not f <= wanted for f in found):
            wrong.append(f"{ids[0]!r} -> {strings!r}")
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize(("lang", "forms"), [("fr", 3), ("pl", 3)])
def test_plural_forms(lang: str, forms: int) -> None:
    """Every plural has each form its language has (Polish: 1, 2-4 and 5+;
    French: CLDR's one, many and other), and the compiled catalog picks them."""
    catalog = read(lang)
    assert catalog.num_plurals == forms
    for message in catalog:
        if isinstance(message.id, tuple):
            assert len(_texts(message.string)) == forms and all(_texts(message.string)), message.id
    drew = load(lang)
    said = {
        n: drew.ngettext("You drew {count} card", "You drew {count} cards", n).format(count=n)
        for n in (1, 2, 5, 12, 22, 25)
    }
    if lang == "pl":
        assert said == {
            1: "Dobierasz 1 kartę",
            2: "Dobierasz 2 karty",
            5: "Dobierasz 5 kart",
            12: "Dobierasz 12 kart",
            22: "Dobierasz 22 karty",
            25: "Dobierasz 25 kart",
        }
    else:
        assert said[1] == "Vous piochez 1 carte" and said[2] == "Vous piochez 2 cartes"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_compiled_catalog_says_what_its_source_says(lang: str) -> None:
    """The .mo the client reads is the .po compiled (not one left from before)."""
    compiled = load(lang)
    for message in read(lang):
        if not message.id or isinstance(message.id, tuple) or message.fuzzy:
            continue
        (said,) = _texts(message.id)
        if message.context:
            got = compiled.pgettext(message.context, said)
        else:
            got = compiled.gettext(said)
        assert got == message.string, (
            f"{lang}: the compiled catalog is older than its source at {message.id!r}:"
            " `make test` compiles it (or `python -m tools.catalogs compile`)"
        )


def test_card_names_are_the_rulebooks(language: str) -> None:
    names = {kind: kind_name(kind) for kind in ABILITIES}
    assert names == RULEBOOK_NAMES[language]


def test_short_names_fit_their_places(language: str) -> None:
    """In the queue the shortest form fits "(name)" in 6 cells; the lists
    of cards out take 10 cells, or 5 where room is short; a colour in short
    (the two-player variant's tags) at most 4, each its own."""
    for kind in ABILITIES:
        forms = queue_names(kind)
        assert forms[0] == kind_name(kind)
        assert cells(forms[-1]) <= 4, forms
        assert [cells(f) for f in forms] == sorted((cells(f) for f in forms), reverse=True)
        assert cells(short_name(kind)) <= 10 and cells(tiny_name(kind)) <= 5, kind
    assert FAMILIES == FAMILY_NAMES  # (the same order: a family's index names it)
    shorts = [family_short(f) for f in range(5)]
    assert all(cells(f) <= 4 for f in shorts) and len(set(shorts)) == 5, shorts


def test_the_language_is_chosen_as_gettext_does() -> None:
    env = {"LANG": "fr_FR.UTF-8"}
    assert i18n.choose(None, None, env) == ("fr", "LANG=fr_FR.UTF-8")
    assert i18n.choose(None, "pl", env)[0] == "pl"  # the config over the locale
    assert i18n.choose("en", "pl", env)[0] == "en"  # --lang over both
    assert i18n.choose(None, "de", env)[0] == "fr"  # a setting not known: the locale
    assert i18n.choose(None, None, {"LC_ALL": "pl_PL.UTF-8", "LANG": "fr_FR"})[0] == "pl"
    assert i18n.choose(None, None, {"LANGUAGE": "pl:fr", "LC_ALL": "fr_FR"})[0] == "pl"
    assert i18n.choose(None, None, {"LC_MESSAGES": "de_DE.UTF-8", "LANG": "fr_FR"}) == (
        "en",
        "LC_MESSAGES=de_DE.UTF-8",
    )
    assert i18n.choose(None, None, {}) == ("en", "nothing set")


# ---------------------------------------------------------------- the screens


def _walk(players: int, seed: int, names: tuple[str, ...]) -> Iterator[tuple[Game, EventLog]]:
    """`helpers.walk` in the language in use: our own seat (0) is its "You"."""
    g = game(players, seed)
    player = RandomPlayer(seed=seed)
    log = EventLog(lambda s: i18n._(YOU) if s == 0 else names[s], me=lambda: 0)
    while True:
        yield g, log
        if g.over:
            return
        log.add([mask_event(e, 0) for e in g.apply(player.choose(g))])


def _scene(g: Game, log: EventLog, names: tuple[str, ...], **extra: object) -> Scene:
    d = g.decision
    view = TableView.of(g, 0)
    chooser = None
    if d is not None and d.seat == 0 and d.kind != "open":
        who = lambda s: i18n._(YOU) if s == 0 else names[s]  # noqa: E731
        chooser = Chooser(str(d.kind), list(d.options), view, seat=0, who=who, pid=d.pid)
    scene = Scene(
        view=view,
        names=names[: g.n],
        seat=0,
        log=log.lines,
        decision_seat=None if d is None else d.seat,
        decision_kind=None if d is None else str(d.kind),
        chooser=chooser,
    )
    for key, value in extra.items():
        setattr(scene, key, value)
    return scene


def _words(said: str) -> str:
    return " ".join(said.replace(":", " ").split())


def _exact(lines: list, width: int = 80, height: int = 24) -> list[str]:
    """The screen's lines, after checking it is `height` lines of exactly
    `width` cells (wide and combining characters counted as a terminal does)."""
    assert len(lines) == height
    for i, line in enumerate(lines):
        assert sum(cells(t) for _, t in line) == width, (i, text(line))
    return [text(line) for line in lines]


# Names with a wide character (two cells) and a combining one (none).
WIDE_NAMES = ("Ann", "李雷", "Zoe\u0308", "Łucja", "Ed")


@pytest.mark.parametrize(("players", "seed"), TABLES)
@pytest.mark.parametrize("names", [NAMES, WIDE_NAMES], ids=["ascii", "wide"])
def test_every_screen_of_real_games_fits_80x24(
    language: str, players: int, seed: int, names: tuple[str, ...]
) -> None:
    """Every position of a real game, as our seat sees it, in 80x24 exactly;
    our choice's heading and every choice's key on screen; the end of the
    game with its ranking and its verification in full."""
    shown = 0
    for g, log in _walk(players, seed, names):
        scene = _scene(g, log, names)
        lines = _exact(render(scene, 80, 24))
        assert lines[0].rstrip().endswith(i18n._("? help"))
        chooser = scene.chooser
        if chooser is not None:
            heading = chooser.heading
            at = next(i for i, line in enumerate(lines) if line.startswith("─ " + heading[:8]))
            said = lines[at][2:].rstrip("─ ") + " " + lines[at + 1] + " " + lines[at + 2]
            assert _words(heading) in _words(said), heading
            bottom = "\n".join(lines[-7:])
            for offer in chooser.offers():
                assert offer.shown.partition("] ")[0] + "]" in bottom, offer
            shown += 1
        if g.over:
            verified = i18n._(
                "Verified: fair deal for all {seats} seats, every hidden card checked."
            ).format(seats=g.n)
            end = EndSummary(scores=g.scores, winners=g.winners, verified=verified)
            lines = _exact(render(_scene(g, log, names, end=end), 80, 24))
            flat = " ".join(" ".join(lines).split())
            assert " ".join(verified.split()) in flat
            for seat in range(g.n):
                assert f"{names[seat] if seat else i18n._(YOU)} {g.scores[seat]}" in flat
    assert shown > 10


def test_the_help_screen_is_whole_in_each_language(language: str) -> None:
    """Every card's ability and every key's words in full at 80x24, with the
    card names of the rulebook."""
    lines = _exact(render(Scene(view=None, names=[], help=True), 80, 24))
    shown = "\n".join(lines)
    for kind, (context, words) in ABILITIES.items():
        said = i18n.pgettext(context, words)
        assert re.search(rf"^ {re.escape(kind_name(kind))} +{re.escape(said)} *$", shown, re.M)
    for _key, words in HELP_KEYS:
        assert i18n._(words) in shown, words
    assert lines[-1].rstrip().endswith(")" if language == "fr" else "gry")


def test_the_log_reads_in_the_language(language: str) -> None:
    """The log names the cards as the rulebook does, and says nothing in English."""
    g, log = next((g, log) for g, log in _walk(3, 22, NAMES) if g.over)
    text_of_log = "\n".join(log.lines)
    for english in ("placed", "revealed", "eliminated", " the queue", "Round"):
        assert english not in text_of_log
    assert any(name in text_of_log for name in RULEBOOK_NAMES[language].values())


def test_a_screen_in_english_is_as_it_was() -> None:
    """No catalog: the code's own English (what every other screen test reads)."""
    g, log = next((g, log) for g, log in _walk(3, 22, NAMES) if g.over)
    assert "placed" in screen_text(render(_scene(g, log, NAMES), 80, 24))


# ---------------------------------------------------------------- the lobby


def test_the_lobby_in_each_language_fits_with_every_key_shown(language: str) -> None:
    """The lobby's screens (the room list, a room as its host, the
    new-room form, the help) at 80x24: exact, every key of the bottom line
    on screen, every line of the help whole."""
    sent: list[Command] = []
    outside = LobbyController(ClientState(), sent.append, server="192.0.2.2:7601", name="Łucja")
    host, _sent, table = lobby_in_a_room(players=4, bots=1)
    rooms = table.ask(m.ListRooms())
    assert isinstance(rooms, m.RoomList)
    outside.answered(m.ListRooms(), rooms)
    listed = _exact(outside.lines(80, 24))[2]
    assert "friday" in listed and "…" not in listed, listed  # (every column whole)
    form = LobbyController(ClientState(), sent.append, server="here", name="Ann")
    form.key("n")
    for lobby in (outside, host, form):
        lines = _exact(lobby.lines(80, 24))
        keys = re.findall(r"\[[^\]]+\]", lines[-1])
        assert len(keys) >= 2, lines[-1]
        wanted = re.findall(r"\[[^\]]+\]", "".join(t for _, t in lobby._keys_line(200)))
        assert set(wanted) <= set(keys), (wanted, lines[-1])
    outside.key("?")
    shown = _exact(outside.lines(80, 24))
    for line in _HELP:
        said = i18n._(line) if line else ""
        assert cells(" " + said) <= 80, said
        assert any(row.rstrip() == (" " + said).rstrip() for row in shown), said


# ---------------------------------------------------------------- whole games


ENGLISH_WORDS = ("Influence Queue", "Your hand", "Waiting for", " placed ", "revealed", "Players")


@pytest.mark.slow
def test_a_whole_game_at_the_table_in_each_language(language: str) -> None:
    """A game played over the protocol with the terminal's controller, in the
    language: every screen of it at 80x24 exactly, nothing said in English,
    and once each the cards out (o), the scores (s), the help (?) and the
    resign question (R)."""
    table = Table(3)
    table.seat_bots_and_start()
    asides = ["o", "s", "?", "R"]

    def choose(controller: GameController, rng: random.Random) -> None:
        screen = "\n".join(_exact(controller.lines(80, 24)))
        assert not [w for w in ENGLISH_WORDS if w in screen], screen
        if asides:
            controller.key(asides.pop())
            aside = "\n".join(_exact(controller.lines(80, 24)))
            assert not [w for w in ENGLISH_WORDS if w in aside], aside
            controller.key(ESCAPE)
        press_an_offer(controller, rng)

    assert table.play_to_end(choose) > 6
    assert not asides
    end = "\n".join(_exact(table.controller.lines(80, 24)))
    assert i18n._("Game over · round {round} of {rounds}").format(round=6, rounds=6) in end
    assert i18n._("(winner)") in end


def test_a_replay_in_each_language(language: str) -> None:
    """Every step of a sample record's replay at 80x24 exactly, its
    sentences in the language with the players' names for the seats."""
    record = decode_record(SAMPLE.read_bytes())
    steps = replay_steps(record)
    replay = ReplayController(record, steps, verify_record(record), SAMPLE.name)
    seats = [i18n._("seat {number}").format(number=n) for n in range(len(record.seats))]
    for _step in steps:
        lines = _exact(replay.lines(80, 24))
        footer = "\n".join(lines[-6:])
        assert not [s for s in seats if s in footer] and " placed " not in footer, footer
        replay.key(RIGHT)
    assert i18n._("Verified: fair deal, every hidden card opened and checked.") in "\n".join(lines)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    lang=st.sampled_from(LANGUAGES),
    players=st.integers(2, 5),
    seed=st.integers(0, 10_000),
    steps=st.integers(0, 150),
    width=st.integers(80, 240),
    height=st.integers(24, 80),
)
def test_any_position_at_any_size_in_each_language(
    lang: str, players: int, seed: int, steps: int, width: int, height: int
) -> None:
    """test_screen's property in each language: any position, any size, the
    screen exactly filled (a spectator's and the window's wait too)."""
    with i18n.using(load(lang), lang):
        for i, (g, log) in enumerate(_walk(players, seed, WIDE_NAMES)):  # noqa: B007
            if i == steps or g.over:
                break
        scene = _scene(g, log, WIDE_NAMES, seconds_left=75)
        _exact(render(scene, width, height), width, height)
        spectator = Scene(view=TableView.of(g, None), names=WIDE_NAMES[: g.n], log=log.lines)
        _exact(render(spectator, width, height), width, height)
        _exact(render(Scene(view=None, names=["Ann"]), width, height), width, height)


def test_a_refusal_is_said_in_the_language(language: str) -> None:
    """A code a player meets is said in their language; the server's own
    English words only where the code is not one of those."""
    said = refusal("room_full", "room 3 has no free seat (see docs/PROTOCOL.md, Errors)")
    assert said == i18n._("the room has no free seat") != "the room has no free seat"
    assert refusal("internal", "boom (see docs/PROTOCOL.md, Errors)") == "boom"
    with i18n.using(i18n.English(), "en"):
        assert refusal("room_full", "room 3 has no free seat") == "room 3 has no free seat"


def test_no_marked_string_hides_in_an_f_string() -> None:
    """The extractor reads calls, not f-strings' insides: `f"{_('you')}"`
    would be shown in English in every language."""
    root = Path(__file__).parents[3]
    hidden = [
        f"{path.relative_to(root)}:{number}"
        for folder in ("client", "launcher")
        for path in sorted((root / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\{\s*(_|N_|ngettext|pgettext)\(", line)
    ]
    assert hidden == []


def test_every_module_that_translates_has_the_translation_and_no_local_underscore() -> None:
    """A module that calls `_()` imports it from `oriflamme.client.i18n`, and
    binds no `_` of its own: a `host, _, port = ...` in a function makes
    `_` a local string there (its `_("...")` then raises), and ruff removes
    the import as unused."""
    root = Path(__file__).parents[3]
    wrong = []
    for folder in ("client", "launcher"):
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            nodes = list(ast.walk(tree))
            calls = any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "_"
                for n in nodes
            )
            imported = any(
                isinstance(n, ast.ImportFrom)
                and (n.module or "").endswith("i18n")
                and any(a.name == "_" and a.asname is None for a in n.names)
                for n in nodes
            )
            bound = [
                n.lineno
                for n in nodes
                if isinstance(n, ast.Name) and n.id == "_" and isinstance(n.ctx, ast.Store)
            ]
            if calls and not imported:
                wrong.append(f"{path.relative_to(root)}: calls _() without importing it")
            if imported and bound:
                wrong.append(f"{path.relative_to(root)}:{bound[0]}: binds a local _")
    assert wrong == []
