"""graphkit's version: inner modules import it from here, never from the package root
(whose import would load the front door's table of names for a version string)."""

__version__ = "0.2.0"
