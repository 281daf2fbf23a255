"""fmigen: closed-loop mechanisms to exact, real-time-capable FMUs."""

__version__ = "0.1.0"
