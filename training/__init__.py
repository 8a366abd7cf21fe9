"""DECLARE, its baselines and their training loop (plain typed Python, no Beam)."""
