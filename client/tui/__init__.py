"""The terminal client: the way a person plays.

The pure modules turn the session's mirror into lines of styled text and
keys into commands, with no I/O and no prompt_toolkit: `text`, `words`,
`screen`, `choices`, and each screen's state and keys (`controller` for
the game, `lobby`, `replay_screen`; `screens` switches between the lobby
and the game). `app` is the prompt_toolkit shell around them, running on
asyncio with trio in guest mode; `driver` is the trio side every screen
shares (commands carried out, records kept); `join` (a server elsewhere)
is a program. `oriflamme play` (an embedded server and a table of bots)
is the launcher's, `oriflamme.launcher.play`: it imports the server.
"""
