"""Verification: DAE and Cartesian references, validate, report, check, cross-check bundle."""
