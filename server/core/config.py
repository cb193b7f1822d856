"""The server's settings that the core needs: timers and limits.

The room's own settings (seats, variant, edition, turn timer) come from the
host in `create_room`; these come from whoever runs the server.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_STRATEGIES = ("random", "heuristic", "ismcts")

# The abuse limits: part of no game, so the ones a server is started with
# apply, whatever its data directory kept (`oriflamme serve` has a flag for each).
LIMITS = (
    "message_rate",
    "message_burst",
    "connections_per_address",
    "connection_rate",
    "work_rate",
    "work_burst",
    "max_frame",
    "max_depth",
    "max_items",
    "chat_length",
    "chat_lines",
    "chat_window",
    "name_length",
    "room_name_length",
    "max_rooms",
    "max_sessions",
    "sessions_per_address",
    "spectators_per_room",
    "kept_games",
    "kept_games_per_address",
)

# Their ranges. The upper bounds of frames and texts are the protocol's
# (docs/PROTOCOL.md): a server may be stricter, not laxer. The lower bounds
# leave room for every message a client must send.
RANGES: dict[str, tuple[float, float]] = {
    "message_rate": (0.01, 1e9),
    "message_burst": (1, 1e9),
    "connections_per_address": (1, 1e9),
    "connection_rate": (0.01, 1e9),
    "work_rate": (0.01, 1e9),
    "work_burst": (50, 1e9),
    "max_frame": (4096, 65536),
    "max_depth": (4, 12),
    "max_items": (64, 65536),
    "chat_length": (1, 500),
    "chat_lines": (1, 1e6),
    "chat_window": (0.01, 86400),
    "name_length": (1, 32),
    "room_name_length": (1, 40),
    "max_rooms": (1, 1e6),
    "max_sessions": (1, 1e6),
    "sessions_per_address": (1, 1e6),
    "spectators_per_room": (0, 1e6),
    "kept_games": (0, 63),  # (and the game of its room: `game_list` holds 64)
    "kept_games_per_address": (0, 1e6),
}


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Timers in seconds.

    `reply_timer` bounds what a client answers by itself, without its player:
    the seed commitment, an opening demanded after an elimination, the final
    reveal. It is always on, even in a room without a turn timer, so a broken
    client cannot hold a table. `grace` is how long a seated player may be
    disconnected before the stand-in plays the seat; `session_ttl` how long a
    disconnected session lasts when it is not seated in a game being played
    (a seated player's session lasts until the game ends, at least);
    `lobby_ttl` how long one lasts that never sat or watched in a room (it
    has nothing to come back to). `history` is how many pushes each session
    keeps for a client that resumes with the `seq` it last saw, and
    `history_bytes` how many bytes of them.
    """

    server_name: str = "oriflamme/0.1"
    idle_timeout: int = 120
    reply_timer: float = 30.0
    grace: float = 60.0
    session_ttl: float = 600.0
    lobby_ttl: float = 60.0
    history: int = 512
    history_bytes: int = 256 * 1024
    max_rooms: int = 2000
    # Sessions kept at once: in all, and opened from one address. Past
    # either, the session away longest that no game holds (not seated in a
    # game being played) is let go to make room; if there is none, `hello`
    # is refused. A room's spectators: past it, the one away longest is let
    # go; if all are connected, `spectate` is refused.
    max_sessions: int = 20000
    sessions_per_address: int = 100
    spectators_per_room: int = 100
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    # Abuse limits (each refusal is a documented error): messages a
    # connection may send (a token bucket: `message_burst` at once, then
    # `message_rate` a second; the server's own bots are not limited),
    # connections open at once from one address, and new connections from
    # one address (`connections_per_address` at once, then `connection_rate`
    # a second: `admission`).
    message_rate: float = 200.0
    message_burst: int = 400
    connections_per_address: int = 64
    connection_rate: float = 10.0
    # The work one address sets going, in message costs (gateway.COSTS: a
    # game started is 50, a room made 20): `work_burst` at once, then
    # `work_rate` a second, over all its connections.
    work_rate: float = 20.0
    work_burst: int = 1000
    # What one frame from a client may hold (a client's frames are small:
    # the largest, a 5-player `final_reveal` or a chat line, is under 2 KiB
    # and nests 4 deep): bytes, nesting depth, elements in any array or map.
    max_frame: int = 65536
    max_depth: int = 12
    max_items: int = 1024
    # What people say and are called: chat lines of at most `chat_length`
    # characters, `chat_lines` of them in any `chat_window` seconds; player
    # and room names of at most `name_length` and `room_name_length`.
    chat_length: int = 500
    chat_lines: int = 10
    chat_window: float = 10.0
    name_length: int = 32
    room_name_length: int = 40
    # The games one session may step out of keeping its seat, at once
    # (`leave_room.keep_seat`), and all the sessions of one address: each
    # holds a room open while its game is played. (New settings go last:
    # an earlier version's pickle gives the fields' values in order.)
    kept_games: int = 20
    kept_games_per_address: int = 100

    def __post_init__(self) -> None:
        for name in ("reply_timer", "grace", "session_ttl", "lobby_ttl"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if self.history < 1 or self.history_bytes < 1:
            raise ValueError("history keeps at least one push")
        for name, (lo, hi) in RANGES.items():
            value = getattr(self, name)
            if not lo <= value <= hi:
                raise ValueError(f"{name} must be {lo:g} to {hi:g}, not {value:g}")
