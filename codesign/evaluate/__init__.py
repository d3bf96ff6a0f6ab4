"""Evaluate: build and serve the final workspace, gather browser evidence, grade each criterion."""
