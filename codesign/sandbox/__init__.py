"""Sandboxes and workspaces: where solver commands run, and how final states become patches."""
