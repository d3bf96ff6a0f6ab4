"""Solve: models, harnesses and regimes turn a task's request into a final workspace (a patch)."""
