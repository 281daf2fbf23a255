"""Derivation: equations of motion (DAE), partition, embedding, time events, workspace."""
