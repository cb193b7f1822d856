"""oriflamme.protocol."""
