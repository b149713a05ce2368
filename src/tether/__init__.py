"""tether: a governed agent backend for business systems."""

__version__ = "0.1.0"
