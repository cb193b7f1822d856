"""oriflamme.client."""
