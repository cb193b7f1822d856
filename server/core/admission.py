"""Admission: how fast one address may open connections.

How this works
--------------
Every connection costs the server before it has said a word: an accepted
socket, a task, a `hello` to read, a session to make and, on close, to note.
A client opening and closing connections as fast as it can would spend
the server's whole time on that. So new connections from one address are
counted with a token bucket: `burst` at once (the server's limit of
connections open at once from one address), then `rate` a second. The
shell asks `admit` as soon as it accepts a socket, before anything else,
and refuses one that is not admitted at once: the fatal `server_busy`
frame `REFUSAL` (if the socket takes it), then the close, with no task, no
session and no line of the log each (`Admission.refused` counts them for a
line now and then).

Addresses whose bucket is full again are forgotten (`_forget_full`), so the
table holds only the addresses that opened connections lately.

>>> gate = Admission(rate=1.0, burst=2)
>>> [gate.admit("192.0.2.1", 0.0) for _ in range(3)]
[True, True, False]
>>> gate.admit("192.0.2.2", 0.0), gate.admit("192.0.2.1", 1.0)
(True, True)
"""

from __future__ import annotations

from oriflamme.protocol import messages as m
from oriflamme.protocol.codec import encode_frame
from oriflamme.protocol.errors import SERVER_BUSY, RemoteProtocolError

# What a connection not admitted is told, if its socket takes it at once.
REFUSAL = encode_frame(
    m.to_data(
        m.error_message(
            RemoteProtocolError(
                SERVER_BUSY,
                "too many new connections from your address: wait a little, then connect again",
                fatal=True,
            )
        )
    )
)

_KEPT = 4096  # addresses in the table before the ones with a full bucket are forgotten


class Admission:
    """The token buckets of new connections, by address; see the module docstring."""

    def __init__(self, *, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, when)
        self.refused: dict[str, int] = {}  # address -> refused since the shell last took them

    def admit(self, address: str, now: float) -> bool:
        """Whether a new connection from `address` may go on, at `now`."""
        tokens, then = self._buckets.get(address, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        if tokens < 1:
            self._buckets[address] = (tokens, now)
            self.refused[address] = self.refused.get(address, 0) + 1
            return False
        if len(self._buckets) >= _KEPT and address not in self._buckets:
            self._forget_full(now)
        self._buckets[address] = (tokens - 1, now)
        return True

    def take_refused(self) -> dict[str, int]:
        """The connections refused by address since the last call (for the log)."""
        refused, self.refused = self.refused, {}
        return refused

    def _forget_full(self, now: float) -> None:
        """Forget the addresses whose bucket has filled up again (a new
        connection from one starts with a full bucket all the same)."""
        rate, burst = self.rate, self.burst
        self._buckets = {
            address: (tokens, then)
            for address, (tokens, then) in self._buckets.items()
            if tokens + (now - then) * rate < burst
        }
