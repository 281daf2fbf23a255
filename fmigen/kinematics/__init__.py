"""Kinematics: Gröbner bases (Singular), triangular sequences, assembly."""
