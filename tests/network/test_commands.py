"""`oriflamme serve`, `bot`, `rooms` and `verify` as a person runs them: real
processes, real sockets on 127.0.0.1, every wait with a deadline."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
import trio
import trio.testing

from oriflamme.client.commands import FIRST_ATTEMPTS, run_bot
from oriflamme.client.failures import said
from oriflamme.protocol import messages as m
from tests.deadlines import GAME_HANG, HANG
from tests.network.server_process import COMMAND, ServerProcess

pytestmark = [pytest.mark.network, pytest.mark.process]


@pytest.fixture
def server(served: ServerProcess) -> tuple[int, Path, subprocess.Popen[bytes]]:
    assert served.process is not None
    return served.port, served.data_dir, served.process


def stop_every(bots: list[subprocess.Popen[str]]) -> None:
    """Kill the bots still running: a failed test leaves none behind,
    reconnecting for ever."""
    for bot in bots:
        if bot.poll() is None:
            bot.kill()
            bot.wait(timeout=HANG)


def run(*args: str, timeout: float = HANG) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=timeout)


def test_three_bot_processes_play_a_game_whose_record_verifies(
    server: tuple[int, Path, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    port, data, _ = server
    bots = [
        subprocess.Popen(
            [
                *COMMAND,
                "bot",
                f"127.0.0.1:{port}",
                "--room",
                "friday",
                "--players",
                "3",
                "--games",
                "2",
                "--name",
                f"bot{i}",
                "--state-dir",
                str(tmp_path / f"bot{i}"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    try:
        for bot in bots:
            out, err = bot.communicate(timeout=GAME_HANG)
            assert bot.returncode == 0, err
            assert "2 game(s) played" in out
    finally:
        stop_every(bots)
    exported = run("export-records", str(data), str(tmp_path / "exported"))
    assert exported.returncode == 0, exported.stderr
    records = sorted((tmp_path / "exported").glob("*.oriflamme"))
    assert len(records) == 2
    for record in records:
        # Downloaded from the server, as a player would, then checked offline.
        downloaded = tmp_path / "downloaded.oriflamme"
        got = run("record", f"127.0.0.1:{port}", record.stem, "-o", str(downloaded))
        assert got.returncode == 0, got.stderr
        assert downloaded.read_bytes() == record.read_bytes()
        verified = run("verify", str(downloaded))
        assert verified.returncode == 0, verified.stdout
        assert "verdict: VALID" in verified.stdout
    missing = run("record", f"127.0.0.1:{port}", "0" * 32)
    assert missing.returncode == 1 and "no record" in missing.stderr


def bot_process(port: int, name: str, state_dir: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *COMMAND,
            "bot",
            f"127.0.0.1:{port}",
            "--room",
            "kill",
            "--players",
            "3",
            "--name",
            name,
            "--state-dir",
            str(state_dir),
            "--log-level",
            "info",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def tallied(state_dir: Path) -> int | None:
    """How many games the bot of `state_dir` has counted (`bot-games.json`)."""
    import json

    try:
        played = json.loads((state_dir / "bot-games.json").read_text())["played"]
    except (OSError, ValueError, KeyError):
        return None
    return played if type(played) is int else None


@pytest.mark.parametrize("games", [1, 2])
def test_a_bot_process_killed_in_its_last_game_and_started_again_finishes_it(
    server: tuple[int, Path, subprocess.Popen[bytes]], tmp_path: Path, games: int
) -> None:
    import time

    port, data, _ = server
    many = ("--games", str(games))
    bots = [bot_process(port, f"bot{i}", tmp_path / f"bot{i}", *many) for i in range(3)]
    try:
        # The bot writes its seat's secrets as a game starts, before it
        # commits to them: from then on the game cannot go on without it.
        # (Those of a game over go once its record verifies, before the
        # game is counted in bot-games.json: its last game is the one whose
        # secrets are there once the games before it are counted.)
        secrets = tmp_path / "bot0" / "games"
        deadline = time.monotonic() + GAME_HANG
        while not (tallied(tmp_path / "bot0") == games - 1 and list(secrets.glob("*.secrets"))):
            assert time.monotonic() < deadline, "the last game never started"
            assert bots[0].poll() is None, bots[0].communicate()
            time.sleep(0.005)
        bots[0].kill()
        bots[0].communicate(timeout=HANG)
        again = bot_process(port, "bot0", tmp_path / "bot0", *many)
        bots.append(again)
        out, err = again.communicate(timeout=GAME_HANG)
        assert again.returncode == 0, err
        # It plays what was left: the game it was in, and no more.
        assert "back in the game" in err and f"{games} game(s) played" in out
        for bot in bots[1:3]:
            out, err = bot.communicate(timeout=GAME_HANG)
            assert bot.returncode == 0, err
            assert f"{games} game(s) played" in out
    finally:
        stop_every(bots)
    exported = run("export-records", str(data), str(tmp_path / "exported"))
    assert exported.returncode == 0, exported.stderr
    records = sorted((tmp_path / "exported").glob("*.oriflamme"))
    assert len(records) == games
    for record in records:
        verified = run("verify", str(record))
        assert verified.returncode == 0 and "verdict: VALID" in verified.stdout, verified.stdout
    assert not (tmp_path / "bot0" / "bot-games.json").exists()  # all played: nothing kept


@pytest.mark.trio
async def test_a_bot_that_cannot_reach_the_server_says_so_at_each_try_and_gives_up(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    with socketserver_port() as port:
        pass  # closed again: nothing listens there now
    with (
        trio.fail_after(120),
        pytest.raises(BaseException) as raised,
    ):  # (seconds of the mock clock)
        await run_bot("127.0.0.1", port, room="r")
    # What `oriflamme bot` prints after "stopped: " (not "Exceptions from Trio nursery")
    assert said(raised.value).startswith("cannot reach the server: ")
    tries = [r for r in caplog.records if "trying again" in r.getMessage()]
    assert len(tries) == FIRST_ATTEMPTS and all(r.levelname == "WARNING" for r in tries)


def test_rooms_lists_the_rooms(server: tuple[int, Path, subprocess.Popen[bytes]]) -> None:
    port, _, _ = server
    listed = run("rooms", f"127.0.0.1:{port}")
    assert listed.returncode == 0 and listed.stdout.strip() == "no rooms"
    bad = run("rooms", "127.0.0.1:notaport")
    assert bad.returncode == 2 and "not a port number" in bad.stderr
    # Piped to a command that reads nothing (as `| head -1` may): the pipe is
    # closed before the list is written, and that is no error of ours.
    reader, writer = os.pipe()
    os.close(reader)
    with os.fdopen(writer, "wb") as closed_pipe:
        piped = subprocess.run(
            [*COMMAND, "rooms", f"127.0.0.1:{port}"],
            stdout=closed_pipe,
            stderr=subprocess.PIPE,
            text=True,
            timeout=HANG,
        )
    assert "Traceback" not in piped.stderr and piped.returncode == 141, piped.stderr


def test_leaderboard_lists_the_rated_players(
    server: tuple[int, Path, subprocess.Popen[bytes]],
) -> None:
    port, _, _ = server
    listed = run("leaderboard", f"127.0.0.1:{port}")
    assert listed.returncode == 0 and listed.stdout.startswith("no rated players yet")


def test_the_leaderboard_as_a_table() -> None:
    from oriflamme.client.commands import format_ratings
    from oriflamme.protocol.identity import fingerprint

    entry = m.RatingEntry(name="Ann", key=bytes(32), rating=1234, games=18)
    table = format_ratings(m.Ratings(players=(entry,))).splitlines()
    assert table[1].split() == ["1", "12.3", "18", "Ann", fingerprint(bytes(32))]


def test_sigterm_tells_the_clients_and_exits(served: ServerProcess) -> None:
    import socket

    port, process = served.port, served.process
    assert process is not None
    with socket.create_connection(("127.0.0.1", port), timeout=HANG) as client:
        client.settimeout(HANG)
        # Taken by the server, not merely queued by the kernel: a connection
        # still in the queue when the server stops is refused, told nothing.
        mine = client.getsockname()[1]
        served.wait_for_log(rb"connection \S+ from 127\.0\.0\.1:%d\b" % mine)
        process.send_signal(signal.SIGTERM)
        received = b""
        while b"shutting_down" not in received:
            chunk = client.recv(4096)
            if not chunk:
                break
            received += chunk
        assert b"shutting_down" in received
    assert process.wait(timeout=HANG) == 0


def test_a_second_signal_while_the_server_stops_does_not_cut_the_stop_short(
    server: tuple[int, Path, subprocess.Popen[bytes]],
) -> None:
    port, data, process = server
    assert run("rooms", f"127.0.0.1:{port}").returncode == 0  # it serves
    # Back to back (two different signals: trio would merge two of the same),
    # both pending before the server handles either: sent while it is
    # stopped, not merely one soon after the other (on a loaded machine, the
    # server could stop altogether between the two).
    os.kill(process.pid, signal.SIGSTOP)
    try:
        os.kill(process.pid, signal.SIGTERM)
        os.kill(process.pid, signal.SIGINT)
    finally:
        os.kill(process.pid, signal.SIGCONT)
    assert process.wait(timeout=HANG) == 0
    log = (data.parent / f"{data.name}.log").read_text()
    assert "already shutting down" in log and "stopped" in log
    assert "Traceback" not in log and "KeyboardInterrupt" not in log


def test_a_server_on_a_host_that_does_not_resolve_says_so_and_makes_nothing(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    result = run("serve", "--host", "nosuch.invalid", "--port", "0", "--data-dir", str(data))
    assert result.returncode == 2, result.stderr
    assert "cannot serve on nosuch.invalid port 0" in result.stderr
    assert "Traceback" not in result.stderr and not data.exists()


def test_rooms_of_a_server_that_is_not_there_says_so_plainly() -> None:
    with socketserver_port() as port:
        pass  # closed again: nothing listens there now
    result = run("rooms", f"127.0.0.1:{port}")
    assert result.returncode == 1
    assert "cannot get the rooms" in result.stderr and "Traceback" not in result.stderr


class socketserver_port:
    """A free port on 127.0.0.1 (bound, then released)."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        port: int = self.sock.getsockname()[1]
        return port

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


if os.name != "posix":  # signals and process groups as on Linux
    pytestmark.append(pytest.mark.skip(reason="these tests need a POSIX system"))
