"""Arbiter: rewards for RL post-training, from rubrics of graders."""

from arbiter.version import __version__

__all__ = ["__version__"]
