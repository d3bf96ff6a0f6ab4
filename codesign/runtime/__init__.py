"""Shared runtime for solve and evaluate: building and serving an app, and the shared headless browser."""
