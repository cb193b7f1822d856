"""One example of every message, for docs/PROTOCOL.md and docs/protocol-v1.json.

The examples are real values: they pass the same checks as anything decoded
from the wire, their commitments are computed by `commitments` from the
example seeds and nonces below, and the game views and events come from the
engine. They tell one story: Ann (player 7) hosts a 3-player room (room 12)
with two bots, and plays seat 0 with the red family.
"""

from __future__ import annotations

import hashlib
from typing import Any

from oriflamme.engine import (
    BACKS,
    FIRST,
    LAST,
    LEFT_TO_RIGHT,
    ChooseDirection,
    Place,
    Rules,
    action_to_data,
    card,
    event_to_data,
    hidden_deal,
    mask_event,
    new_game,
    view,
)
from oriflamme.protocol import identity
from oriflamme.protocol import messages as m
from oriflamme.protocol.commitments import SERVER_SEAT, Opening, card_commitment, seed_commitment
from oriflamme.protocol.record import LogEntry, SeatVerdict
from oriflamme.protocol.updates import PublicGame, events_digest


def example_bytes(label: str, size: int = 32) -> bytes:
    """Deterministic example bytes: the first `size` bytes of SHA-256(label)."""
    return hashlib.sha256(label.encode()).digest()[:size]


GAME = example_bytes("example game", 16)
TOKEN = example_bytes("example session token")
SERVER_SEED = example_bytes("example server seed")
CLIENT_SEEDS = tuple(example_bytes(f"example client seed {seat}") for seat in range(3))
SEED_COMMITMENTS = tuple(
    seed_commitment(GAME, seat, seed) for seat, seed in enumerate(CLIENT_SEEDS)
)
SERVER_COMMITMENT = seed_commitment(GAME, SERVER_SEAT, SERVER_SEED)
SETTINGS = m.RoomSettings(
    players=3, variant="standard", edition="revised", turn_timer=60, first_player="host"
)
ROOM = 12
ANN = 7
# The handshake of a player with a key (Ann's), and the server's key.
ANN_KEY = identity.private_key(example_bytes("example player key"))
SERVER_KEY = identity.private_key(example_bytes("example server key"))
HELLO_NONCE = example_bytes("example hello nonce")
CHALLENGE_NONCE = example_bytes("example challenge nonce")

# The first bytes of a record file (the example of `record` is cut short).
RECORD_START = bytes.fromhex("8ea6666f726d6174b56f7269666c616d6d652d67616d652d7265636f7264")
RED_SOLDIER = card("red", "soldier")
NONCE_0 = example_bytes("example nonce 0")
COMMITMENT_0 = card_commitment(GAME, 0, 0, RED_SOLDIER, NONCE_0)
RED_SPY = card("red", "spy")
NONCE_3 = example_bytes("example nonce 3")
COMMITMENT_3 = card_commitment(GAME, 0, 3, RED_SPY, NONCE_3)


def _seats(ready: bool) -> tuple[m.RoomSeat, ...]:
    return (
        m.RoomSeat(seat=0, name="Ann", player=ANN, ready=ready, connected=True),
        m.RoomSeat(seat=1, name="Bot 1", bot="heuristic", ready=True, connected=True),
        m.RoomSeat(seat=2, name="Bot 2", bot="random", ready=True, connected=True),
    )


def example_game_state() -> m.GameState:
    """Seat 0's push after seat 1 placed the second card of round 1."""
    game = new_game(3, deal=hidden_deal(Rules(3)))
    game.apply(ChooseDirection(LEFT_TO_RIGHT))
    game.apply(Place(BACKS[0], FIRST))
    events = game.apply(Place(BACKS[1], LAST))
    decision = game.decision
    assert decision is not None
    return m.GameState(
        seq=9,
        game=GAME,
        view=view(game, 0),
        events=[event_to_data(mask_event(e, 0)) for e in events],
        commitments=(
            m.PlacementCommitment(pid=1, seat=1, commitment=example_bytes("seat 1 commitment 1")),
        ),
        openings=(),
        snapshot=False,
        decision=m.PendingDecision(
            seat=decision.seat,
            kind=decision.kind,
            turn=3,
            options=[action_to_data(a) for a in decision.options],
            time_left=60000,
        ),
    )


def example_game_update() -> m.GameUpdate:
    """Version 2: the push after seat 1 placed the second card of round 1
    (`example_game_state`'s moment), for every seat and spectator."""
    public = PublicGame(Rules(3))
    earlier = [
        LogEntry(0, ChooseDirection(LEFT_TO_RIGHT)),
        LogEntry(0, Place(BACKS[0], FIRST), pid=0, commitment=COMMITMENT_0),
    ]
    for entry in earlier:
        public.apply(entry)
    entry = LogEntry(
        1, Place(BACKS[1], LAST), pid=1, commitment=example_bytes("seat 1 commitment 1")
    )
    events = public.apply(entry)
    decision = public.game.decision
    assert decision is not None
    return m.GameUpdate(
        seq=9,
        game=GAME,
        at=len(earlier),
        log=(entry,),
        snapshot=False,
        digest=events_digest(events),
        decision=m.Pending(seat=decision.seat, kind=decision.kind, turn=3, time_left=60000),
    )


def examples() -> dict[str, m.Message]:
    """An example of every message type, by type."""
    found: list[m.Message] = [
        m.Hello(versions=(1,), client="oriflamme-cli/0.1", name="Ann", id=1),
        m.Welcome(
            version=1,
            token=TOKEN,
            player=ANN,
            server="oriflamme/0.1",
            resumed=False,
            idle_timeout=120,
            server_id=bytes.fromhex("5be1c8a4e0f2d9173ac64b08e9d2f15c"),
            server_key=identity.public_bytes(SERVER_KEY),
            name="Ann",
            id=1,
        ),
        m.Challenge(
            server_key=identity.public_bytes(SERVER_KEY),
            nonce=CHALLENGE_NONCE,
            signature=identity.sign(
                SERVER_KEY,
                identity.server_proof(HELLO_NONCE, CHALLENGE_NONCE, identity.public_bytes(ANN_KEY)),
            ),
            id=1,
        ),
        m.Prove(
            signature=identity.sign(
                ANN_KEY,
                identity.client_proof(
                    identity.public_bytes(SERVER_KEY),
                    CHALLENGE_NONCE,
                    HELLO_NONCE,
                    identity.public_bytes(ANN_KEY),
                ),
            ),
            id=2,
        ),
        m.Rename(name="Ann B.", id=41),
        m.Leaderboard(id=42),
        m.Ratings(
            players=(
                m.RatingEntry(
                    name="Ann", key=identity.public_bytes(ANN_KEY), rating=1234, games=18
                ),
                m.RatingEntry(
                    name="Bo",
                    key=identity.public_bytes(identity.private_key(example_bytes("Bo's key"))),
                    rating=-87,
                    games=3,
                ),
            ),
            id=42,
        ),
        m.Ping(id=40),
        m.Pong(id=40),
        m.Ok(id=3),
        m.Error(code="room_full", message="room 12 has no free seat", fatal=False, id=5),
        m.ListRooms(id=2),
        m.RoomList(
            rooms=(
                m.RoomSummary(
                    room=ROOM,
                    name="Ann's table",
                    host="Ann",
                    state="waiting",
                    settings=SETTINGS,
                    seated=1,
                    spectators=0,
                ),
            ),
            id=2,
        ),
        m.CreateRoom(settings=SETTINGS, name="Ann's table", id=3),
        m.JoinRoom(room=ROOM, id=4),
        m.Spectate(room=ROOM, id=5),
        m.LeaveRoom(id=6),
        m.Ready(ready=True, id=7),
        m.StartGame(first_player=0, id=8),
        m.AddBot(strategy="heuristic", id=9),
        m.RemoveBot(seat=2, id=10),
        m.Chat(text="good luck, everyone", id=11),
        m.Sync(id=12),
        m.ListRecords(id=23),
        m.RecordList(
            records=(
                m.RecordSummary(
                    record_id=GAME.hex(),
                    room=ROOM,
                    room_name="Ann's table",
                    names=("Ann", "Bot 1", "Bot 2"),
                    seat=0,
                    scores=(9, 12, 7),
                    winners=(1,),
                    valid=True,
                ),
            ),
            id=23,
        ),
        m.ListGames(id=43),
        m.GameList(
            games=(
                m.MyGame(
                    room=ROOM,
                    name="Ann's table",
                    game=GAME,
                    seat=0,
                    names=("Ann", "Bo", "Cy"),
                    round=3,
                    waiting_for=(0,),
                    here=False,
                    time_left=151_200_000,
                ),
            ),
            id=43,
        ),
        m.GamesWaiting(seq=9, rooms=(ROOM,)),
        m.GetRecord(record_id=GAME.hex(), id=24),
        # A record is some 10 KB: the example shows only its first bytes.
        m.RecordData(record_id=GAME.hex(), data=RECORD_START, id=24),
        m.RoomState(
            seq=4,
            room=ROOM,
            name="Ann's table",
            settings=SETTINGS,
            host=ANN,
            state="waiting",
            seats=_seats(True),
            spectators=0,
            seat=0,
        ),
        m.ChatMessage(seq=5, room=ROOM, player=ANN, name="Ann", text="good luck, everyone"),
        m.GameStarted(
            seq=6,
            room=ROOM,
            game=GAME,
            settings=SETTINGS,
            first_player=0,
            families=(("red",), ("blue",), ("green",)),
            server_commitment=SERVER_COMMITMENT,
            time_left=30000,
            seat=0,
        ),
        m.SeedCommit(commitment=SEED_COMMITMENTS[0], id=13),
        m.ServerSeed(seq=7, game=GAME, seed=SERVER_SEED, commitments=SEED_COMMITMENTS),
        example_game_state(),
        example_game_update(),
        m.Direction(turn=0, direction="left-to-right", id=14),
        m.PlaceCard(turn=1, at="first", family="red", commitment=COMMITMENT_0, id=15),
        m.KeepCard(turn=4, id=16),
        m.RevealCard(turn=4, card=RED_SOLDIER, nonce=NONCE_0, id=17),
        m.Choose(turn=5, target=2, id=18),
        m.Move(turn=9, index=0, id=19),
        m.OpenRequest(seq=30, game=GAME, pid=3, time_left=60000),
        m.OpenCard(pid=3, card=RED_SPY, nonce=NONCE_3, id=20),
        m.FinalRevealRequest(seq=95, game=GAME, pids=(3,), time_left=60000),
        m.FinalReveal(
            seed=CLIENT_SEEDS[0],
            openings=(Opening(3, RED_SPY, NONCE_3),),
            id=21,
        ),
        m.HandOver(
            seed=CLIENT_SEEDS[0],
            openings=(Opening(3, RED_SPY, NONCE_3),),
            id=22,
        ),
        m.VoteAbort(game=GAME, id=25),
        m.GameEnd(
            seq=96,
            game=GAME,
            complete=True,
            scores=(9, 12, 7),
            winners=(1,),
            forfeits=(),
            verification=tuple(SeatVerdict(s, "ok") for s in range(3)),
            seeds=tuple(m.SeatSeed(seat=s, seed=seed) for s, seed in enumerate(CLIENT_SEEDS)),
            openings=(Opening(3, RED_SPY, NONCE_3),),
            record_id=GAME.hex(),
        ),
    ]
    return {message.TYPE: message for message in found}


def plain(message: m.Message) -> dict[str, Any]:
    """The example as plain data (what is encoded)."""
    return m.to_data(message)
