"""The version of the ``treasury`` package."""

__version__ = "1.3.0"
