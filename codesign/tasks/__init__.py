"""Tasks: the suite format, loading with validation, and selection."""
