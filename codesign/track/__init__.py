"""Trackers: where a run's config, metrics, tables and telemetry go (W&B, or nowhere)."""
