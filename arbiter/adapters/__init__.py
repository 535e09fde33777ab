"""Drop-in adapters for trainers: TRL reward functions, verl compute_score, OpenRLHF reward_func."""

#: The public modules: this package re-exports nothing, so importing it stays cheap.
__all__ = [
    "coalescer",
    "openrlhf",
    "trl",
    "verl",
    "verl_manager",
]
