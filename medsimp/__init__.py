"""medsimp."""
