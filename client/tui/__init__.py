"""The terminal client: the way a person plays.

The pure modules (`text`, `words`, `screen`, `choices`) turn the session's
mirror into lines of styled text and keys into decisions, with no I/O and
no prompt_toolkit; `app` is the prompt_toolkit shell around them, running
on asyncio with trio in guest mode; `play` starts an embedded server for
`oriflamme play`.
"""
