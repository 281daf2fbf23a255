"""The build end to end (mechanism -> FMU), the derived-model cache, progress."""
