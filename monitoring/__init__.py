"""Drift detectors, review sampling and agreement statistics.

Empty until drift monitoring lands; the package exists so the import rules of the
architecture can be checked from the start.
"""
