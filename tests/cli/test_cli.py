"""The `oriflamme` command, run in process as a user would call it."""

import contextlib
import io
import json
import tempfile
from pathlib import Path

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oriflamme.launcher.cli import main
from oriflamme.protocol.codec import MAX_DEPTH
from oriflamme.protocol.record import MAX_RECORD_SIZE
from tests.deadlines import HANG
from tests.protocol.wire_data import (
    map_of,
    nested_arrays,
    nested_maps,
    packed,
    positions,
    replaced,
    spliced,
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_selfplay_prints_win_rates_scores_and_speed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "selfplay", "--players", "3", "--games", "20", "--seed", "1")
    assert code == 0
    assert "20 games, 3 players, standard, revised edition, seed 1" in out
    assert out.count("random") >= 3
    assert "games/s" in out and "decisions/s" in out


def test_selfplay_with_a_seed_is_reproducible(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("selfplay", "--players", "4", "--games", "30", "--seed", "9", "--json")
    first = json.loads(run(capsys, *args)[1])
    second = json.loads(run(capsys, *args)[1])
    for report in (first, second):
        for key in ("seconds", "games_per_second", "decisions_per_second"):
            report.pop(key)
    assert first == second
    assert sum(s["wins"] for s in first["seats"]) == pytest.approx(30)


def test_selfplay_mixes_strategies_by_seat(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        *("selfplay", "--players", "4", "--games", "40", "--seed", "2"),
        *("--strategy", "heuristic,random", "--json"),
    )
    report = json.loads(out)
    assert code == 0
    assert [s["strategy"] for s in report["seats"]] == ["heuristic", "random"] * 2
    assert set(report["strategies"]) == {"heuristic", "random"}


def test_selfplay_two_player_variant(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "selfplay", "--variant", "two-player", "--games", "10", "--seed", "3", "--json"
    )
    report = json.loads(out)
    assert code == 0 and report["players"] == 2 and report["variant"] == "two-player"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--players", "2"), "seats 3-5 players"),
        (("--variant", "two-player", "--players", "3"), "exactly 2 players"),
        (("--strategy", "clever"), "unknown strategy 'clever'"),
    ],
)
def test_selfplay_refuses_bad_settings_clearly(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    code, _, err = run(capsys, "selfplay", "--games", "1", *argv)
    assert code == 2
    assert message in err


def test_a_recorded_game_verifies_and_a_tampered_one_does_not(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record = tmp_path / "game.rec"
    code, out, _ = run(
        capsys, "selfplay", "--games", "1", "--seed", "4", "--players", "3", "--record", str(record)
    )
    assert code == 0 and f"to {record}" in out
    code, out, _ = run(capsys, "verify", str(record))
    assert code == 0
    assert "verdict: VALID" in out

    data = bytearray(record.read_bytes())
    at = data.find(b"nonce") + 8  # inside the first logged nonce
    data[at] ^= 1
    tampered = tmp_path / "tampered.rec"
    tampered.write_bytes(bytes(data))
    code, out, _ = run(capsys, "verify", str(tampered))
    assert code == 1
    assert "does not match its commitment" in out
    assert "NOT VALID" in out


def test_verify_reports_an_unreadable_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "verify", str(tmp_path / "missing.rec"))
    assert code == 2 and "cannot read" in err
    junk = tmp_path / "junk.rec"
    junk.write_bytes(b"\x00\x01 not msgpack")
    code, _, err = run(capsys, "verify", str(junk))
    assert code == 2 and "not a readable game record" in err


@pytest.mark.process
def test_the_installed_console_script_runs() -> None:
    import subprocess
    import sys

    script = Path(sys.executable).parent / "oriflamme"
    assert script.exists(), "the console script is installed beside the interpreter"
    result = subprocess.run(
        [str(script), "selfplay", "--players", "5", "--games", "5", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "5 games, 5 players" in result.stdout


# ------------------------------------------------------------------ verify: exit codes 0, 1, 2

RECORDS = Path(__file__).resolve().parents[2] / "docs" / "records"
SAMPLES = json.loads((RECORDS / "index.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("entry", SAMPLES, ids=lambda e: e["file"])
def test_verify_exits_0_for_a_valid_record_and_1_for_an_invalid_one(
    capsys: pytest.CaptureFixture[str], entry: dict
) -> None:
    code, out, err = run(capsys, "verify", str(RECORDS / entry["file"]))
    assert err == ""
    if entry["valid"]:
        assert code == 0 and "verdict: VALID" in out and "NOT VALID" not in out
    else:
        assert code == 1 and "verdict: NOT VALID" in out
    for verdict in entry["verdicts"]:
        if verdict["reason"] is not None:
            assert verdict["reason"] in out


@pytest.fixture(scope="module")
def recorded_game(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A valid record written by `selfplay --record`."""
    path = tmp_path_factory.mktemp("record") / "game.oriflamme"
    assert main(["selfplay", "--games", "1", "--seed", "5", "--record", str(path)]) == 0
    assert main(["verify", str(path)]) == 0
    return path.read_bytes()


def record_with(data: bytes, path: tuple, raw: bytes) -> bytes:
    """The record `data` with the encoded value `raw` at `path`."""
    return spliced(msgpack.unpackb(data), path, raw)


def unreadable_records(good: bytes) -> dict[str, bytes]:
    first_place = next(
        i for i, e in enumerate(msgpack.unpackb(good)["log"]) if e["action"]["type"] == "place"
    )
    card = ("log", first_place, "action", "card")
    return {
        "empty": b"",
        "junk": b"\x00\x01 not msgpack",
        "truncated": good[: len(good) // 2],
        "trailing bytes": good + b"\x00",
        "not a map": packed([1, 2, 3]),
        "another map": packed({"format": "something else", "version": 1}),
        "too big": b"\x00" * (MAX_RECORD_SIZE + 1),
        # Nested past the limit: 1000 deep (msgpack's own limit is 1024),
        # anywhere, a known field or not.
        "a card 1000 arrays deep": record_with(good, card, nested_arrays(1000, "red")),
        "a family 1000 arrays deep": record_with(good, (*card, 0), nested_arrays(1000, "red")),
        "a seat's name 1000 maps deep": record_with(good, ("seats", 0, "name"), nested_maps(1000)),
        "an unknown field 1000 deep": record_with(good, ("future",), nested_arrays(1000)),
        "an event just past the limit": record_with(good, ("events", 0), nested_maps(MAX_DEPTH)),
        "a key twice": map_of(
            [(packed(k), packed(v)) for k, v in msgpack.unpackb(good).items()]
            + [(packed("format"), packed(msgpack.unpackb(good)["format"]))]
        ),
        "a float": record_with(good, ("future",), packed(1.5)),
        "a binary key": record_with(good, ("settings", "future"), b"\x81\xc4\x01k\x01"),
    }


def test_verify_exits_2_for_anything_that_is_not_a_readable_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, recorded_game: bytes
) -> None:
    for label, data in unreadable_records(recorded_game).items():
        path = tmp_path / "bad.oriflamme"
        path.write_bytes(data)
        code, out, err = run(capsys, "verify", str(path))
        assert code == 2, label
        assert out == "" and "is not a readable game record" in err, label
        assert len(err) < 600, label  # the value is never quoted whole
    code, _, err = run(capsys, "verify", str(tmp_path))  # a directory
    assert code == 2 and "cannot read" in err


@pytest.mark.process
def test_a_deeply_nested_record_is_unreadable_not_invalid(
    tmp_path: Path, recorded_game: bytes
) -> None:
    """Run as a user runs it: a record nested deep exits 2 (unreadable), with
    no traceback (a crash would exit 1, as if the game were not valid)."""
    import subprocess
    import sys

    unpacked = msgpack.unpackb(recorded_game)
    first_place = next(i for i, e in enumerate(unpacked["log"]) if e["action"]["type"] == "place")
    record = record_with(
        recorded_game, ("log", first_place, "action", "card"), nested_arrays(1000, "red")
    )
    path = tmp_path / "deep.oriflamme"
    path.write_bytes(record)
    script = Path(sys.executable).parent / "oriflamme"
    result = subprocess.run(
        [str(script), "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "is not a readable game record" in result.stderr
    assert "Traceback" not in result.stderr


HONEST = (RECORDS / "honest-3-players.oriflamme").read_bytes()
HONEST_PATHS = list(positions(msgpack.unpackb(HONEST)))
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-1, 300)
    | st.sampled_from([2**32, 2**64 - 1, "", "red", "spy", "place", "first", b"", bytes(32)]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None)
@given(changes=st.lists(st.tuples(st.sampled_from(HONEST_PATHS), values), min_size=1, max_size=3))
def test_verify_exits_0_1_or_2_for_any_record_and_never_crashes(
    changes: list[tuple[tuple, object]],
) -> None:
    data = msgpack.unpackb(HONEST)
    for path, value in changes:
        with contextlib.suppress(IndexError, KeyError, TypeError):  # an earlier change moved it
            replaced(data, path, value)
    with tempfile.TemporaryDirectory() as tmp:
        changed = Path(tmp) / "changed.oriflamme"
        changed.write_bytes(packed(data))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["verify", str(changed)])
    assert code in (0, 1, 2)
    assert (code == 2) == ("is not a readable game record" in err.getvalue())
    if code != 2:
        assert ("verdict: VALID" in out.getvalue()) == (code == 0)


def test_serve_has_a_flag_for_every_abuse_limit_and_refuses_one_out_of_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from oriflamme.launcher.cli import SERVER_LIMITS
    from oriflamme.server.core.config import LIMITS, RANGES

    assert [name for name, _, _ in SERVER_LIMITS] == list(LIMITS) == list(RANGES)
    with tempfile.TemporaryDirectory() as data:
        code = main(["serve", "--port", "0", "--data-dir", data, "--chat-length", "600"])
    assert code == 2
    assert "chat_length must be 1 to 500, not 600" in capsys.readouterr().err


def test_ctrl_c_before_a_command_takes_it_over_ends_it_plainly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import oriflamme.launcher.cli as cli

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt  # as Ctrl-C does while a command imports what it needs

    monkeypatch.setattr(cli, "_rooms", interrupted)
    assert main(["rooms", "127.0.0.1:7531"]) == 130
    assert capsys.readouterr().err == "oriflamme: interrupted\n"
