"""The launcher: the `oriflamme` command, and what runs a server and its clients together.

Client and server are siblings: each speaks the protocol, and neither
imports the other. The launcher is the one place that imports both
(`tests/architecture/test_layers.py` holds it), and nothing of the project
imports the launcher:

- `cli`: the `oriflamme` command and its subcommands (`serve` starts the
  server with its house bots; `bot`, `rooms`, `join`, `replay` ... are
  clients);
- `play`: `oriflamme play`, a server inside the program and a table of bots;
- `house_bots`: the server's own bots (`StartBot`), clients of the server
  run inside its process, which `serve` and `play` give to the server
  (`oriflamme.server.bot_host.BotHost`);
- `inprocess`: the server's core and its clients in one process, with no
  sockets and a virtual clock (`selfplay --record`, the documentation's
  examples, the tests).
"""
