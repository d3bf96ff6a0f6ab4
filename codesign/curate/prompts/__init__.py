"""Prompt files of the curation scorer, versioned with the code (the scorer's name carries the file's hash)."""
