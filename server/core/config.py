"""The server's settings that the core needs: timers and limits.

The room's own settings (seats, variant, edition, turn timer) come from the
host in `create_room`; these come from whoever runs the server.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_STRATEGIES = ("random", "heuristic")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Timers in seconds.

    `reply_timer` bounds what a client answers by itself, without its player:
    the seed commitment, an opening demanded after an elimination, the final
    reveal. It is always on, even in a room without a turn timer, so a broken
    client cannot hold a table. `grace` is how long a seated player may be
    disconnected before the stand-in plays the seat; `session_ttl` how long a
    disconnected session lasts when it is not seated in a game being played
    (a seated player's session lasts until the game ends, at least).
    `history` is how many pushes each session keeps for a client that
    resumes with the `seq` it last saw.
    """

    server_name: str = "oriflamme/0.1"
    idle_timeout: int = 120
    reply_timer: float = 30.0
    grace: float = 60.0
    session_ttl: float = 600.0
    history: int = 512
    max_rooms: int = 2000
    max_sessions: int = 20000
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    # Abuse limits (each refusal is a documented error): messages a
    # connection may send (a token bucket: `message_burst` at once, then
    # `message_rate` a second; the server's own bots are not limited), and
    # connections open at once from one address.
    message_rate: float = 200.0
    message_burst: int = 400
    connections_per_address: int = 64

    def __post_init__(self) -> None:
        for name in ("reply_timer", "grace", "session_ttl"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if self.history < 1:
            raise ValueError("history keeps at least one push")
        if not (self.message_rate > 0 and self.message_burst >= 1):
            raise ValueError("message_rate and message_burst must be positive")
        if self.connections_per_address < 1:
            raise ValueError("connections_per_address must be at least 1")
