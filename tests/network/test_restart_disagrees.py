"""A server killed mid-game and started again by a version whose engine
plays otherwise: the replay of its journal disagrees with the game, which
is kept out of play (its players told), or, with `--strict-replay`, the
server does not start (exit status 3).

The "new version" is the same server run through a wrapper (`python -c`)
that patches the engine before calling the command line's `main`: every
ability that scores gives one more Influence. Nothing of it is in the
server's code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from oriflamme.client.bots import Behaviour, Bot
from oriflamme.client.session import Session, tcp
from oriflamme.engine.events import Scored
from oriflamme.protocol import messages as m
from oriflamme.server.persistence import KEY_FILE
from tests.deadlines import GAME_HANG, HANG
from tests.network.server_process import ServerProcess
from tests.network.test_server_restart import start_a_game
from tools.docgen.worked_example import fixed_secrets

pytestmark = [pytest.mark.network, pytest.mark.process]

NEW_VERSION = """
import sys
import oriflamme.engine.game as game
from oriflamme.engine.events import Scored
def made(kind, fields):
    if kind is Scored:
        fields = (fields[0], fields[1] + 1, fields[2])
    return tuple.__new__(kind, fields)
game._ev = made
from oriflamme.launcher.cli import main
sys.exit(main())
"""
NOT_RESTORED = "this game could not be restored by this server version"


def scored(session: Session) -> bool:
    game = session.state.game
    return game is not None and any(type(e) is Scored for e in game.events)


@pytest.mark.trio
async def test_a_game_that_a_new_version_replays_otherwise_is_kept_out_of_play(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / KEY_FILE).write_bytes(bytes(range(32)))
    (data / KEY_FILE).chmod(0o600)
    old = ServerProcess(data)
    new = ServerProcess(data, command=[sys.executable, "-c", NEW_VERSION])
    new.port = port = old.start()
    try:
        with trio.fail_after(GAME_HANG):
            sessions = [
                Session(
                    tcp("127.0.0.1", port),
                    f"p{i}",
                    behaviour=Behaviour(Bot("random", seed=f"disagree {i}")),
                    make_secrets=fixed_secrets(f"disagree {i}"),
                )
                for i in range(3)
            ]
            async with trio.open_nursery() as nursery:
                for s in sessions:
                    await nursery.start(s.run)
                host = sessions[0]
                await start_a_game(sessions)
                await host.wait_until(lambda: scored(host))
                old.kill()
                new.start()  # on the same port: the players come back by themselves
                found = new.wait_for_log(
                    rb"room 1: game ([0-9a-f]{32}): the decision at turn (\d+) \(([^)]*)\)"
                    rb" came out otherwise than when it was played"
                )
                game_id = found.group(1).decode()
                assert host.state.game is not None
                assert game_id == host.state.game.game_id.hex()
                new.wait_for_log(rb"this server version cannot restore the game; it is kept")
                for s in sessions:

                    def told(s: Session = s) -> bool:
                        return any(
                            NOT_RESTORED in c.text and c.player is None for c in s.state.chat
                        )

                    await s.wait_until(told)
                answer = await host.request(m.Sync())  # (a sync is still answered)
                assert isinstance(answer, m.Ok)
                for s in sessions:
                    s.close()
            new.kill()
    finally:
        old.stop()
        new.stop()
    assert "came out otherwise" not in old.log()[: new.offset]  # (the old version agreed)

    # Told to be strict, the new version does not start: status 3, and why.
    log = tmp_path / "strict.log"
    with open(log, "wb") as out:
        strict = subprocess.run(
            [
                sys.executable,
                "-c",
                NEW_VERSION,
                "serve",
                "--port",
                "0",
                "--data-dir",
                str(data),
                "--strict-replay",
            ],
            stdout=out,
            stderr=out,
            timeout=HANG,
            check=False,
        )
    said = log.read_text()
    assert strict.returncode == 3, said
    assert f"room 1: game {game_id}: the decision at turn" in said
    assert re.search(
        r"oriflamme serve: the journal's replay by this server version disagrees"
        rf" with 1 game\(s\) in progress: {game_id} \(turn \d+\)",
        said,
    )
    assert "--strict-replay" in said and "serving on" not in said
