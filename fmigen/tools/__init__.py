"""Tools: native benchmarks, parameter sweeps."""
