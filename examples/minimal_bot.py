"""A minimal Oriflamme bot: one game against a real server, random legal moves.

Written from docs/PROTOCOL.md alone, as a starting point for your own client.
It needs Python 3.11+ and msgpack, nothing else (nothing of `oriflamme`): run
it with a checkout's `.venv/bin/python`, which has msgpack, or install it in
a virtual environment first (`python3 -m venv bot && bot/bin/pip install
msgpack`, then `bot/bin/python examples/minimal_bot.py`). Without it, it
stops at once with `ModuleNotFoundError: No module named 'msgpack'`.

    python examples/minimal_bot.py HOST:PORT --create 3 --bots 2
    python examples/minimal_bot.py HOST:PORT --room 4 --name Zoe
    python examples/minimal_bot.py --self-test    # check the hashing against the vectors

Exit status: 0 when the game ended and this seat's verdict is `ok`, 1 otherwise.
Left out: resuming a dropped session (a real client stores its token, seed and
nonces on disk *before* sending the commitments: see "Sessions and resuming"),
TLS, strict checks of what the server sends, turn timers, and any strategy.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import random
import secrets
import socket
import ssl
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgpack

KINDS = ["archer", "soldier", "spy", "heir", "lord", "shapeshifter",
         "assassination", "royal_decree", "ambush", "conspiracy"]  # fmt: skip
VERSION = (1).to_bytes(2, "big")  # the protocol version, hashed as a 2-byte field
SERVER_SEAT = 255  # the seat number of the server's own seed commitment

# --- Commit-reveal and the fair deal (PROTOCOL.md, "Commit-reveal and the fair deal")


def encode(*fields: bytes) -> bytes:
    """The canonical encoding: each field is its 4-byte big-endian length, then its bytes."""
    return b"".join(len(f).to_bytes(4, "big") + f for f in fields)


def seed_commitment(game: bytes, seat: int, seed: bytes) -> bytes:
    tag = b"oriflamme/v1/seed-commitment"
    return hashlib.sha256(encode(tag, VERSION, game, bytes([seat]), seed)).digest()


def card_commitment(game: bytes, seat: int, pid: int, card: list[str], nonce: bytes) -> bytes:
    tag, family, kind = b"oriflamme/v1/card-commitment", card[0].encode(), card[1].encode()
    pid_bytes = pid.to_bytes(4, "big")
    preimage = encode(tag, VERSION, game, bytes([seat]), pid_bytes, family, kind, nonce)
    return hashlib.sha256(preimage).digest()


def deal_stream(client_seed: bytes, game: bytes, seat: int, server_seed: bytes) -> Iterator[int]:
    """The seat's byte stream: HMAC-SHA256 blocks keyed by the client seed, byte by byte."""
    for i in range(2**32):
        tag, counter = b"oriflamme/v1/deal-stream", i.to_bytes(4, "big")
        message = encode(tag, VERSION, game, bytes([seat]), server_seed, counter)
        yield from hmac.digest(client_seed, message, "sha256")


def shuffle(stream: Iterator[int]) -> list[str]:
    """Fisher-Yates on the ten kinds; rejection sampling removes the modulo bias."""
    order = list(KINDS)
    for i in range(9, 0, -1):
        n = i + 1
        while (b := next(stream)) >= 256 - 256 % n:
            pass  # a rejected byte: take the next one
        j = b % n
        order[i], order[j] = order[j], order[i]
    return order


def derive_deal(families, client_seed, game, seat, server_seed):
    """(set_aside, hand, draw_pile), cards as [family, kind], the draw pile top first."""
    stream = deal_stream(client_seed, game, seat, server_seed)
    orders = [shuffle(stream) for _ in families]  # a second family continues the stream
    if len(families) == 1:  # standard game: 3 set aside, 7 in hand
        (f,), (o,) = families, orders
        return [[f, k] for k in o[:3]], [[f, k] for k in o[3:]], []
    pairs = list(zip(families, orders, strict=True))  # two-player: A then B
    set_aside = [[f, k] for f, o in pairs for k in o[:3]]
    hand = [[f, k] for f, o in pairs for k in o[3:6]]
    pile = [[f, o[p]] for p in range(6, 10) for f, o in pairs]  # A6, B6, A7, B7, ...
    return set_aside, hand, pile


def self_test(path: Path) -> None:
    """Check every function above against docs/test-vectors.json: do the same with yours."""
    vectors, h = json.loads(path.read_text()), bytes.fromhex
    for v in vectors["card_commitments"]:
        got = card_commitment(h(v["game_id"]), v["seat"], v["pid"], v["card"], h(v["nonce"]))
        assert got.hex() == v["commitment"], v
    for v in vectors["seed_commitments"]:
        assert seed_commitment(h(v["game_id"]), v["seat"], h(v["seed"])).hex() == v["commitment"]
    for v in vectors["stream_blocks"]:
        s = deal_stream(h(v["client_seed"]), h(v["game_id"]), v["seat"], h(v["server_seed"]))
        block = bytes(next(s) for _ in range(32 * (v["counter"] + 1)))[-32:]
        assert block.hex() == v["block"], v
    for v in vectors["shuffles"]:
        read: list[int] = []  # every byte the shuffles take, the rejected ones included
        s = deal_stream(h(v["client_seed"]), h(v["game_id"]), v["seat"], h(v["server_seed"]))
        counted = (read.append(b) or b for b in s)
        assert [shuffle(counted) for _ in range(v["family_count"])] == v["orders"], v
        assert len(read) == v["bytes_read"], v
        assert len(read) - 9 * v["family_count"] == v["bytes_rejected"], v
    for v in vectors["deals"]:
        seeds = h(v["client_seed"]), h(v["game_id"]), v["seat"], h(v["server_seed"])
        deal = derive_deal(v["families"], *seeds)
        assert list(deal) == [v["set_aside"], v["hand"], v["draw_pile"]], v
    print("self-test: every test vector checks out")


# --- Transport and framing (PROTOCOL.md, "Transport and framing", "Requests, answers and ids")


class Connection:
    """Frames over TCP: a 4-byte big-endian length, then one msgpack map."""

    def __init__(self, host: str, port: int, tls: bool = False, pin: str | None = None) -> None:
        sock = socket.create_connection((host, port), timeout=10)
        if tls or pin:  # TLS: the system's authorities vouch for the server, or we pin it
            context = ssl.create_default_context()
            if pin:
                context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            sock = context.wrap_socket(sock, server_hostname=host)
            der = sock.getpeercert(binary_form=True) or b""
            if pin and hashlib.sha256(der).hexdigest() != pin.replace(":", "").lower():
                sock.close()
                raise ConnectionError("the server's certificate is not the one pinned")
        self.sock = sock
        self.buffer = b""
        self.next_id = 1
        self.pending: dict[int, str] = {}  # request id -> its type, until answered
        self.idle_timeout = 30.0  # until `welcome` says
        self.last_sent = time.monotonic()
        self.last_seq = 0

    def send(self, type_: str, **fields) -> None:
        """Every request gets a fresh id; its answer (ok, error...) will carry it."""
        message = {"type": type_, **fields, "id": self.next_id}
        self.pending[self.next_id] = type_
        self.next_id += 1
        payload = msgpack.packb(message, use_bin_type=True)  # bytes go out as bin
        self.sock.sendall(len(payload).to_bytes(4, "big") + payload)
        self.last_sent = time.monotonic()

    def receive(self) -> dict:
        """The next message; sends `ping` whenever we have been silent for idle_timeout / 3."""
        while len(self.buffer) < 4 or len(self.buffer) < 4 + self.frame_length():
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
        n = self.frame_length()
        payload, self.buffer = self.buffer[4 : 4 + n], self.buffer[4 + n :]
        message = msgpack.unpackb(payload, raw=False)
        if "seq" in message:  # a push: on one connection, seq goes up by exactly one
            if self.last_seq and message["seq"] != self.last_seq + 1:
                raise ConnectionError(f"push seq {message['seq']} after {self.last_seq}")
            self.last_seq = message["seq"]
        else:  # an answer: note which request it settles (an `error` may have no id)
            message["request"] = self.pending.pop(message.get("id", -1), None)
        return message

    def frame_length(self) -> int:
        n = int.from_bytes(self.buffer[:4], "big")
        if not 1 <= n <= 65536:
            raise ConnectionError(f"bad frame length {n}")
        return n


# --- The bot ------------------------------------------------------------------


class Bot:
    def __init__(self, conn: Connection, args: argparse.Namespace) -> None:
        self.conn, self.args = conn, args
        self.room = None  # our room id, from `room_state`
        self.started = False  # start_game sent
        self.answered: set[int] = set()  # decision turns already answered
        self.placed: dict[int, tuple[list[str], bytes]] = {}  # pid -> (card, nonce)

    def run(self) -> int:
        c = self.conn
        c.send("hello", versions=[1], client="minimal_bot/1", name=self.args.name)
        welcome = c.receive()
        if welcome["type"] != "welcome" or welcome["version"] != 1:
            raise ConnectionError(f"no welcome: {welcome}")
        self.player, c.idle_timeout = welcome["player"], welcome["idle_timeout"]
        if self.args.create:  # requests may follow each other without waiting for answers
            n = self.args.create
            settings = {"players": n, "variant": "two-player" if n == 2 else "standard",
                        "edition": "revised", "first_player": "host"}  # fmt: skip
            c.send("create_room", settings=settings)  # no turn_timer: the game waits for us
            for _ in range(self.args.bots):
                c.send("add_bot", strategy="random")
        else:
            c.send("join_room", room=self.args.room)
        c.send("ready", ready=True)
        while True:  # from here on, everything is a reaction to what the server sends
            m = c.receive()
            if m["type"] == "error":
                print(f"refused {m['request']}: {m['code']}: {m['message']}")
                if m["fatal"] or m["request"] != "start_game":
                    return 1  # a correct bot never gets one: stop rather than guess
                self.started = False  # someone was not ready after all: wait for them
                continue
            handler = getattr(self, "on_" + m["type"], None)  # ok, pong...: nothing to do
            if handler and (code := handler(m)) is not None:
                return code

    def on_room_state(self, m: dict) -> None:
        if m["room"] != self.room:  # say where we are, so that others may join
            self.room = m["room"]
            print(f"in room {self.room}, seat {m['seat']}", flush=True)
        everyone_ready = all("name" in s and s["ready"] for s in m["seats"])  # bots included
        i_am_host = m["host"] == self.player
        # once: several room_states may come before the game starts
        if i_am_host and m["state"] == "waiting" and everyone_ready and not self.started:
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
        if seed_commitment(self.game, SERVER_SEAT, m["seed"]) != self.server_commitment:
            raise ConnectionError("the server seed does not open its commitment")
        deal = derive_deal(self.families, self.seed, self.game, self.seat, m["seed"])
        self.set_aside, self.hand, self.pile = deal

    def on_game_state(self, m: dict) -> None:
        for event in m["events"]:  # our own cards show as backs: we know them ourselves
            if event["type"] == "placed" and event["seat"] == self.seat:
                self.hand.remove(self.placed[event["pid"]][0])  # the card left our hand
            elif event["type"] == "drew" and event["seat"] == self.seat:  # two-player variant
                n = len(event["cards"])
                self.hand, self.pile = self.hand + self.pile[:n], self.pile[n:]
        view = m["view"]  # the server's counts must agree with ours
        assert len(view["hands"][self.seat]) == len(self.hand), "our hand is out of step"
        assert len(view["draw_piles"][self.seat]) == len(self.pile), "our pile is out of step"
        d = m.get("decision")
        if d and d["seat"] == self.seat and d["turn"] not in self.answered:
            self.answered.add(d["turn"])
            self.decide(d, view)

    def decide(self, d: dict, view: dict) -> None:
        """Answer our decision with a random legal option, echoing its turn."""
        kind, turn, choice, send = d["kind"], d["turn"], random.choice(d["options"]), self.conn.send
        if kind == "direction":
            send("direction", turn=turn, direction=choice["direction"])
        elif kind == "place":  # the option names a card back: any card of that family
            family = choice["card"][0]
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
        # kind "open": answered when its `open_request` arrives (just below)

    def opening(self, pid: int) -> dict:
        card, nonce = self.placed[pid]
        return {"pid": pid, "card": card, "nonce": nonce}

    def on_open_request(self, m: dict) -> None:
        self.conn.send("open", **self.opening(m["pid"]))

    def on_final_reveal_request(self, m: dict) -> None:
        openings = [self.opening(pid) for pid in m["pids"]]
        self.conn.send("final_reveal", seed=self.seed, openings=openings)

    def on_game_end(self, m: dict) -> int:
        print("scores:", *m["scores"], "winners:", *m["winners"])
        for v in m["verification"]:
            reason = f" ({v['reason']})" if v.get("reason") else ""
            print(f"seat {v['seat']}: {v['status']}{reason}")
        print(f"record: {m['record_id']}")
        self.conn.send("leave_room")  # we are done with this room
        mine = next(v for v in m["verification"] if v["seat"] == self.seat)
        return 0 if mine["status"] == "ok" else 1


def main() -> int:
    p = argparse.ArgumentParser(description="A minimal Oriflamme bot: plays one game.")
    p.add_argument("server", nargs="?", help="HOST:PORT")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--room", type=int, help="join the room with this id")
    where.add_argument("--create", type=int, choices=range(2, 6), metavar="PLAYERS")
    p.add_argument("--name", default="MinimalBot")
    p.add_argument("--bots", type=int, default=0, help="with --create: server bots to seat")
    p.add_argument("--self-test", action="store_true", help="check against the test vectors")
    p.add_argument("--tls", action="store_true", help="TLS, checked by the system's authorities")
    p.add_argument("--tls-fingerprint", metavar="SHA256", help="TLS, with this certificate only")
    args = p.parse_args()
    if args.self_test:
        self_test(Path(__file__).resolve().parent.parent / "docs" / "test-vectors.json")
        return 0
    if not args.server or (args.room is None and not args.create):
        p.error("give HOST:PORT and one of --room or --create")
    host, _, port = args.server.rpartition(":")
    conn = Connection(host, int(port), args.tls, args.tls_fingerprint)
    try:
        return Bot(conn, args).run()
    finally:
        conn.sock.close()


if __name__ == "__main__":
    sys.exit(main())
