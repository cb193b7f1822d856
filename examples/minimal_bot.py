"""A minimal Oriflamme bot: one game against a real server, random legal moves.

Written from docs/PROTOCOL.md alone, as a starting point for your own client.
It needs Python 3.11+ and msgpack, nothing else (nothing of `oriflamme`).

    python examples/minimal_bot.py HOST:PORT --create 3 --bots 2
    python examples/minimal_bot.py HOST:PORT --room 4 --name Zoe
    python examples/minimal_bot.py --self-test        # check the hashing against the vectors

Exit status: 0 when the game ended and this seat's verdict is `ok`, 1 otherwise.
What it leaves out: resuming a dropped session (a real client stores its token,
seed and nonces on disk *before* sending the commitments, see "Sessions and
resuming"), TLS, turn timers, and any strategy.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import random
import secrets
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgpack

KINDS = ["archer", "soldier", "spy", "heir", "lord", "shapeshifter",
         "assassination", "royal_decree", "ambush", "conspiracy"]  # fmt: skip
MAX_PAYLOAD = 65536

# --- Commit-reveal and the fair deal -------------------------------------------


def encode(*fields: bytes) -> bytes:
    """The canonical encoding: each field is a 4-byte big-endian length, then its bytes."""
    return b"".join(len(f).to_bytes(4, "big") + f for f in fields)


VERSION = (1).to_bytes(2, "big")  # the protocol version, a 2-byte field


def seed_commitment(game: bytes, seat: int, seed: bytes) -> bytes:
    """Seat 255 is the server's own seed."""
    tag = b"oriflamme/v1/seed-commitment"
    return hashlib.sha256(encode(tag, VERSION, game, bytes([seat]), seed)).digest()


def card_commitment(game: bytes, seat: int, pid: int, card: list[str], nonce: bytes) -> bytes:
    tag = b"oriflamme/v1/card-commitment"
    family, kind = card[0].encode(), card[1].encode()
    preimage = encode(
        tag, VERSION, game, bytes([seat]), pid.to_bytes(4, "big"), family, kind, nonce
    )
    return hashlib.sha256(preimage).digest()


def deal_stream(client_seed: bytes, game: bytes, seat: int, server_seed: bytes) -> Iterator[int]:
    """The seat's byte stream: HMAC-SHA256 blocks keyed by the client seed, read byte by byte."""
    for i in range(2**32):
        message = encode(b"oriflamme/v1/deal-stream", VERSION, game, bytes([seat]), server_seed,
                         i.to_bytes(4, "big"))  # fmt: skip
        yield from hmac.digest(client_seed, message, "sha256")
    raise RuntimeError("deal stream exhausted")  # never reached: a deal reads a few dozen bytes


def shuffle(stream: Iterator[int]) -> list[str]:
    """Fisher-Yates on the ten kinds, with rejection sampling against modulo bias."""
    order = list(KINDS)
    for i in range(9, 0, -1):
        n = i + 1
        while (b := next(stream)) >= 256 - 256 % n:
            pass  # rejected byte: take the next one
        j = b % n
        order[i], order[j] = order[j], order[i]
    return order


def derive_deal(families, client_seed, game, seat, server_seed):
    """(set_aside, hand, draw_pile) as lists of [family, kind]; the pile top first."""
    stream = deal_stream(client_seed, game, seat, server_seed)
    orders = [shuffle(stream) for _ in families]  # second family continues the stream
    if len(families) == 1:  # standard game: 3 set aside, 7 in hand
        return ([[families[0], k] for k in orders[0][:3]],
                [[families[0], k] for k in orders[0][3:]], [])  # fmt: skip
    set_aside = [[f, k] for f, o in zip(families, orders, strict=True) for k in o[:3]]
    hand = [[f, k] for f, o in zip(families, orders, strict=True) for k in o[3:6]]
    pile = [[f, o[p]] for p in range(6, 10) for f, o in zip(families, orders, strict=True)]
    return set_aside, hand, pile  # two-player: pile alternates A6, B6, A7, B7, ...


def self_test(path: Path) -> None:
    """Check every function above against docs/test-vectors.json (do the same for yours)."""
    v = json.loads(path.read_text())
    h = bytes.fromhex
    for c in v["card_commitments"]:
        got = card_commitment(h(c["game_id"]), c["seat"], c["pid"], c["card"], h(c["nonce"]))
        assert got.hex() == c["commitment"], c
    for c in v["seed_commitments"]:
        assert seed_commitment(h(c["game_id"]), c["seat"], h(c["seed"])).hex() == c["commitment"]
    for c in v["stream_blocks"]:
        s = deal_stream(h(c["client_seed"]), h(c["game_id"]), c["seat"], h(c["server_seed"]))
        block = bytes(next(s) for _ in range(32 * (c["counter"] + 1)))[-32:]
        assert block.hex() == c["block"], c
    for c in v["shuffles"]:
        read: list[int] = []  # every byte the shuffles take, rejected ones included
        raw = deal_stream(h(c["client_seed"]), h(c["game_id"]), c["seat"], h(c["server_seed"]))
        stream = (read.append(b) or b for b in raw)
        assert [shuffle(stream) for _ in range(c["family_count"])] == c["orders"], c
        assert len(read) == c["bytes_read"], c
        assert len(read) - 9 * c["family_count"] == c["bytes_rejected"], c
    for c in v["deals"]:
        deal = derive_deal(c["families"], h(c["client_seed"]), h(c["game_id"]), c["seat"],
                           h(c["server_seed"]))  # fmt: skip
        assert list(deal) == [c["set_aside"], c["hand"], c["draw_pile"]], c
    print("self-test: every test vector checks out")


# --- Transport and framing -----------------------------------------------------


class Connection:
    """Frames over TCP: a 4-byte big-endian length, then one msgpack map."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.buffer = b""
        self.next_id = 1
        self.pending: dict[int, str] = {}  # request id -> message type, until answered
        self.idle_timeout = 30.0  # until `welcome` says otherwise
        self.last_sent = time.monotonic()
        self.last_seq = 0

    def send(self, type_: str, **fields) -> None:
        message = {"type": type_, **fields, "id": self.next_id}
        self.pending[self.next_id] = type_
        self.next_id += 1
        payload = msgpack.packb(message, use_bin_type=True)  # bytes go out as bin
        self.sock.sendall(len(payload).to_bytes(4, "big") + payload)
        self.last_sent = time.monotonic()

    def receive(self) -> dict:
        """The next message from the server; pings whenever we were silent for idle_timeout/3."""
        while True:
            if len(self.buffer) >= 4:
                n = int.from_bytes(self.buffer[:4], "big")
                if not 1 <= n <= MAX_PAYLOAD:
                    raise ConnectionError(f"bad frame length {n}")
                if len(self.buffer) >= 4 + n:
                    payload, self.buffer = self.buffer[4 : 4 + n], self.buffer[4 + n :]
                    return self.check(msgpack.unpackb(payload, raw=False))
            wait = self.last_sent + self.idle_timeout / 3 - time.monotonic()
            if wait <= 0:
                self.send("ping")
                continue
            self.sock.settimeout(wait)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue  # the loop sends the ping
            if not data:
                raise ConnectionError("the server closed the connection")
            self.buffer += data

    def check(self, message: dict) -> dict:
        if "seq" in message:  # a push: seq goes up by exactly one on a connection
            if self.last_seq and message["seq"] != self.last_seq + 1:
                raise ConnectionError(f"seq {message['seq']} after {self.last_seq}")
            self.last_seq = message["seq"]
        elif "id" in message:  # an answer: it settles the request with that id
            request = self.pending.pop(message["id"], None)
            if message["type"] == "error":
                print(f"refused {request}: {message['code']}: {message['message']}")
                if request != "start_game":  # start_game may come too early: we retry
                    raise SystemExit(1)
        elif message["type"] == "error":  # an error without id: fatal ones end the connection
            raise ConnectionError(f"{message['code']}: {message['message']}")
        return message


# --- The bot -------------------------------------------------------------------


class Bot:
    def __init__(self, conn: Connection, args: argparse.Namespace) -> None:
        self.conn, self.args = conn, args
        self.player = 0  # our player id, from `welcome`
        self.started = False  # start_game sent for the current room_state
        self.answered: set[int] = set()  # decision turns already answered
        self.placed: dict[int, tuple[list[str], bytes]] = {}  # pid -> (card, nonce)

    def run(self) -> int:
        c = self.conn
        c.send("hello", versions=[1], client="minimal_bot/1", name=self.args.name)
        welcome = c.receive()
        if welcome["type"] != "welcome" or welcome["version"] != 1:
            raise ConnectionError(f"no welcome: {welcome}")
        self.player, c.idle_timeout = welcome["player"], welcome["idle_timeout"]
        if self.args.create:
            players = self.args.create
            settings = {"players": players, "edition": "revised", "first_player": "host",
                        "variant": "two-player" if players == 2 else "standard"}  # fmt: skip
            c.send("create_room", settings=settings)  # no turn_timer: the room waits for us
            for _ in range(self.args.bots):
                c.send("add_bot", strategy="random")
        else:
            c.send("join_room", room=self.args.room)
        c.send("ready", ready=True)
        while True:
            m = c.receive()
            handler = getattr(self, "on_" + m["type"], None)
            if handler and (code := handler(m)) is not None:
                return code

    def on_room_state(self, m: dict) -> None:
        seats = m["seats"]
        if m["room"] != getattr(self, "room", None):  # say once where we are: others may join
            self.room = m["room"]
            print(f"in room {self.room}, seat {m['seat']}", flush=True)
        if (m["host"] == self.player and m["state"] == "waiting" and not self.started
                and all("name" in s and s["ready"] for s in seats)):  # fmt: skip
            self.started = True
            self.conn.send("start_game")

    def on_game_started(self, m: dict) -> None:
        self.game, self.seat = m["game"], m["seat"]
        self.families = m["families"][self.seat]
        self.server_commitment = m["server_commitment"]
        self.seed = secrets.token_bytes(32)  # a real client stores it before committing
        self.conn.send("seed_commit", commitment=seed_commitment(self.game, self.seat, self.seed))
        print(f"game {self.game.hex()}: seat {self.seat}, families {self.families}")

    def on_server_seed(self, m: dict) -> None:
        if seed_commitment(self.game, 255, m["seed"]) != self.server_commitment:
            raise ConnectionError("the server seed does not open its commitment")
        self.set_aside, self.hand, self.pile = derive_deal(
            self.families, self.seed, self.game, self.seat, m["seed"]
        )

    def on_game_state(self, m: dict) -> None:
        for event in m["events"]:
            if event["type"] == "placed" and event["seat"] == self.seat:
                self.hand.remove(self.placed[event["pid"]][0])  # the card left our hand
            elif event["type"] == "drew" and event["seat"] == self.seat:
                n = len(event["cards"])  # our own draws come as backs: take them from our pile
                self.hand += self.pile[:n]
                self.pile = self.pile[n:]
        view = m["view"]
        assert len(view["hands"][self.seat]) == len(self.hand), "hand out of step with the server"
        d = m.get("decision")
        if d and d["seat"] == self.seat and d["turn"] not in self.answered:
            self.answered.add(d["turn"])
            self.decide(d, view)

    def decide(self, d: dict, view: dict) -> None:
        kind, turn, choice = d["kind"], d["turn"], random.choice(d["options"])
        send = self.conn.send
        if kind == "direction":
            send("direction", turn=turn, direction=choice["direction"])
        elif kind == "place":
            family = choice["card"][0]  # options name card backs: any card of that family
            card = random.choice([c for c in self.hand if c[0] == family])
            pid, nonce = view["next_pid"], secrets.token_bytes(32)
            self.placed[pid] = (card, nonce)  # a real client stores it before sending
            commitment = card_commitment(self.game, self.seat, pid, card, nonce)
            send("place", turn=turn, at=choice["at"], family=family, commitment=commitment)
        elif kind == "reveal" and choice["type"] == "reveal":
            card, nonce = self.placed[d["pid"]]
            send("reveal", turn=turn, card=card, nonce=nonce)
        elif kind == "reveal":
            send("keep", turn=turn)
        elif kind in ("eliminate", "steal", "copy", "move_card"):
            send("choose", turn=turn, target=choice["pid"])
        elif kind == "move_to":
            send("move", turn=turn, index=choice["index"])
        # kind "open" is answered when its `open_request` arrives

    def opening(self, pid: int) -> dict:
        card, nonce = self.placed[pid]
        return {"pid": pid, "card": card, "nonce": nonce}

    def on_open_request(self, m: dict) -> None:
        self.conn.send("open", **self.opening(m["pid"]))

    def on_final_reveal_request(self, m: dict) -> None:
        self.conn.send(
            "final_reveal", seed=self.seed, openings=[self.opening(p) for p in m["pids"]]
        )

    def on_game_end(self, m: dict) -> int:
        print("scores:", " ".join(map(str, m["scores"])), "winners:", m["winners"])
        for v in m["verification"]:
            print(
                f"seat {v['seat']}: {v['status']}" + (f" ({v['reason']})" if "reason" in v else "")
            )
        print(f"record: {m['record_id']}")
        self.conn.send("leave_room")  # be polite; the session would expire anyway
        mine = next(v for v in m["verification"] if v["seat"] == self.seat)
        return 0 if mine["status"] == "ok" else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("server", nargs="?", help="HOST:PORT")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--room", type=int, help="join the room with this id")
    group.add_argument("--create", type=int, metavar="PLAYERS", choices=range(2, 6))
    p.add_argument("--name", default="MinimalBot")
    p.add_argument("--bots", type=int, default=0, help="with --create: server bots to seat")
    p.add_argument("--self-test", action="store_true", help="check against the test vectors")
    args = p.parse_args()
    if args.self_test:
        self_test(Path(__file__).resolve().parent.parent / "docs" / "test-vectors.json")
        return 0
    if not args.server or (args.room is None and not args.create):
        p.error("give HOST:PORT and one of --room or --create")
    host, _, port = args.server.rpartition(":")
    conn = Connection(host, int(port))
    try:
        return Bot(conn, args).run()
    finally:
        conn.sock.close()


if __name__ == "__main__":
    sys.exit(main())
