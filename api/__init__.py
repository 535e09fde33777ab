"""The HTTP service (FastAPI).

Empty until the HTTP service lands; the package exists so the import rules of the
architecture can be checked from the start.
"""
