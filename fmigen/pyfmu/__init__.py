"""The Python runtime: the same model as generated pure Python, packaged with pythonfmu."""
