"""Front ends: a joint description or a MuJoCo model -> the low-level Mechanism."""
