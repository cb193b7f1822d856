"""The `oriflamme` command, run in process as a user would call it."""

import json
from pathlib import Path

import pytest

from oriflamme.client.cli import main


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


def test_the_installed_console_script_runs() -> None:
    import subprocess
    import sys

    script = Path(sys.executable).parent / "oriflamme"
    assert script.exists(), "the console script is installed beside the interpreter"
    result = subprocess.run(
        [str(script), "selfplay", "--players", "5", "--games", "5", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "5 games, 5 players" in result.stdout
