"""Tools for the people who work on Oriflamme online; not installed, not imported by it."""
