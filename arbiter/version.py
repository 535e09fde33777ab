"""Arbiter's version (single source: packaging reads it from here)."""

__version__ = "0.1.0"
