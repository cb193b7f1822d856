"""oriflamme.server."""
