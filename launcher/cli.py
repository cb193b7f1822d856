"""The `oriflamme` command: one entry point, one subcommand per job.

It is the launcher's (`oriflamme.launcher`), the one place that imports both
the client and the server: `serve` runs the server with its house bots,
`backup` and `export-records` read its data directory, and the others are
clients. Each subcommand imports only what it needs, so `oriflamme selfplay`
runs with the engine alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from oriflamme.client import i18n
from oriflamme.client.failures import said
from oriflamme.client.i18n import LANGUAGES, N_, _, choose

if TYPE_CHECKING:
    from oriflamme.client.tls import Trust

T = TypeVar("T")  # (what a one-request command asks for: `_shown`)


def invoked_as(argv0: str | None = None, path: str | None = None) -> tuple[str, ...]:
    """The words that run this program from where the person is, for the
    commands it tells them to type: `oriflamme` where that is on their PATH,
    else the path they ran it by (`make play` runs `.venv/bin/oriflamme`, which
    is not on the PATH), else the interpreter with `-m`.

    >>> invoked_as(".venv/bin/oriflamme", path="")
    ('.venv/bin/oriflamme',)
    >>> invoked_as("oriflamme/launcher/cli.py", path="")[1:]
    ('-m', 'oriflamme.launcher.cli')
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    if Path(argv0).name != "oriflamme":  # `python -m oriflamme.launcher.cli`
        return (sys.executable, "-m", "oriflamme.launcher.cli")
    found = shutil.which("oriflamme", path=path)
    if found is not None and os.path.exists(argv0) and os.path.samefile(found, argv0):
        return ("oriflamme",)
    return (argv0,)


def _selfplay(args: argparse.Namespace) -> int:
    from oriflamme.client.selfplay import format_report, run_selfplay

    strategies = args.strategy.split(",")
    variant = args.variant  # argparse allows only "standard" or "two-player"
    players = args.players if args.players is not None else (2 if variant == "two-player" else 4)
    try:
        report = run_selfplay(
            players,
            args.games,
            seed=args.seed,
            strategies=strategies,
            variant=variant,
            edition=args.edition,
        )
    except ValueError as e:
        print(f"oriflamme selfplay: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    if args.record:
        return _write_record(args, players, variant)
    return 0


def _write_record(args: argparse.Namespace, players: int, variant: str) -> int:
    """Play one more game the way the server referees it (its core, in this
    process, with bots that keep their own secrets), and write its record
    for `oriflamme verify`."""
    from oriflamme.launcher.inprocess import play_recorded_game

    strategies = args.strategy.split(",")
    record = play_recorded_game(
        players, variant=variant, edition=args.edition, strategies=strategies, seed=args.seed
    )
    try:
        with open(args.record, "wb") as f:
            f.write(record)
    except OSError as e:
        print(f"oriflamme selfplay: cannot write {args.record}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"wrote the record of one committed game to {args.record} ({len(record)} bytes)")
    return 0


def _verify(args: argparse.Namespace) -> int:
    """Exit 0: the game is valid; 1: it is not; 2: the file is not a readable record."""
    from oriflamme.protocol.record import MAX_RECORD_SIZE, RecordError, decode_record
    from oriflamme.protocol.verify import format_verdict, verify_record

    try:
        with open(args.record, "rb") as f:
            data = f.read(MAX_RECORD_SIZE + 1)
    except OSError as exc:
        print(f"oriflamme verify: cannot read {args.record}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        record = decode_record(data)
    except RecordError as exc:
        print(
            f"oriflamme verify: {args.record} is not a readable game record: {exc}", file=sys.stderr
        )
        return 2
    verdict = verify_record(record)
    print(format_verdict(record, verdict))
    return 0 if verdict.ok else 1


def _passphrase(args: argparse.Namespace, command: str, *, twice: bool) -> str | None:
    """The passphrase of an exported key: the first line of
    `--passphrase-file`, or typed (twice, for a new one); None if none came."""
    import getpass

    if args.passphrase_file:
        try:
            with open(args.passphrase_file, encoding="utf-8") as f:
                return f.readline().rstrip("\r\n")
        except OSError as exc:
            print(
                f"oriflamme {command}: cannot read {args.passphrase_file}: {exc.strerror}",
                file=sys.stderr,
            )
            return None
    if not sys.stdin.isatty():
        print(
            f"oriflamme {command}: no terminal to ask the passphrase: give --passphrase-file FILE",
            file=sys.stderr,
        )
        return None
    try:
        typed = getpass.getpass("Passphrase: ")
        if twice and getpass.getpass("The same again: ") != typed:
            print(f"oriflamme {command}: the two passphrases differ", file=sys.stderr)
            return None
    except (EOFError, KeyboardInterrupt):
        return None
    return typed


def _identity(args: argparse.Namespace) -> int:
    """Show the player's key (made at the first use), or move it: export it
    under a passphrase, import one exported elsewhere."""
    from oriflamme.client.config import default_config_file, read_name
    from oriflamme.client.identity import (
        IdentityError,
        default_identity_file,
        describe,
        export,
        import_key,
        load,
        load_or_make,
    )

    path = Path(args.file) if args.file else default_identity_file()
    command = "identity" if args.action is None else f"identity {args.action}"
    try:
        if args.action == "import":
            if args.path is None:
                print(
                    "oriflamme identity import: which file? (identity import FILE)", file=sys.stderr
                )
                return 2
            if load(path) is not None and not args.force:
                print(
                    f"oriflamme identity import: {path} holds a key already; it would be lost"
                    " (export it first), unless you give --force",
                    file=sys.stderr,
                )
                return 2
            passphrase = _passphrase(args, command, twice=False)
            if passphrase is None:
                return 2
            key = import_key(Path(args.path), passphrase, path)
            print(f"imported: {describe(key)} (kept in {path})")
            return 0
        key = load_or_make(path)
        if args.action == "export":
            if args.path is None:
                print(
                    "oriflamme identity export: where to? (identity export FILE)", file=sys.stderr
                )
                return 2
            passphrase = _passphrase(args, command, twice=True)
            if passphrase is None:
                return 2
            export(key, Path(args.path), passphrase)
            print(f"exported {describe(key)} to {args.path}, under your passphrase")
            return 0
    except (IdentityError, OSError) as exc:
        print(f"oriflamme {command}: {exc}", file=sys.stderr)
        return 2
    name = read_name(default_config_file())
    print(f"key:  {describe(key)}")
    print(f"name: {name if name is not None else '(not chosen yet: asked at the first join)'}")
    print(f"file: {path}")
    return 0


# `oriflamme serve`'s abuse limits: ServerConfig's LIMITS, each with its
# flag's type and help (with the default). ServerConfig itself is not
# imported here, to keep the launcher light; a test holds the two together.
def _positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def _positive_float(text: str) -> float:
    """An argparse type: a number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
    return value


SERVER_LIMITS: tuple[tuple[str, type, str], ...] = (
    ("message_rate", float, "messages a second one connection may send (200)"),
    ("message_burst", int, "messages one connection may send at once (400)"),
    ("connections_per_address", int, "connections open at once from one address (64)"),
    (
        "connection_rate",
        float,
        "new connections a second from one address, after --connections-per-address at once (10)",
    ),
    (
        "work_rate",
        float,
        "rooms and games one address may set going a second, in costs (a game 50, a room 20; 20)",
    ),
    ("work_burst", int, "the same, at once (1000)"),
    ("max_frame", int, "bytes in one frame from a client, 4096-65536 (65536)"),
    ("max_depth", int, "arrays and maps nested in a client's frame, 4-12 (12)"),
    ("max_items", int, "elements in any array or map of a client's frame, 64-65536 (1024)"),
    ("chat_length", int, "characters in a chat line, 1-500 (500)"),
    ("chat_lines", int, "chat lines one player may say in --chat-window seconds (10)"),
    ("chat_window", float, "seconds over which --chat-lines are counted (10)"),
    ("name_length", int, "characters in a player's name, 1-32 (32)"),
    ("room_name_length", int, "characters in a room's name, 1-40 (40)"),
    ("max_rooms", int, "rooms open at once (2000)"),
    ("max_sessions", int, "player sessions kept at once (20000)"),
    ("sessions_per_address", int, "player sessions kept at once from one address (100)"),
    ("spectators_per_room", int, "spectators in one room at once, 0: none (100)"),
    ("kept_games", int, "games one player may step out of keeping the seat, 0-63 (20)"),
    ("kept_games_per_address", int, "the same, for all the players of one address (100)"),
)


def _logging(level: str) -> None:
    import logging

    logging.basicConfig(
        level=getattr(logging, level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _check(args: argparse.Namespace) -> int:
    """`oriflamme serve --check`: is the server of these options up and
    answering? Exit 0 (and one line) if a client gets its room list within
    the timeout, 1 if not: for a container's healthcheck or a monitor."""
    from functools import partial

    import trio

    from oriflamme.client.commands import list_rooms
    from oriflamme.client.tls import Trust
    from oriflamme.server.app import default_data_dir
    from oriflamme.server.tls import certificate_fingerprint

    host = (
        "127.0.0.1" if args.host in ("0.0.0.0", "") else "::1" if args.host == "::" else args.host
    )
    trust = None
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    cert = Path(args.tls_cert) if args.tls_cert else data_dir / "tls" / "cert.pem"
    if args.tls_cert or args.tls_self_signed:
        try:
            trust = Trust(fingerprint=certificate_fingerprint(cert))
        except (OSError, ValueError) as exc:
            print(f"not ok: cannot read the certificate {cert}: {exc}")
            return 1
    try:
        rooms = trio.run(
            partial(list_rooms, host, args.port, timeout=args.check_timeout, trust=trust)
        )
    except Exception as exc:  # noqa: BLE001 -- any failure is the answer
        from oriflamme.client.tls import speaks_tls

        if trust is None and speaks_tls(exc):
            print(
                f"not ok: {host} port {args.port}: this port speaks TLS: give --check the"
                " server's TLS options (--tls-self-signed, or --tls-cert FILE)"
            )
            return 1
        print(f"not ok: {host} port {args.port}: {exc or type(exc).__name__}")
        return 1
    playing = sum(r.state == "playing" for r in rooms.rooms)
    print(f"ok: {host} port {args.port} answers; {len(rooms.rooms)} rooms, {playing} playing")
    return 0


def _serve(args: argparse.Namespace) -> int:
    import trio

    if args.check:
        return _check(args)
    from oriflamme.launcher.house_bots import HouseBots
    from oriflamme.server.app import ServeOptions, default_data_dir, serve
    from oriflamme.server.persistence import ReplayDisagreed
    from oriflamme.server.store import StoreError, StoreUnreachable

    _logging(args.log_level)
    from dataclasses import replace

    from oriflamme.server.core import ServerConfig

    limits = {
        name: getattr(args, name)
        for name, __, ___ in SERVER_LIMITS
        if getattr(args, name) is not None
    }
    try:
        config = replace(ServerConfig(), **limits)
    except ValueError as exc:
        print(f"oriflamme serve: {exc}", file=sys.stderr)
        return 2
    options = ServeOptions(
        host=args.host,
        port=args.port,
        config=config,
        data_dir=Path(args.data_dir) if args.data_dir else default_data_dir(),
        discovery=not args.no_discovery,
        tls_cert=Path(args.tls_cert) if args.tls_cert else None,
        tls_key=Path(args.tls_key) if args.tls_key else None,
        tls_self_signed=args.tls_self_signed,
    )
    if args.tls_key and not args.tls_cert:
        print("oriflamme serve: --tls-key needs --tls-cert", file=sys.stderr)
        return 2
    if args.name:
        options.name = args.name
    if args.snapshot_every is not None:
        options.snapshot_every = args.snapshot_every
    options.keep_records = args.keep_records
    options.strict_replay = args.strict_replay
    options.allow_anonymous = args.allow_anonymous
    options.database = args.database or None
    try:
        trio.run(serve, options, HouseBots.of_data_dir(options.data_dir))
    except KeyboardInterrupt:  # Ctrl-C before the server took over its signals
        print("oriflamme serve: interrupted while starting; nothing was served", file=sys.stderr)
        return 130
    except ReplayDisagreed as exc:
        print(f"oriflamme serve: {exc}", file=sys.stderr)
        return 3
    except StoreUnreachable as exc:  # (it may pass: a supervisor may start it again)
        print(f"oriflamme serve: {exc}", file=sys.stderr)
        return 4
    except StoreError as exc:
        print(f"oriflamme serve: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"oriflamme serve: cannot serve on {args.host} port {args.port}: {exc.strerror}",
            file=sys.stderr,
        )
        return 2
    # A clean stop: everything is stored, the database closed, the records
    # written. Leave now, rather than let the interpreter free a busy
    # server's millions of objects one by one (10 s and more after a load of
    # 19,000 connections, while a supervisor waits to restart it).
    import logging

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _address(args: argparse.Namespace, command: str) -> tuple[str, int] | None:
    from oriflamme.client.commands import parse_address

    try:
        return parse_address(args.server)
    except ValueError as exc:
        print(f"oriflamme {command}: {exc}", file=sys.stderr)
        return None


def _trust(args: argparse.Namespace, command: str) -> Trust | None | Literal[False]:
    """The TLS trust the options ask for: None without TLS, False when an
    option is wrong (said on stderr)."""
    from oriflamme.client.tls import Trust, default_known_servers
    from oriflamme.protocol.fingerprints import parse_fingerprint

    if not (args.tls or args.tls_fingerprint or args.tls_ca):
        return None
    pinned = None
    if args.tls_fingerprint:
        try:
            pinned = parse_fingerprint(args.tls_fingerprint)
        except ValueError as exc:
            print(f"oriflamme {command}: {exc}", file=sys.stderr)
            return False

    def first_use(server: str, shown: str) -> None:
        said = _(
            "{server} has a certificate no authority vouches for; trusting it from now on"
            " (first use). Its SHA-256 fingerprint:\n  {fingerprint}\n(compare it with the one"
            " in the server's log; kept in {path})"
        )
        text = said.format(server=server, fingerprint=shown, path=known)
        print(f"oriflamme {command}: {text}", file=sys.stderr)

    cafile = Path(args.tls_ca) if args.tls_ca else None
    if cafile is not None:
        import ssl

        try:  # (read at every connection: a file that cannot be used is said once, here)
            ssl.create_default_context(cafile=cafile)
        except OSError as exc:  # (ssl.SSLError included)
            print(f"oriflamme {command}: --tls-ca {cafile}: cannot use it: {exc}", file=sys.stderr)
            return False
    known = default_known_servers()
    return Trust(
        fingerprint=pinned,
        cafile=cafile,
        known_servers=known,
        on_first_use=first_use,
    )


def _where(args: argparse.Namespace, command: str) -> tuple[str, int, Trust | None] | None:
    """The server the options name (`args.server`) and how to trust it;
    None when an option is wrong (said on stderr)."""
    address = _address(args, command)
    trust = _trust(args, command)
    if address is None or trust is False:
        return None
    return (*address, trust)


def _why(exc: BaseException, trust: Trust | None) -> str:
    """Why a command that connected to a server failed, for a person: that
    the port speaks TLS when it was reached without (`tls.speaks_tls`)."""
    from oriflamme.client.tls import ADD_TLS, speaks_tls

    return _(ADD_TLS) if trust is None and speaks_tls(exc) else said(exc)


def _add_tls_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tls",
        action="store_true",
        help=_(
            "connect with TLS: the certificate is checked against the system's authorities,"
            " or trusted on first use (~/.config/oriflamme/known_servers)"
        ),
    )
    parser.add_argument(
        "--tls-fingerprint",
        metavar="SHA256",
        help=_("TLS, and the server's certificate must be this one"),
    )
    parser.add_argument("--tls-ca", metavar="FILE", help=_("TLS, checked against this authority"))


def _turn_timer(text: str) -> int:
    """A turn timer as rooms take it (`room_settings.turn_timer`)."""
    try:
        seconds = int(text)
    except ValueError:
        said = _("{value} is not a number of seconds").format(value=repr(text))
        raise argparse.ArgumentTypeError(said) from None
    if not 10 <= seconds <= 3600:
        said = _("{seconds}: a turn timer is 10 to 3600 seconds").format(seconds=seconds)
        raise argparse.ArgumentTypeError(said)
    return seconds


def _shown(
    args: argparse.Namespace,
    command: str,
    what: str,
    ask: Callable[..., Awaitable[T]],
    show: Callable[[T], str],
) -> int:
    """`oriflamme rooms` and `leaderboard`: one request's answer (`ask(host,
    port, trust=...)`), printed as `show` writes it; a failure said plainly."""
    from functools import partial

    import trio

    where = _where(args, command)
    if where is None:
        return 2
    host, port, trust = where
    try:
        answer = trio.run(partial(ask, host, port, trust=trust))
    except (OSError, trio.TooSlowError, Exception) as exc:  # noqa: BLE001 -- any failure is said plainly
        print(
            f"oriflamme {command}: cannot get the {what} of {args.server}: {_why(exc, trust)}",
            file=sys.stderr,
        )
        return 1
    print(show(answer))
    return 0


def _rooms(args: argparse.Namespace) -> int:
    from oriflamme.client.commands import format_rooms, list_rooms

    return _shown(args, "rooms", "rooms", list_rooms, format_rooms)


def _leaderboard(args: argparse.Namespace) -> int:
    from oriflamme.client.commands import format_ratings, leaderboard

    return _shown(args, "leaderboard", "ratings", leaderboard, format_ratings)


def _record(args: argparse.Namespace) -> int:
    from functools import partial

    import trio

    from oriflamme.client.commands import download_record
    from oriflamme.client.session import RequestRefused

    where = _where(args, "record")
    if where is None:
        return 2
    host, port, trust = where
    try:
        data = trio.run(partial(download_record, host, port, args.record_id, trust=trust))
    except RequestRefused as exc:
        print(f"oriflamme record: {exc.error.message}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 -- said plainly, no traceback
        print(
            f"oriflamme record: cannot download it from {args.server}: {_why(exc, trust)}",
            file=sys.stderr,
        )
        return 1
    out = Path(args.output or f"{args.record_id}.oriflamme")
    try:
        out.write_bytes(data)
    except OSError as exc:
        print(f"oriflamme record: cannot write {out}: {exc.strerror}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({len(data)} bytes); check it with: oriflamme verify {out}")
    return 0


def _bot(args: argparse.Namespace) -> int:
    from functools import partial

    import trio

    from oriflamme.client.bots import parse_think
    from oriflamme.client.commands import GameResult, format_result, run_bot

    try:
        think = parse_think(args.think)
    except ValueError as exc:
        print(f"oriflamme bot: --think: {exc}", file=sys.stderr)
        return 2
    _logging(args.log_level)
    where = _where(args, "bot")
    if where is None:
        return 2
    host, port, trust = where
    key = None
    if args.identity:
        from oriflamme.client.identity import IdentityError, load_or_make

        try:
            key = load_or_make(Path(args.identity))
        except (IdentityError, OSError) as exc:
            print(f"oriflamme bot: --identity: {exc}", file=sys.stderr)
            return 2

    def told(result: GameResult) -> None:
        print(format_result(result), flush=True)

    try:
        played = trio.run(
            partial(
                run_bot,
                host,
                port,
                room=args.room,
                strategy=args.strategy,
                think=think,
                games=args.games,
                name=args.name,
                players=args.players,
                turn_timer=args.turn_timer,
                state_dir=Path(args.state_dir) if args.state_dir else None,
                trust=trust,
                on_game=told,
                key=key,
            )
        )
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 -- a bot says why it stopped, no traceback
        print(f"oriflamme bot: stopped: {_why(exc, trust)}", file=sys.stderr)
        return 1
    print(f"{played} game(s) played")
    return 0


def _play(args: argparse.Namespace) -> int:
    from functools import partial

    from oriflamme.client.secret_store import default_state_dir
    from oriflamme.client.state import ClientState
    from oriflamme.client.tui.app import ProgramFailed, run
    from oriflamme.client.tui.screens import Screens
    from oriflamme.launcher.play import PlayOptions, play_program

    if not 1 <= args.bots <= 4:
        print("oriflamme play: " + _("--bots must be 1-4 (tables seat 2-5)"), file=sys.stderr)
        return 2
    if not _need_terminal("play"):
        return 2
    state_dir = Path(args.state_dir) if args.state_dir else default_state_dir()
    if not _terminal_logging("play", state_dir):
        return 2
    name = _player_name(args.name, "play")
    if name is None:
        return 130
    options = PlayOptions(
        bots=args.bots,
        name=name,
        level=args.level,
        turn_timer=args.turn_timer,
        state_dir=state_dir,
        # `make play` says so (it runs this with no options): the table
        # comes back with what the person typed.
        program=("make",) if os.environ.get("ORIFLAMME_LAUNCHER") == "make" else invoked_as(),
    )
    controller = Screens(ClientState(), lambda command: None, lobby=False)
    try:
        code = run(partial(play_program, options=options), controller, bell=not args.no_bell)
    except ProgramFailed as exc:
        print("oriflamme play: " + _("stopped: {why}").format(why=exc), file=sys.stderr)
        print(_("(the log is in {path})").format(path=state_dir / "play.log"), file=sys.stderr)
        return 1
    game = controller.state.game
    if controller.game.resigned:
        print(controller.game.resigned)
    elif game is not None and game.end is None:
        print(_(SEAT_KEPT).format(command=options.again()))
    return code


# What `play` and `join` say when a player quits a game not over.
SEAT_KEPT = N_("Your seat is kept: run `{command}` again to finish the game.")


def _terminal_logging(command: str, state_dir: Path) -> bool:
    """The screen is the terminal's: the log goes to a file in `state_dir`."""
    import logging

    try:
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        handler: logging.Handler = logging.FileHandler(state_dir / f"{command}.log")
    except OSError as exc:
        said = _("cannot use {path}: {why}").format(path=state_dir, why=exc.strerror)
        print(f"oriflamme {command}: {said}", file=sys.stderr)
        return False
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    return True


def _need_terminal(command: str) -> bool:
    if sys.stdin.isatty() and sys.stdout.isatty():
        return True
    print(f"oriflamme {command}: " + _("needs a terminal (stdin and stdout)"), file=sys.stderr)
    return False


def _player_name(given: str | None, command: str) -> str | None:
    """The name the other players see: `given` (--name), else the one kept
    in the user's config, else asked once (the login name if none is
    typed) and kept there. None: Ctrl-C at the question."""
    from oriflamme.client.config import clean_name, default_config_file, read_name, write_name

    if given:
        return given
    path = default_config_file()
    kept = read_name(path)
    if kept is not None:
        return kept
    login = _default_name()
    try:
        typed = input(
            _("Your name at the table, as the other players see it [{name}]:").format(name=login)
            + " "
        )
    except EOFError:
        typed = ""
    except KeyboardInterrupt:
        print()
        return None
    name = clean_name(typed) or login
    try:
        write_name(path, name)
    except OSError as exc:
        said = _("cannot keep your name in {path} ({why}): it is asked again next time")
        print(f"oriflamme {command}: " + said.format(path=path, why=exc.strerror), file=sys.stderr)
    else:
        print(_("Kept in {path}: edit it there, or give --name for one game.").format(path=path))
    return name


def _default_name() -> str:
    import getpass

    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = ""
    name = "".join(c for c in name if c.isprintable())[:32]
    return name or "Player"


def _choose_server() -> tuple[str, int, bool, bool] | None:
    """A server heard on the local network: the only one, or the one chosen."""
    import trio

    from oriflamme.client.discovery import find_servers

    print(_("Looking for servers on the local network…"))
    found = trio.run(find_servers)
    if not found:
        join = shlex.join([*invoked_as(), "join"])
        said = _("No server answered on the local network. Give its address: {command}")
        print(said.format(command=f"{join} HOST[:PORT]"), file=sys.stderr)
        return None
    if len(found) == 1:
        return found[0].host, found[0].port, True, found[0].tls
    for i, server in enumerate(found, start=1):
        tls = ", TLS" if server.tls else ""
        print(f"  {i}. {server.name}  ({server.host}:{server.port}{tls})")
    while True:
        try:
            answer = input(_("Which server (1-{last})?").format(last=len(found)) + " ").strip()
        except (EOFError, KeyboardInterrupt):
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(found):
            chosen = found[int(answer) - 1]
            return chosen.host, chosen.port, True, chosen.tls


def _join(args: argparse.Namespace) -> int:
    from functools import partial

    from oriflamme.client.identity import ServerKeys
    from oriflamme.client.secret_store import default_state_dir
    from oriflamme.client.state import ClientState
    from oriflamme.client.tui.app import ProgramFailed, run
    from oriflamme.client.tui.join import JoinOptions, join_program
    from oriflamme.client.tui.screens import Screens

    if not _need_terminal("join"):
        return 2
    if args.server:
        address = _address(args, "join")
        if address is None:
            return 2
        host, port = address
        found = False
    else:
        chosen = _choose_server()
        if chosen is None:
            return 1
        host, port, found, tls = chosen
        args.tls = args.tls or tls  # the beacon says the port serves TLS
    state_dir = Path(args.state_dir) if args.state_dir else default_state_dir()
    if not _terminal_logging("join", state_dir):
        return 2
    name = _player_name(args.name, "join")
    if name is None:
        return 130
    key = None
    if not args.anonymous:
        from oriflamme.client.identity import IdentityError, default_identity_file, load_or_make

        try:
            key = load_or_make(Path(args.identity) if args.identity else default_identity_file())
        except (IdentityError, OSError) as exc:
            print("oriflamme join: " + _("your key: {why}").format(why=exc), file=sys.stderr)
            return 2
    trust = _trust(args, "join")
    if trust is False:
        return 2
    if trust is not None:
        import trio

        from oriflamme.client.tls import UntrustedServer, probe

        # Before the screen is the game's: trusted on first use, say so here.
        try:
            trio.run(probe, host, port, trust)
        except UntrustedServer as exc:
            print(f"oriflamme join: {exc}", file=sys.stderr)
            return 1
        except (OSError, trio.TooSlowError) as exc:
            said = _("cannot reach {server} with TLS: {why}").format(
                server=f"{host}:{port}", why=exc
            )
            print(f"oriflamme join: {said}", file=sys.stderr)
            return 1
    options = JoinOptions(
        host=host,
        port=port,
        name=name,
        state_dir=state_dir,
        found=found,
        trust=trust,
        typed=_join_again(args, host, port),
        program=invoked_as(),
        key=key,
        server_keys=None if key is None else ServerKeys(),
        rename=args.name is not None,
    )
    screens = Screens(ClientState(), lambda command: None, name=name)
    try:
        code = run(partial(join_program, options=options), screens, bell=not args.no_bell)
    except ProgramFailed as exc:
        print(f"oriflamme join: {exc}", file=sys.stderr)
        return 1
    game = screens.state.game
    if game is not None and game.end is None:
        print(_(SEAT_KEPT).format(command=options.again()))
    return code


def _join_again(args: argparse.Namespace, host: str, port: int) -> tuple[str, ...]:
    """What follows `join` in the command that comes back to this server: the
    server as typed (as found, when it was found on the network) and the
    options that name the same session and trust."""
    typed = [args.server or (f"[{host}]:{port}" if ":" in host else f"{host}:{port}")]
    if args.state_dir:
        typed += ["--state-dir", args.state_dir]
    if args.identity:
        typed += ["--identity", args.identity]
    if args.anonymous:
        typed += ["--anonymous"]
    if args.tls:
        typed += ["--tls"]
    if args.tls_fingerprint:
        typed += ["--tls-fingerprint", args.tls_fingerprint]
    if args.tls_ca:
        typed += ["--tls-ca", args.tls_ca]
    return tuple(typed)


def _replay(args: argparse.Namespace) -> int:
    from oriflamme.client.replay import ReplayError, replay_steps
    from oriflamme.client.tui.app import ascii_wanted, build_application, colour_wanted
    from oriflamme.client.tui.replay_screen import ReplayController
    from oriflamme.protocol.record import MAX_RECORD_SIZE, RecordError, decode_record
    from oriflamme.protocol.verify import verify_record

    if not _need_terminal("replay"):
        return 2
    try:
        with open(args.record, "rb") as f:
            data = f.read(MAX_RECORD_SIZE + 1)
        record = decode_record(data)
        steps = replay_steps(record)
    except OSError as exc:
        said = _("cannot read {path}: {why}").format(path=args.record, why=exc.strerror)
        print(f"oriflamme replay: {said}", file=sys.stderr)
        return 2
    except (RecordError, ReplayError) as exc:
        said = _("{path} cannot be replayed: {why}").format(path=args.record, why=exc)
        print(f"oriflamme replay: {said}", file=sys.stderr)
        return 2
    controller = ReplayController(record, steps, verify_record(record), Path(args.record).name)
    app = build_application(controller, colour=colour_wanted(), ascii_only=ascii_wanted())
    controller.on_quit = lambda: app.exit(result=0)
    app.run()
    return 0


def _backup(args: argparse.Namespace) -> int:
    from oriflamme.server.backup import backup
    from oriflamme.server.store import StoreError

    try:
        copied = backup(Path(args.data_dir), Path(args.destination))
    except StoreError as exc:
        print(f"oriflamme backup: {exc}", file=sys.stderr)
        return 2
    print(f"backed up {args.data_dir} to {args.destination}: {', '.join(copied)}")
    return 0


def _export_records(args: argparse.Namespace) -> int:
    from oriflamme.server.persistence import DATABASE_FILE
    from oriflamme.server.records import export_records
    from oriflamme.server.store import StoreError

    database: Path | str = Path(args.data_dir) / DATABASE_FILE
    if args.database:
        database = args.database
    elif not Path(database).exists():
        print(
            f"oriflamme export-records: {args.data_dir} holds no server data"
            f" ({DATABASE_FILE} is missing)",
            file=sys.stderr,
        )
        return 2
    try:
        count = export_records(database, Path(args.destination))
    except (StoreError, OSError) as exc:
        print(f"oriflamme export-records: {exc}", file=sys.stderr)
        return 2
    print(f"{count} records in {args.destination}; check one with: oriflamme verify FILE")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="oriflamme", description="Oriflamme played across machines."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    sp = sub.add_parser(
        "selfplay",
        help="play games between built-in players with the engine alone and print statistics",
    )
    sp.add_argument("--players", type=int, default=None, help="3-5 (2 with --variant two-player)")
    sp.add_argument("--games", type=int, default=100)
    sp.add_argument("--seed", type=int, default=None, help="make the run reproducible")
    sp.add_argument(
        "--strategy",
        default="random",
        help="random, heuristic, ismcts, or a comma-separated list assigned to seats in turn "
        "(e.g. heuristic,random)",
    )
    sp.add_argument("--variant", choices=["standard", "two-player"], default="standard")
    sp.add_argument("--edition", choices=["revised", "first"], default="revised")
    sp.add_argument("--json", action="store_true", help="print the report as JSON")
    sp.add_argument(
        "--record",
        metavar="FILE",
        help="also play one game through the server's core (in this process), seats keeping "
        "their own secrets as over the network, and write its game record to FILE",
    )
    sp.set_defaults(func=_selfplay)

    vp = sub.add_parser(
        "verify",
        help="re-check a finished game's record offline (commitments, seeds, deal, replay)",
    )
    vp.add_argument("record", help="the game record file (msgpack)")
    vp.set_defaults(func=_verify)

    ip = sub.add_parser(
        "identity",
        help="your player key: show it (made at the first use), export it, import it",
    )
    ip.add_argument("action", nargs="?", choices=["export", "import"], help="none: show the key")
    ip.add_argument("path", metavar="FILE", nargs="?", help="the exported key's file")
    ip.add_argument("--file", help="the key's file (default: in your XDG config directory)")
    ip.add_argument(
        "--passphrase-file", help="read the export's passphrase from this file's first line"
    )
    ip.add_argument("--force", action="store_true", help="import: replace the key kept")
    ip.set_defaults(func=_identity)

    levels = ["debug", "info", "warning", "error"]
    sv = sub.add_parser("serve", help="run a server: rooms and games for clients on the network")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: the LAN)")
    sv.add_argument("--port", type=int, default=7531, help="0: any free port (default 7531)")
    sv.add_argument(
        "--data-dir", help="where records and data go (default: the XDG state directory)"
    )
    sv.add_argument("--log-level", choices=levels, default="info")
    sv.add_argument(
        "--check",
        action="store_true",
        help="do not serve: check that the server of these options answers (exit 0) or not (1),"
        " for a healthcheck",
    )
    sv.add_argument(
        "--check-timeout", type=float, default=5.0, help="seconds --check waits (default 5)"
    )
    sv.add_argument(
        "--no-discovery",
        action="store_true",
        help="do not announce the server on the local network (UDP port 7532)",
    )
    sv.add_argument("--name", help="the server's name on the local network (default: host name)")
    sv.add_argument(
        "--snapshot-every",
        type=_positive_int,
        default=None,
        metavar="N",
        help="the journal's weight between two takings of the lobby's facts: its entries, and 12 for each room they touch (default 6,000; docs/SERVER.md)",
    )
    sv.add_argument(
        "--keep-records",
        type=_positive_float,
        default=None,
        metavar="DAYS",
        help="delete finished games' records older than DAYS (default: keep them all;"
        " docs/SERVER.md)",
    )
    sv.add_argument(
        "--allow-anonymous",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="admit players without a key (the default; --no-allow-anonymous admits only"
        " players with one: docs/PROTOCOL.md, 'Keys and the handshake')",
    )
    sv.add_argument(
        "--strict-replay",
        action="store_true",
        help="do not start (exit status 3) if replaying the journal disagrees with a game in"
        " progress, rather than keep that game out of play (docs/SERVER.md)",
    )
    sv.add_argument(
        "--database",
        metavar="URL",
        default=os.environ.get("ORIFLAMME_DATABASE"),
        help="keep the state in this PostgreSQL database, postgresql://USER@HOST/DB (its"
        " password in PGPASSWORD or ~/.pgpass; default: $ORIFLAMME_DATABASE, else the SQLite"
        " file in the data directory; docs/SERVER.md)",
    )
    limits = sv.add_argument_group("abuse limits (docs/SERVER.md)")
    for name, kind, help_text in SERVER_LIMITS:
        limits.add_argument("--" + name.replace("_", "-"), type=kind, metavar="N", help=help_text)
    sv.add_argument("--tls-cert", metavar="FILE", help="serve TLS with this certificate (PEM)")
    sv.add_argument(
        "--tls-key", metavar="FILE", help="its private key (PEM; default: in the certificate file)"
    )
    sv.add_argument(
        "--tls-self-signed",
        action="store_true",
        help="serve TLS with a self-signed certificate made once and kept in the data directory"
        " (its fingerprint is logged)",
    )
    sv.set_defaults(func=_serve)

    bk = sub.add_parser(
        "backup", help="copy a server's data directory while it runs (SQLite online backup)"
    )
    bk.add_argument("data_dir", metavar="DATA_DIR", help="the server's data directory")
    bk.add_argument("destination", metavar="DEST", help="a new directory for the copy")
    bk.set_defaults(func=_backup)

    ep = sub.add_parser(
        "export-records",
        help="write the finished games' records a server keeps as files, for oriflamme verify",
    )
    ep.add_argument("data_dir", metavar="DATA_DIR", help="the server's data directory")
    ep.add_argument("destination", metavar="DEST", help="the directory for the record files")
    ep.add_argument(
        "--database",
        metavar="URL",
        default=os.environ.get("ORIFLAMME_DATABASE"),
        help="the server's PostgreSQL database, if it keeps its state there (default:"
        " $ORIFLAMME_DATABASE, else the SQLite file in DATA_DIR)",
    )
    ep.set_defaults(func=_export_records)

    rp = sub.add_parser("rooms", help="list a server's rooms")
    rp.add_argument("server", metavar="HOST[:PORT]")
    _add_tls_options(rp)
    rp.set_defaults(func=_rooms)

    lp = sub.add_parser("leaderboard", help="list a server's highest rated players")
    lp.add_argument("server", metavar="HOST[:PORT]")
    _add_tls_options(lp)
    lp.set_defaults(func=_leaderboard)

    dp = sub.add_parser("record", help="download a finished game's record from a server")
    dp.add_argument("server", metavar="HOST[:PORT]")
    dp.add_argument("record_id", metavar="ID", help="the game's record id (game_end, record_list)")
    dp.add_argument(
        "-o", "--output", metavar="FILE", help="where to write it (default: ID.oriflamme)"
    )
    _add_tls_options(dp)
    dp.set_defaults(func=_record)

    bp = sub.add_parser("bot", help="run a bot that plays at a server's table")
    bp.add_argument("server", metavar="HOST[:PORT]")
    bp.add_argument("--room", required=True, help="the room's name (created if no such room waits)")
    bp.add_argument("--strategy", choices=["random", "heuristic", "ismcts"], default="heuristic")
    bp.add_argument(
        "--think",
        metavar="MS|Ni",
        help="ismcts: its budget a decision, milliseconds (default 200) or iterations (500i)",
    )
    bp.add_argument("--games", type=int, default=1, help="how many games to play")
    bp.add_argument("--name", help="the bot's name in the room")
    bp.add_argument(
        "--players",
        type=int,
        choices=range(2, 6),
        default=3,
        metavar="2-5",
        help="seats, if the bot creates the room (default 3)",
    )
    bp.add_argument(
        "--turn-timer",
        type=_turn_timer,
        metavar="SECONDS",
        help="seconds a decision (10-3600), if the bot creates the room",
    )
    bp.add_argument("--state-dir", help="where the bot keeps its secrets (default: in memory)")
    bp.add_argument(
        "--identity",
        metavar="FILE",
        help="the bot's key file, made if missing (default: none, the bot plays without a key)",
    )
    bp.add_argument("--log-level", choices=levels, default="warning")
    _add_tls_options(bp)
    bp.set_defaults(func=_bot)

    pp = sub.add_parser(
        "play", help=_("play a game against bots in this terminal (a server runs inside)")
    )
    pp.add_argument("--bots", type=int, default=2, help=_("bot opponents, 1-4 (default 2)"))
    pp.add_argument(
        "--name",
        help=_("your name at the table (default: the one kept in your config, asked once)"),
    )
    pp.add_argument(
        "--level",
        choices=["easy", "normal", "hard"],
        default="normal",
        help=_("the bots: easy (random moves), normal (heuristic) or hard (ismcts search)"),
    )
    pp.add_argument(
        "--turn-timer",
        type=_turn_timer,
        metavar="SECONDS",
        help=_("seconds a decision, 10-3600 (default: no timer)"),
    )
    pp.add_argument("--no-bell", action="store_true", help=_("no bell when it is your turn"))
    pp.add_argument(
        "--state-dir", help=_("where your secrets, records and the game are kept (XDG state)")
    )
    _add_lang_option(pp)
    pp.set_defaults(func=_play)

    jp = sub.add_parser(
        "join", help=_("join a server's lobby in this terminal (no host: find one on the LAN)")
    )
    jp.add_argument("server", metavar="HOST[:PORT]", nargs="?", help=_("default: look on the LAN"))
    jp.add_argument(
        "--name", help=_("your name (default: the one kept in your config, asked once)")
    )
    jp.add_argument("--no-bell", action="store_true", help=_("no bell when it is your turn"))
    jp.add_argument("--state-dir", help=_("where your secrets and records are kept (XDG state)"))
    jp.add_argument(
        "--identity", metavar="FILE", help=_("your key's file (default: `oriflamme identity`'s)")
    )
    jp.add_argument(
        "--anonymous",
        action="store_true",
        help=_("play without your key (where the server allows)"),
    )
    _add_tls_options(jp)
    _add_lang_option(jp)
    jp.set_defaults(func=_join)

    rp2 = sub.add_parser(
        "replay", help=_("step through a finished game's record, every card shown")
    )
    rp2.add_argument("record", help=_("the game record file (.oriflamme)"))
    _add_lang_option(rp2)
    rp2.set_defaults(func=_replay)

    lg = sub.add_parser(
        "language",
        help=_("show the language the terminal client speaks, or keep one in your config"),
    )
    lg.add_argument(
        "choice",
        nargs="?",
        choices=[*LANGUAGES, "auto"],
        help=_("en, fr or pl: kept in your config; auto: follow the locale again"),
    )
    lg.set_defaults(func=_language)
    return parser


def _add_lang_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lang",
        choices=list(LANGUAGES),
        help=_(
            "the language of the screens, for this run (default: `oriflamme language`'s,"
            " else the locale's: LANGUAGE, LC_ALL, LC_MESSAGES, LANG)"
        ),
    )


def _lang_flag(argv: Sequence[str]) -> str | None:
    """The `--lang` of a command line, read before it is parsed (the
    language is chosen before any message is made), as argparse reads it:
    `--lang fr`, `--lang=fr`, or shortened to `--la fr` (`--l` could be
    `--level`).

    >>> _lang_flag(["play", "--la", "pl"]), _lang_flag(["join", "--lang=fr"])
    ('pl', 'fr')
    """
    for i, arg in enumerate(argv):
        name, equals, value = arg.partition("=")
        if len(name) >= 4 and "--lang".startswith(name):
            if equals:
                return value
            return argv[i + 1] if i + 1 < len(argv) else None
    return None


# argparse's own words that a player meets (the usage, the help's headings,
# a mistake typed), marked for the catalogs: `_speak` points argparse's
# gettext at ours, so that `oriflamme play --help` is all in one language.
# (A string a later Python changes is said in English; nothing breaks.)
ARGPARSE_WORDS = (
    N_("usage: "),
    N_("positional arguments"),
    N_("options"),
    N_("show this help message and exit"),
    N_("%(prog)s: error: %(message)s\n"),
    N_("argument %(argument_name)s: %(message)s"),
    N_("invalid choice: %(value)r (choose from %(choices)s)"),
    N_("invalid %(type)s value: %(value)r"),
    N_("the following arguments are required: %s"),
    N_("unrecognized arguments: %s"),
    N_("expected one argument"),
    N_("ambiguous option: %(option)s could match %(matches)s"),
)


def _speak(argv: Sequence[str]) -> tuple[str, str]:
    """Choose the language and use it (argparse's words too); what chose it.
    A catalog that is missing is said on stderr, and English spoken."""
    from oriflamme.client.catalogs import install
    from oriflamme.client.config import default_config_file, read_setting

    setting = read_setting(default_config_file(), "lang")
    language, why = choose(_lang_flag(argv), setting, os.environ)
    problem = install(language)
    if problem:
        print(f"oriflamme: {problem}", file=sys.stderr)
    # (argparse calls the `_` it imported from gettext: its module's global)
    argparse._ = _  # type: ignore[attr-defined]
    return i18n.language(), why


def _language(args: argparse.Namespace) -> int:
    from oriflamme.client.config import default_config_file, write_setting

    path = default_config_file()
    if args.choice is not None:
        try:
            write_setting(path, "lang", None if args.choice == "auto" else args.choice)
        except OSError as e:
            said = _("cannot write {path}: {why}").format(path=path, why=e.strerror)
            print(f"oriflamme language: {said}", file=sys.stderr)
            return 1
    language, why = _speak([])  # (the setting just kept, if any; English if not built)
    print(
        _("{language} ({code}), chosen by {why}").format(
            language=LANGUAGES[language], code=language, why=_(why)
        )
    )
    return 0


# The commands a player reads, which speak the player's language (the
# others, a host's, stay English, as the server's own words do).
SPOKEN = ("play", "join", "replay", "language")


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if next((w for w in words if not w.startswith("-")), None) in SPOKEN:
        _speak(words)
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        sys.stdout.flush()
    except KeyboardInterrupt:  # Ctrl-C before a command took it over (while importing)
        print("oriflamme: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped to a command that stopped reading (`| head`): not an
        # error of ours. Python would complain again flushing stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a process killed by SIGPIPE
    return code


if __name__ == "__main__":
    sys.exit(main())
