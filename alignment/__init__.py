"""alignment."""
