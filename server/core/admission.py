"""Admission: how fast one address may open connections, and set work going.

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

The same buckets (`Buckets`) bound the work one address sets going, over
all its connections: rooms made and games started cost more than a message
(`gateway.COSTS`), and an address past its budget is refused them for a
while (`rate_limited`), so that many connections of one client cannot
play games as fast as the server's processor goes, nor fill its disk with
their records.

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


class Buckets:
    """Token buckets by address: `burst` tokens at most, `rate` more a second.

    >>> budget = Buckets(rate=10.0, burst=50)
    >>> budget.take("192.0.2.1", 0.0, 50), budget.take("192.0.2.1", 1.0, 20)
    (0.0, 1.0)
    """

    def __init__(self, *, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, when)

    def take(self, address: str, now: float, cost: float = 1.0) -> float:
        """Take `cost` tokens of `address`'s bucket at `now`: 0.0 if taken,
        else how many seconds until there are enough (nothing is taken)."""
        tokens, then = self._buckets.get(address, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        if tokens < cost - 1e-9:
            self._buckets[address] = (tokens, now)
            return (cost - tokens) / self.rate
        if len(self._buckets) >= _KEPT and address not in self._buckets:
            self._forget_full(now)
        self._buckets[address] = (max(0.0, tokens - cost), now)
        return 0.0

    def _forget_full(self, now: float) -> None:
        """Forget the addresses whose bucket has filled up again (a new
        connection from one starts with a full bucket all the same)."""
        rate, burst = self.rate, self.burst
        self._buckets = {
            address: (tokens, then)
            for address, (tokens, then) in self._buckets.items()
            if tokens + (now - then) * rate < burst
        }


class Admission(Buckets):
    """The token buckets of new connections, by address; see the module docstring."""

    def __init__(self, *, rate: float, burst: int) -> None:
        super().__init__(rate=rate, burst=burst)
        self.refused: dict[str, int] = {}  # address -> refused since the shell last took them

    def admit(self, address: str, now: float) -> bool:
        """Whether a new connection from `address` may go on, at `now`."""
        if self.take(address, now) == 0.0:
            return True
        self.refused[address] = self.refused.get(address, 0) + 1
        return False

    def take_refused(self) -> dict[str, int]:
        """The connections refused by address since the last call (for the log)."""
        refused, self.refused = self.refused, {}
        return refused
