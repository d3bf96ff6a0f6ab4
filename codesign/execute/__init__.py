"""Executors run trial specs and stream records back: Ray actors by default, or this process."""
