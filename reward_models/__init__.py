"""Reward models and judges: dynamic batcher, transformers reward model, LLM-judge client.

Empty until the judges land; the package exists so the import rules of the
architecture can be checked from the start.
"""
