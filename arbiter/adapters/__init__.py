"""Drop-in adapters for trainers: TRL reward functions, verl compute_score, OpenRLHF reward_func."""
